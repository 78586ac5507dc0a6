/**
 * Blob housekeeping shared by every operation that drops references: deleting freed blobs after a commit,
 * draining deletions left by a crash, and sweeping orphaned blobs (sealed but never committed).
 */
import type { Granary } from '../context.js';

/** Deletes the blobs' files and forgets their pending-deletion records; returns the failures (left pending). */
async function deleteBlobs(g: Granary, blobIds: string[]): Promise<Array<{ blobId: string; err: unknown }>> {
  const done: string[] = [];
  const failed: Array<{ blobId: string; err: unknown }> = [];
  for (const id of blobIds) {
    try {
      await g.blobs.remove(id);
      done.push(id);
    } catch (err) {
      failed.push({ blobId: id, err });
    }
  }
  if (done.length > 0) await g.meta.forgetBlobDeletions(done);
  return failed;
}

/**
 * Deletes blobs a commit freed, then forgets their pending-deletion records. Failures are logged, not thrown:
 * the records stay and the deletion is retried by `drainBlobDeletions` (at start and by the expiry sweeper).
 */
export async function releaseBlobs(g: Granary, blobIds: string[]): Promise<void> {
  if (blobIds.length === 0) return;
  for (const { blobId, err } of await deleteBlobs(g, blobIds)) {
    g.log.warn({ err, blobId }, 'could not delete a freed blob; it will be retried');
  }
}

/** What one drain pass did: deletions done, those that failed again (still pending), and the first failure. */
export interface DrainReport {
  deleted: number;
  failed: number;
  firstFailure?: { blobId: string; err: unknown };
}

/**
 * Finishes blob deletions a crash or a failed unlink left pending (recorded in the same transaction that freed
 * the blobs). One pass over the pending records in id order, 500 at a time: a deletion that keeps failing is
 * passed over (never refetched), so the pass always ends. The caller logs the report (`logDrain`).
 */
export async function drainBlobDeletions(g: Granary): Promise<DrainReport> {
  const report: DrainReport = { deleted: 0, failed: 0 };
  for (let after = ''; ; ) {
    const batch = await g.meta.pendingBlobDeletions(500, after);
    if (batch.length === 0) return report;
    const failed = await deleteBlobs(g, batch);
    if (failed[0]) report.firstFailure ??= failed[0];
    report.failed += failed.length;
    report.deleted += batch.length - failed.length;
    after = batch[batch.length - 1] as string;
  }
}

/** Logs a drain pass that left deletions pending, as one line with the first failure. */
export function logDrain(g: Granary, report: DrainReport): void {
  const first = report.firstFailure;
  if (!first) return;
  g.log.error(
    { err: first.err, blobId: first.blobId, failed: report.failed, deleted: report.deleted },
    'freed blobs that could not be deleted stay pending and are retried by the expiry sweeper',
  );
}

/**
 * Removes blobs no entry references that are older than `olderThanMs` (sealed by an upload that crashed
 * before its metadata commit). Run in the background after start; a blob that cannot be removed is passed over
 * (counted, the first failure logged) so one bad file never stops the sweep.
 */
export async function sweepOrphanBlobs(g: Granary, olderThanMs: number): Promise<number> {
  let removed = 0;
  let failed = 0;
  for await (const { id, mtimeMs } of g.blobs.list()) {
    if (mtimeMs >= olderThanMs) continue;
    if (await g.meta.blobReferenced(id)) continue;
    try {
      await g.blobs.remove(id);
      removed++;
    } catch (err) {
      if (failed++ === 0) g.log.warn({ err, blobId: id }, 'could not remove an orphaned blob; the sweep goes on');
    }
  }
  if (failed > 1) g.log.warn({ failed }, 'orphaned blobs that could not be removed');
  return removed;
}
