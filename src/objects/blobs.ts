/**
 * Blob housekeeping shared by every operation that drops references: deleting freed blobs after a commit,
 * draining deletions left by a crash, and sweeping orphaned blobs (sealed but never committed).
 */
import type { Granary } from '../context.js';

/** Deletes blobs a commit freed, then forgets their pending-deletion records. Failures are logged, not thrown. */
export async function releaseBlobs(g: Granary, blobIds: string[]): Promise<void> {
  if (blobIds.length === 0) return;
  const done: string[] = [];
  for (const id of blobIds) {
    try {
      await g.blobs.remove(id);
      done.push(id);
    } catch (err) {
      g.log.warn({ err, blobId: id }, 'could not delete a freed blob; it will be retried at start');
    }
  }
  await g.meta.forgetBlobDeletions(done);
}

/** Finishes blob deletions a crash interrupted (recorded in the same transaction that freed them). */
export async function drainBlobDeletions(g: Granary): Promise<number> {
  let total = 0;
  for (;;) {
    const batch = await g.meta.pendingBlobDeletions(500);
    if (batch.length === 0) return total;
    await releaseBlobs(g, batch);
    total += batch.length;
  }
}

/**
 * Removes blobs no entry references that are older than `olderThanMs` (sealed by an upload that crashed
 * before its metadata commit). Run in the background after start.
 */
export async function sweepOrphanBlobs(g: Granary, olderThanMs: number): Promise<number> {
  let removed = 0;
  for await (const { id, mtimeMs } of g.blobs.list()) {
    if (mtimeMs >= olderThanMs) continue;
    if (await g.meta.blobReferenced(id)) continue;
    await g.blobs.remove(id);
    removed++;
  }
  return removed;
}
