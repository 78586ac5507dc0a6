/**
 * The work that must run in exactly one process of those sharing a data dir (or, in cluster mode, the PostgreSQL
 * metadata: one process of the whole cluster), each behind its lease (coordinator.ts):
 * - `reaper`: every ttl/3, takes back what dead processes left (recovery.ts) and wakes the local queue workers;
 * - `blob-sweep`: when taken, finishes blob deletions left pending, then sweeps orphaned blobs (sealed by an
 *   upload whose process died before its commit) in the background; again every ORPHAN_SWEEP_MS;
 * - `expiry-sweeper`: deleteAfterDays and lifecycle-rule deletions, expired upload sessions (objects/expiry.ts);
 * - `scrubber`: the background integrity pass (objects/scrubber.ts; its cursor survives a move to another process).
 *
 * Orphaned blobs: a blob no entry references is an orphan only if no live process may still commit it, so the
 * cut-off is the registration time of the oldest live process (every blob a live process sealed is younger).
 * Orphans of a worker killed while others kept running are therefore swept once every process older than them
 * has restarted (at the latest at the next full restart): they take space, never data. S3 blobs (shared by the
 * nodes of a cluster) must be an hour older still (S3_CLOCK_GRACE_MS): their age is measured by the S3 server's clock.
 */
import type { Granary } from '../context.js';
import { drainBlobDeletions, logDrain, sweepOrphanBlobs } from '../objects/blobs.js';
import { startExpirySweeper } from '../objects/expiry.js';
import type { Scrubber } from '../objects/scrubber.js';
import type { Clock } from '../ports/clock.js';
import type { Coordinator } from './coordinator.js';
import { recoverFromDeadProcesses } from './recovery.js';

/** How often the holder of `blob-sweep` sweeps orphaned blobs again, ms (a walk of every blob file). */
const ORPHAN_SWEEP_MS = 24 * 3600 * 1000;

/**
 * Extra age an S3 blob must have before it counts as orphaned, ms. Its age is the S3 server's LastModified while
 * the cut-off comes from the registrations of the live processes, written with their own machines' clocks (cluster
 * nodes): clocks that disagree by less than this never get a blob a live node is about to commit swept.
 */
const S3_CLOCK_GRACE_MS = 3600 * 1000;

/** The oldest registration (ms) among the live processes, this one included. */
async function oldestLiveProcessMs(g: Granary, clock: Clock): Promise<number> {
  let oldest = clock.nowMs();
  for (const l of await g.meta.leases.list('process:')) oldest = Math.min(oldest, l.acquiredMs);
  return oldest;
}

/**
 * Registers `blob-sweep` (call before listening: when this process takes it, the pending blob deletions are
 * finished before it serves, as a single process always did; the orphan sweep goes on in the background).
 */
export async function startBlobSweep(g: Granary, coord: Coordinator, clock: Clock): Promise<void> {
  await coord.singleton('blob-sweep', async () => {
    logDrain(g, await drainBlobDeletions(g));
    let stopped = false;
    const sweep = (): void => {
      void oldestLiveProcessMs(g, clock)
        .then((cutoff) => (stopped ? 0 : sweepOrphanBlobs(g, cutoff - (g.config.blobs.kind === 's3' ? S3_CLOCK_GRACE_MS : 0))))
        .then((n) => n > 0 && g.log.info({ removed: n }, 'orphaned blobs removed'))
        .catch((err: unknown) => g.log.warn({ err }, 'orphan blob sweep failed'));
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
