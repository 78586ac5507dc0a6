/**
 * The expiry sweeper: entries whose deleteAfterDays deadline passed (expireAt ≤ now, Unix seconds) or that a
 * bucket lifecycle rule deleted (lifecycle-sweep.ts) are deleted for real and their blobs freed (reads already treat
 * them as absent, so this only reclaims space); the S3 lifecycle rules Kodo's rules cannot express are applied
 * (s3-lifecycle-sweep.ts: tag/size/Date expirations, aborts of incomplete multipart uploads); abandoned
 * resumable-upload sessions are dropped when they expire.
 */
import type { Granary } from '../context.js';
import { nowSeconds } from '../ports/clock.js';
import { drainBlobDeletions, logDrain, releaseBlobs } from './blobs.js';
import { sweepRuleDeletions } from './lifecycle-sweep.js';
import { sweepVersionRules } from './noncurrent-sweep.js';
import { sweepS3Rules } from './s3-lifecycle-sweep.js';

/** Pending blob deletions that failed at the previous sweep, per server (logged again only when this changes). */
const lastDrainFailures = new WeakMap<Granary, number>();

/** How long a finished async-fetch task stays queryable, seconds. */
export const FETCH_TASK_RETENTION_SECONDS = 7 * 86400;

/**
 * Deletes every expired entry now (past its own expireAt: in batches of 1000; deleted by a lifecycle rule: rule range
 * by rule range, lifecycle-sweep.ts), and the resumable-upload sessions (v1 blocks, v2
 * uploads) past their lifetime with their staged bytes, and finished async-fetch tasks older than a week; retries
 * blob deletions left pending; returns how many entries were deleted.
 */
export async function sweepExpired(g: Granary): Promise<number> {
  // Deletions an earlier failure left pending are retried; a failure count that changed is logged.
  const drained = await drainBlobDeletions(g);
  if (drained.failed !== lastDrainFailures.get(g)) logDrain(g, drained);
  lastDrainFailures.set(g, drained.failed);
  for (;;) {
    const { sessions, freedBlobs } = await g.meta.sessions.deleteExpired(nowSeconds(g.clock));
    await releaseBlobs(g, freedBlobs);
    if (sessions === 0) break;
  }
  // Finished async-fetch tasks stay queryable for a week after they end.
  await g.meta.fetchTasks.prune(g.clock.nowMs() - FETCH_TASK_RETENTION_SECONDS * 1000);
  let total = (await sweepRuleDeletions(g)) + (await sweepS3Rules(g)) + (await sweepVersionRules(g));
  for (;;) {
    const { deleted, freedBlobs } = await g.meta.deleteExpired(nowSeconds(g.clock), 1000);
    await releaseBlobs(g, freedBlobs);
    total += deleted;
    if (deleted < 1000) return total;
  }
}

/** Runs `sweepExpired` every `intervalSeconds`; returns a stop function. */
export function startExpirySweeper(g: Granary, intervalSeconds: number): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepExpired(g)
      .catch((err: unknown) => g.log.error({ err }, 'expiry sweep failed'))
      .finally(() => {
        running = false;
      });
  }, intervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
