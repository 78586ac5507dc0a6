/**
 * The ConsoleSampleStore contract (src/ports/console-samples.ts, `MetaStore.consoleSamples`), run by
 * meta-store.test.ts against every MetaStore implementation: a sample round-trips with its JSON data, the first write
 * of a (kind, time, source) wins — also across two stores on one database (worker processes, cluster nodes) — lists
 * are by kind, from a time on, oldest first, and pruning deletes only the kind's older samples. Times in Unix seconds.
 */
import { describe, expect, it } from 'vitest';
import type { MetaStoreKind, MetaStoreKinds } from '../helpers/meta-stores.js';

const T0 = 1_700_000_000;

/** Registers the contract for every kind of `kinds`. */
export function consoleSamplesContract(kinds: MetaStoreKinds): void {
  describe.each(kinds.names)('ConsoleSampleStore contract: %s', (kind: MetaStoreKind) => {
    it('round-trips samples, keeps the first of a moment, lists by kind and time, prunes', async () => {
      const [a, b] = await kinds.fresh(kind, 2);
      const traffic = { kind: 'traffic' as const, atSeconds: T0, source: 'node-a', data: { requests: 3, latency: { '0.1': 2, '+Inf': 3 } } };
      expect(await a!.consoleSamples.putSample(traffic)).toBe(true);
      // The same moment again, from another process on the same database: ignored.
      expect(await b!.consoleSamples.putSample({ ...traffic, data: { requests: 99 } })).toBe(false);
      expect(await a!.consoleSamples.putSample({ ...traffic, source: 'node-b', data: { requests: 4 } })).toBe(true);
      expect(await a!.consoleSamples.putSample({ ...traffic, atSeconds: T0 + 60, data: { requests: 5 } })).toBe(true);
      expect(await a!.consoleSamples.putSample({ kind: 'storage', atSeconds: T0, source: 'photos', data: { bytes: 10, objects: 1 } })).toBe(true);

      const all = await b!.consoleSamples.listSamples('traffic', T0);
      expect(all.map((s) => [s.atSeconds, s.source, s.data.requests])).toEqual([
        [T0, 'node-a', 3],
        [T0, 'node-b', 4],
        [T0 + 60, 'node-a', 5],
      ]);
      expect(all[0]).toEqual(traffic);
      expect((await a!.consoleSamples.listSamples('traffic', T0 + 1)).map((s) => s.atSeconds)).toEqual([T0 + 60]);
      expect(await a!.consoleSamples.listSamples('storage', 0)).toEqual([{ kind: 'storage', atSeconds: T0, source: 'photos', data: { bytes: 10, objects: 1 } }]);

      expect(await a!.consoleSamples.pruneSamples('traffic', T0 + 60)).toBe(2);
      expect((await a!.consoleSamples.listSamples('traffic', 0)).map((s) => s.atSeconds)).toEqual([T0 + 60]);
      expect(await a!.consoleSamples.listSamples('storage', 0)).toHaveLength(1);
    });
  });
}
