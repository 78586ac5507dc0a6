/**
 * Blob housekeeping. Only proven garbage is deleted automatically: blobs a commit freed (deleted after it) and the
 * deletions a crash left pending (the `blob_deletions` log, written in the transaction that freed them). Orphans
 * (blobs no metadata references) are only reported (`findOrphanBlobs`); `granary gc` removes them on an order.
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
 * The cut-off of the orphan report and of `granary gc`, ms: a blob no entry references may still be committed by
 * a live process unless it is older than the registration of the oldest live process (every blob a live process
 * sealed is younger). S3 blobs must be an hour older still: their age is the S3 server's LastModified while the
 * registrations carry the nodes' own clocks (S3_CLOCK_GRACE_MS).
 */
export async function orphanCutoffMs(g: Granary, nowMs: number): Promise<number> {
  let oldest = nowMs;
  for (const l of await g.meta.leases.list('process:')) oldest = Math.min(oldest, l.acquiredMs);
  return oldest - (g.config.blobs.kind === 's3' ? S3_CLOCK_GRACE_MS : 0);
}

/**
 * Extra age an S3 blob must have before it counts as orphaned, ms: clocks of nodes and S3 server that disagree
 * by less than this never get a blob a live node is about to commit counted (or collected).
 */
const S3_CLOCK_GRACE_MS = 3600 * 1000;

/** What one pass over the blob store found (and, with `remove`, did). */
export interface OrphanReport {
  /** Blobs older than the cut-off that no entry, upload session or pending deletion references. */
  orphans: number;
  /** The first few orphan ids (for the log and `granary gc --dry-run`). */
  sample: string[];
  /** Orphans removed (0 unless `remove`). */
  removed: number;
  /** Orphans that could not be removed (the first failure is logged). */
  failed: number;
}

/**
 * Walks the blob store for blobs no metadata references that are older than `olderThanMs` (sealed by an upload
 * whose process died before its commit, or not this deployment's at all). Without `remove` it only counts them:
 * the server never deletes a blob because the metadata does not mention it (the metadata may be the wrong one;
 * store/deployment.ts refuses the known cases). With `remove` (`granary gc`, an operator's explicit order) each is
 * deleted right after its reference check (only blobs older than every live process are looked at, so none can
 * gain a reference in between); a blob that cannot be removed is passed over (counted, the first
 * failure logged). `onOrphan` sees every orphan id (the dry run's listing).
 */
export async function findOrphanBlobs(
  g: Granary,
  olderThanMs: number,
  opts: { remove?: boolean; onOrphan?: (id: string) => void } = {},
): Promise<OrphanReport> {
  const report: OrphanReport = { orphans: 0, sample: [], removed: 0, failed: 0 };
  for await (const { id, mtimeMs } of g.blobs.list()) {
    if (mtimeMs >= olderThanMs) continue;
    if (await g.meta.blobReferenced(id)) continue;
    report.orphans++;
    if (report.sample.length < 10) report.sample.push(id);
    opts.onOrphan?.(id);
    if (!opts.remove) continue;
    try {
      await g.blobs.remove(id);
      report.removed++;
    } catch (err) {
      if (report.failed++ === 0) g.log.warn({ err, blobId: id }, 'could not remove an orphaned blob; the pass goes on');
    }
  }
  return report;
}
