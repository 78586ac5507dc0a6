/**
 * A scrub pass: reads every stored blob and checks it against its checksums, so cold data that nobody reads is
 * checked too (MinIO's heal-on-read and Garage's periodic scrub are the models). Used by `granary scrub` and by
 * the background scrubber (scrubber.ts).
 *
 * Two phases, each resumable from a cursor:
 * 1. `legacy`: entries whose blob has no checksums (stored by an earlier version) are read whole and checked
 *    against their MD5/etag; a match records the checksums (upgrade in place), a mismatch marks the blob corrupt.
 * 2. `blobs`: every blob with checksums, in id order, read whole and verified block by block. Blobs already
 *    marked corrupt are reported without being read again.
 * Reads are paced to `bytesPerSecond` (unlimited when absent), each blob counting SCRUB_COST_PER_BLOB more than its
 * bytes. Findings are reported by entry (`bucket:key`);
 * a corrupt blob no entry references is a piece of an unfinished resumable upload.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Granary } from '../context.js';
import { isKodoError } from '../errors.js';
import type { BlobState } from '../ports/blob.js';
import { Pacer } from './throttle.js';
import { verifyBlob, verifyLegacyEntry } from './verified-read.js';

/** Where a pass stands: the phase and the last item done in it. */
export type ScrubCursor = { phase: 'legacy'; after?: { bucket: string; key: string } } | { phase: 'blobs'; after: string };

/** One corrupt item: the entry (absent for a piece of an unfinished upload), its blob and why. */
export interface ScrubFinding {
  bucket?: string;
  key?: string;
  blobId: string;
  reason: string;
}

/** Counts of a pass so far: blobs checked, bytes read, legacy blobs upgraded (checksums recorded). */
export interface ScrubProgress {
  blobs: number;
  bytes: number;
  upgraded: number;
}

export interface ScrubOptions {
  /** Read rate limit, bytes per second (absent or 0 = as fast as the disk goes). */
  bytesPerSecond?: number;
  /** Stops the pass (it resolves with what was done; `cursor` says where to resume). */
  signal?: AbortSignal;
  /** Resume here (default: the start of phase 1). */
  cursor?: ScrubCursor;
  /** Counts carried over from an interrupted pass. */
  progress?: ScrubProgress;
  /** Called after every page with where the pass stands (the scrubber saves it). */
  onCheckpoint?: (cursor: ScrubCursor, progress: ScrubProgress) => Promise<void>;
}

/**
 * The result: progress, whether the pass ran to its end (false when stopped by the signal), and — for a complete
 * pass — every corrupt item, found now or marked before (blobs are marked as they are found, so a pass resumed
 * after a restart still reports everything).
 */
export interface ScrubResult extends ScrubProgress {
  complete: boolean;
  cursor: ScrubCursor;
  corrupt: ScrubFinding[];
}

const PAGE = 200;
/**
 * What checking one blob costs against the rate besides its bytes (an open, a metadata read): a pass over a
 * million tiny blobs stays a background job (at 16 MiB/s, at most 256 blobs per second).
 */
export const SCRUB_COST_PER_BLOB = 64 * 1024;

/** Runs (or resumes) one pass over everything stored; see the module comment. */
export async function scrubPass(g: Granary, opts: ScrubOptions = {}): Promise<ScrubResult> {
  const progress: ScrubProgress = opts.progress ?? { blobs: 0, bytes: 0, upgraded: 0 };
  /** Why blobs found corrupt in this run were (reported with their entries at the end). */
  const reasons = new Map<string, string>();
  const pacer = opts.bytesPerSecond ? new Pacer(opts.bytesPerSecond) : undefined;
  const signal = opts.signal;
  const delay = async (bytes: number): Promise<void> => {
    const wait = pacer?.delayMs(bytes) ?? 0;
    if (wait > 1) await sleep(wait, undefined, signal ? { signal } : {});
  };
  const pace = async (chunk: Buffer): Promise<void> => {
    progress.bytes += chunk.length;
    await delay(chunk.length);
  };
  let cursor: ScrubCursor = opts.cursor ?? { phase: 'legacy' };
  const stopped = (): ScrubResult => ({ ...progress, complete: false, cursor, corrupt: [] });
  /** Runs one check; a corrupt result becomes a finding, an abort ends the pass, other failures are findings too. */
  const check = async (run: () => Promise<void>, onCorrupt: (reason: string) => void): Promise<'ok' | 'stop'> => {
    try {
      await delay(SCRUB_COST_PER_BLOB);
      await run();
      return 'ok';
    } catch (err) {
      if (signal?.aborted) return 'stop';
      // An SSE-C blob opens only with its customer key, which is never stored: not checked, not corrupt.
      if (isKodoError(err, 'objectCustomerKey')) return 'ok';
      onCorrupt(isKodoError(err) ? err.message : String((err as Error).message ?? err));
      return 'ok';
    }
  };

  if (cursor.phase === 'legacy') {
    for (;;) {
      const page = await g.meta.entriesWithoutSums(cursor.after, PAGE);
      for (const rec of page) {
        // A mismatch marks the blob: phase 2 reports it with every entry sharing it.
        const outcome = await check(
          () => verifyLegacyEntry(g, rec, pace, signal),
          (reason) => reasons.set(rec.blobId, reason),
        );
        if (outcome === 'stop') return stopped();
        progress.blobs++;
        if (!reasons.has(rec.blobId)) progress.upgraded++;
        cursor = { phase: 'legacy', after: { bucket: rec.bucket, key: rec.key } };
      }
      if (page.length < PAGE) break;
      await opts.onCheckpoint?.(cursor, progress);
    }
    cursor = { phase: 'blobs', after: '' };
    await opts.onCheckpoint?.(cursor, progress);
  }

  const corruptBlobs: Array<{ blobId: string; reason: string }> = [];
  for (;;) {
    const page: BlobState[] = await g.meta.listBlobStates(cursor.after, PAGE);
    for (const blob of page) {
      if (!blob.corrupt && blob.sums && blob.size !== undefined) {
        const { sums, size } = blob;
        const outcome = await check(
          () => verifyBlob(g, { blobId: blob.id, size, sums }, pace, signal),
          (reason) => reasons.set(blob.id, reason),
        );
        if (outcome === 'stop') return stopped();
        progress.blobs++;
      }
      cursor = { phase: 'blobs', after: blob.id };
    }
    if (page.length < PAGE) break;
    await opts.onCheckpoint?.(cursor, progress);
  }
  // Every blob marked corrupt, found in this pass or before it.
  for (const id of await g.meta.corruptBlobIds()) corruptBlobs.push({ blobId: id, reason: reasons.get(id) ?? 'found corrupt earlier' });
  // Findings by entry: one scan of the entries for every corrupt blob found.
  const entries = await g.meta.entriesOfBlobs(corruptBlobs.map((b) => b.blobId));
  const corrupt: ScrubFinding[] = [];
  for (const b of corruptBlobs) {
    const of = entries.filter((e) => e.blobId === b.blobId);
    if (of.length === 0) corrupt.push({ blobId: b.blobId, reason: `${b.reason} (a piece of an unfinished upload)` });
    for (const e of of) corrupt.push({ bucket: e.bucket, key: e.key, blobId: b.blobId, reason: b.reason });
  }
  return { ...progress, complete: true, cursor, corrupt };
}
