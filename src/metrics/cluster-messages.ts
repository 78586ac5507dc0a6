/**
 * IPC messages of the metrics of workers (GRANARY_WORKERS > 1; docs/operations/metrics-and-workers.md), between a worker and
 * its primary over the node:cluster channel. Every message has a `granary` field naming its kind:
 * - worker → primary `ready`: its registry answers `collect` from now on;
 * - worker → primary `gather` (`id` the worker's own): a scrape (or the console's request rates) wants the totals;
 * - primary → every ready worker `collect` (`id` the primary's); each answers `collected` with its registry as
 *   prom-client JSON (`registry.getMetricsAsJSON()`), or `error`;
 * - primary → the asking worker `gathered` (its `id`) with every worker's JSON (`lists`), or `error`. The asking
 *   worker sums them with prom-client's `AggregatorRegistry.aggregate` (metrics/cluster-worker.ts).
 */
import type { Registry } from 'prom-client';

export const METRICS_MSG = {
  ready: 'granary:metrics:ready',
  gather: 'granary:metrics:gather',
  collect: 'granary:metrics:collect',
  collected: 'granary:metrics:collected',
  gathered: 'granary:metrics:gathered',
} as const;

/** One worker's registry as prom-client JSON. */
export type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** A metrics IPC message (fields by kind: see the module comment). */
export interface MetricsMessage {
  granary: (typeof METRICS_MSG)[keyof typeof METRICS_MSG];
  id?: number;
  metrics?: MetricsJson;
  lists?: MetricsJson[];
  error?: string;
}

/** Whether `msg` is a metrics message of `kind`. */
export function isMetricsMessage(msg: unknown, kind: MetricsMessage['granary']): msg is MetricsMessage {
  return typeof msg === 'object' && msg !== null && (msg as { granary?: unknown }).granary === kind;
}
