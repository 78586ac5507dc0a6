/**
 * The ConsoleSampleStore port: the coarse history the console's Overview draws (src/console/history.ts), kept by
 * Granary itself in the MetaStore's database so it needs no Prometheus and is the same for every worker and node.
 *
 * A sample is one row `(kind, atSeconds, source)` → `data` (a JSON object, written and read whole):
 * - kind `traffic`: one per minute per node (`source` = the node's name), the requests, errors, bytes and latency
 *   histogram counts of that minute (deltas, not totals);
 * - kind `storage`: one per hour per bucket (`source` = the bucket name), its bytes and entry count then.
 * A second write of the same `(kind, atSeconds, source)` is ignored (`putSample` answers false): processes racing to
 * record the same moment agree on the first. Times are Unix seconds given by the caller (the Clock port).
 *
 * Implementations: store/sqlite/console-samples.ts (table `console_samples`, schema.ts) and
 * store/postgres/console-samples.ts (the same table, migration 3).
 */

export type ConsoleSampleKind = 'traffic' | 'storage';

/** One stored sample. `atSeconds` Unix seconds; `data` as written. */
export interface ConsoleSample {
  kind: ConsoleSampleKind;
  atSeconds: number;
  source: string;
  data: Record<string, unknown>;
}

export interface ConsoleSampleStore {
  /** Stores a sample unless one exists for `(kind, atSeconds, source)`; true when this one was stored. */
  putSample(sample: ConsoleSample): Promise<boolean>;
  /** Samples of `kind` taken at or after `sinceSeconds`, oldest first. */
  listSamples(kind: ConsoleSampleKind, sinceSeconds: number): Promise<ConsoleSample[]>;
  /** Deletes the samples of `kind` taken before `beforeSeconds`; answers how many went. */
  pruneSamples(kind: ConsoleSampleKind, beforeSeconds: number): Promise<number>;
}
