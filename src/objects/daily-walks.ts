/**
 * Once-a-day walks of the lifecycle sweeps (s3-lifecycle-sweep.ts, noncurrent-sweep.ts): a rule's due set only
 * changes at UTC midnight, so each (bucket, rule) walk runs once per UTC day per server — again when the rule
 * changes (its id is the rule itself) or the server restarts.
 */
import type { Granary } from '../context.js';

const DAY_SEC = 86_400;

/** One sweep's record of its walks: call `run` for every walk it would make now, then `end`. */
export interface DailyWalks {
  /** Runs `walk` unless the walk `id` (bucket and rule) completed today; its count, 0 when skipped. */
  run(id: unknown[], walk: () => Promise<number>): Promise<number>;
  /** Forgets the walks not asked for since the sweep began (rules removed). */
  end(): void;
}

/** The walks of the sweep `completed` records (per server: walk id → the UTC day it last completed) at `nowSec`. */
export function dailyWalks(completed: WeakMap<Granary, Map<string, number>>, g: Granary, nowSec: number): DailyWalks {
  const today = Math.floor(nowSec / DAY_SEC);
  const done = completed.get(g) ?? new Map<string, number>();
  completed.set(g, done);
  const current = new Set<string>();
  return {
    async run(idParts, walk) {
      const id = JSON.stringify(idParts);
      current.add(id);
      if (done.get(id) === today) return 0;
      const n = await walk();
      done.set(id, today);
      return n;
    },
    end() {
      for (const id of done.keys()) if (!current.has(id)) done.delete(id);
    },
  };
}
