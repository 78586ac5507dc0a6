/**
 * The work that must run in exactly one process of those sharing a data dir (or, in cluster mode, the PostgreSQL
 * metadata: one process of the whole cluster), each behind its lease (coordinator.ts):
 * - `reaper`: every ttl/3, takes back what dead processes left (recovery.ts) and wakes the local queue workers;
 * - `blob-sweep`: when taken, finishes blob deletions left pending (proven garbage: the `blob_deletions` log), then
 *   counts orphaned blobs in the background and reports them (a warning with counts, the `granary_orphan_blobs`
 *   gauge); again every ORPHAN_SWEEP_MS. It never deletes an orphan: `granary gc` does, when told to;
 * - `expiry-sweeper`: deleteAfterDays and lifecycle-rule deletions, expired upload sessions (objects/expiry.ts);
 * - `scrubber`: the background integrity pass (objects/scrubber.ts; its cursor survives a move to another process).
 *
 * Orphaned blobs: a blob no entry references counts as an orphan only if no live process may still commit it
 * (objects/blobs.ts `orphanCutoffMs`). Orphans take space, never data.
 */
import type { Granary } from '../context.js';
import { drainBlobDeletions, findOrphanBlobs, logDrain, orphanCutoffMs } from '../objects/blobs.js';
import { startExpirySweeper } from '../objects/expiry.js';
import type { Scrubber } from '../objects/scrubber.js';
import type { Clock } from '../ports/clock.js';
import type { Coordinator } from './coordinator.js';
import { recoverFromDeadProcesses } from './recovery.js';

/** How often the holder of `blob-sweep` counts orphaned blobs again, ms (a walk of every blob). */
const ORPHAN_SWEEP_MS = 24 * 3600 * 1000;

/**
 * Registers `blob-sweep` (call before listening: when this process takes it, the pending blob deletions are
 * finished before it serves, as a single process always did; the orphan sweep goes on in the background).
 */
export async function startBlobSweep(g: Granary, coord: Coordinator, clock: Clock): Promise<void> {
  await coord.singleton('blob-sweep', async () => {
    logDrain(g, await drainBlobDeletions(g));
    let stopped = false;
    const sweep = (): void => {
      void orphanCutoffMs(g, clock.nowMs())
        .then((cutoff) => (stopped ? undefined : findOrphanBlobs(g, cutoff)))
        .then((r) => {
          if (!r) return;
          g.metrics?.orphanBlobs.set(r.orphans);
          if (r.orphans > 0) {
            g.log.warn(
              { orphans: r.orphans, sample: r.sample },
              'blobs that no metadata references were found and kept; review them with `granary gc --dry-run`, remove them with `granary gc`',
            );
          }
        })
        .catch((err: unknown) => g.log.warn({ err }, 'orphan blob count failed'));
    };
    sweep();
    const timer = setInterval(sweep, ORPHAN_SWEEP_MS);
    timer.unref();
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  });
}

/**
 * Registers the other singletons with `coord` (each starts here if its lease is free); `wake` rouses the local
 * queue workers.
 */
export async function startSingletons(
  g: Granary,
  coord: Coordinator,
  clock: Clock,
  parts: { scrubber: Scrubber; wake: () => void },
): Promise<void> {
  const every = Math.max(Math.floor(coord.ttlMs / 3), 50);

  await coord.singleton('reaper', async () => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      recoverFromDeadProcesses(g, coord.identity, clock, coord.ttlMs)
        .then((r) => {
          if (r.jobs + r.fetchTasks + r.events > 0 || r.deadOwners.length > 0) parts.wake();
        })
        .catch((err: unknown) => g.log.warn({ err }, 'workers: reaper pass failed'))
        .finally(() => {
          running = false;
        });
    }, every);
    timer.unref();
    return () => clearInterval(timer);
  });

  await coord.singleton('expiry-sweeper', async () => startExpirySweeper(g, g.config.expirySweepSeconds));

  await coord.singleton('scrubber', async () => {
    await parts.scrubber.start();
    return () => parts.scrubber.stop();
  });
}
