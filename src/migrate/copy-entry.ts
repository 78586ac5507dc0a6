/**
 * `granary migrate --data-dir`, the entries: one source entry → one destination entry with every field kept
 * (putTime exactly, MIME type, meta, type, status, expireAt, transitions, restore state, parts, endUser) and its
 * bytes, through the MetaStore and BlobStore ports.
 *
 * Per entry:
 * - Already at the destination with the same hash and putTime → skipped (or, when an attribute differs, e.g. a
 *   chgm after an earlier run, the attributes are brought up to date by `updateObject`: 'updated').
 * - Else its bytes go to the destination, hashed on the way (content-check.ts) and compared with the entry's etag
 *   (and MD5): a mismatch (corrupt source) is reported and nothing is committed.
 *   - Inline blobs (small objects, store/inline-blob-store.ts) stay inline: committed with `inline` under the same
 *     inline id (ids are random, so one never names other bytes at the destination).
 *   - File blobs are streamed from the source BlobStore into a staged destination blob, sealed (durable), then
 *     committed with their checksums (BlobSums computed on the way).
 *   - Manifests (objects assembled from resumable pieces, ports/manifest.ts) are written as ONE blob: their pieces
 *     are streamed one after the other into it. Every byte crosses the network anyway, so joining costs nothing
 *     extra, while the destination then serves the object with one GET (Range without piece arithmetic), keeps
 *     no piece objects (S3 parts stay ≥ 5 MiB), and needs no resumable session to claim: the port records
 *     manifests only through a session claim (MetaStore.commitPut `manifest`), which a migration has no business
 *     inventing.
 * - Blobs shared by several entries (copies) are copied once: the entries of one source blob are serialised, the
 *   first copies, the others commit onto the same destination blob (commitPut of an existing blob id adds a
 *   reference). Across runs, blob-map.ts remembers source → destination blob.
 * Crash safety: a blob is committed only after it was sealed; one sealed but not committed (a SIGKILL in between)
 * is an orphan the destination's orphan sweep removes after its grace period; a multipart upload in progress is
 * aborted by the S3 store's stale-upload cleanup. A re-run copies such an entry again.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isDeepStrictEqual } from 'node:util';
import type { BlobStore, BlobSums } from '../ports/blob.js';
import { isManifestId } from '../ports/manifest.js';
import type { MetaStore, ObjectRecord } from '../ports/meta.js';
import { isInlineBlobId } from '../ports/inline-blob-id.js';
import type { BlobMap } from './blob-map.js';
import { checkBuffer, ContentCheck } from './content-check.js';
import type { MigrationReport } from './report.js';

/** A MetaStore with its BlobStore (the one that reads inline blobs too: store/inline-blob-store.ts). */
export interface Stores {
  meta: MetaStore;
  blobs: BlobStore;
}

/** What happened to one entry (one `--json` line). `bytes` copied to the destination. */
export interface ObjectEvent {
  bucket: string;
  key: string;
  action: 'copied' | 'shared' | 'skipped' | 'updated' | 'mismatch' | 'failed';
  bytes: number;
  reason?: string;
}

/** The source bytes do not match their entry's etag (or size, or MD5). */
export class ContentMismatch extends Error {}

/** The fields of an entry the migration carries over (everything but the blob and the read-only facts). */
const ATTRIBUTES = [
  'fsize',
  'hash',
  'md5',
  'mimeType',
  'putTime',
  'type',
  'status',
  'endUser',
  'meta',
  'expireAt',
  'transitions',
  'restoreStatus',
  'restoreUntil',
  'parts',
] as const;

/** The stored record without the facts single-entry reads add (sums, corrupt, pieces). */
function stored(rec: ObjectRecord, blobId: string): ObjectRecord {
  const out = { ...rec, blobId };
  delete out.sums;
  delete out.corrupt;
  delete out.pieces;
  return out;
}

/** Whether two records agree on every carried attribute. */
function sameAttributes(a: ObjectRecord, b: ObjectRecord): boolean {
  return ATTRIBUTES.every((f) => isDeepStrictEqual(a[f], b[f]));
}

/** Copies entries from one store pair to another; see the module comment. One instance per run. */
export class EntryCopier {
  /** Per source blob: the copy (and first commit) in progress; entries sharing the blob wait for it. */
  private readonly inflight = new Map<string, Promise<'copied' | 'shared'>>();

  constructor(
    private readonly src: Stores,
    private readonly dest: Stores,
    private readonly map: BlobMap,
    private readonly report: MigrationReport,
    private readonly nowSec: () => number,
    private readonly onObject: (e: ObjectEvent) => void,
  ) {}

  /**
   * Copies one entry. `listed` is the entry as the source listing answers it (lifecycle rules applied); `raw` is
   * the entry as stored (its own expireAt and transitions), which is what gets committed. Never throws: every
   * outcome is counted in the report and told to `onObject`.
   */
  async copy(listed: ObjectRecord, raw: ObjectRecord): Promise<void> {
    const o = this.report.objects;
    const at = { bucket: raw.bucket, key: raw.key };
    try {
      const existing = await this.dest.meta.getObject(raw.bucket, raw.key);
      if (existing && existing.hash === raw.hash && existing.putTime === raw.putTime) {
        if (!isInlineBlobId(raw.blobId) && this.map.get(raw.blobId) === undefined) this.map.put(raw.blobId, existing.blobId);
        o.bytesTotal += raw.fsize;
        // Both sides answer with their bucket's lifecycle rules applied, and the rules were copied first.
        if (sameAttributes(existing, listed)) {
          o.skipped++;
          this.onObject({ ...at, action: 'skipped', bytes: 0 });
          return;
        }
        const r = await this.dest.meta.updateObject(raw.bucket, raw.key, this.nowSec(), () => stored(raw, existing.blobId));
        if (r.result !== 'updated') throw new Error(`the destination entry vanished during the update (${r.result})`);
        await this.release(r.freedBlobs);
        o.updated++;
        this.onObject({ ...at, action: 'updated', bytes: 0 });
        return;
      }
      const how = await this.place(raw);
      o.copied++;
      o.bytesTotal += raw.fsize;
      if (how === 'shared') o.shared++;
      else o.bytesCopied += raw.fsize;
      if (isInlineBlobId(raw.blobId)) o.inline++;
      this.onObject({ ...at, action: how, bytes: how === 'copied' ? raw.fsize : 0 });
    } catch (err) {
      const reason = (err as Error).message;
      if (err instanceof ContentMismatch) o.mismatched++;
      else o.failed++;
      this.report.problems.push({ what: `${raw.bucket}:${raw.key}`, reason });
      this.onObject({ ...at, action: err instanceof ContentMismatch ? 'mismatch' : 'failed', bytes: 0, reason });
    }
  }

  /**
   * Puts the entry's bytes at the destination and commits it: onto a destination blob already holding its source
   * blob ('shared'), or onto a fresh copy ('copied'). Entries of one source blob go one at a time.
   */
  private async place(rec: ObjectRecord): Promise<'copied' | 'shared'> {
    const srcId = rec.blobId;
    for (let pending = this.inflight.get(srcId); pending; pending = this.inflight.get(srcId)) {
      await pending.catch(() => undefined);
    }
    const p = this.resolveAndCommit(rec);
    this.inflight.set(srcId, p);
    try {
      return await p;
    } finally {
      if (this.inflight.get(srcId) === p) this.inflight.delete(srcId);
    }
  }

  private async resolveAndCommit(rec: ObjectRecord): Promise<'copied' | 'shared'> {
    const srcId = rec.blobId;
    if (isInlineBlobId(srcId)) {
      if ((await this.dest.meta.inlineBlob(srcId)) !== undefined) {
        await this.commit(rec, srcId, {});
        return 'shared';
      }
      const bytes = await this.src.meta.inlineBlob(srcId);
      if (bytes === undefined) throw new Error(`the inline blob ${srcId} is missing at the source`);
      const check = await checkBuffer(rec, bytes);
      if (check.mismatch) throw new ContentMismatch(`corrupt source: ${check.mismatch}`);
      await this.commit(rec, srcId, { sums: check.sums, inline: bytes });
      return 'copied';
    }
    const mapped = this.map.get(srcId);
    if (mapped !== undefined && (await this.dest.meta.blobReferenced(mapped))) {
      await this.commit(rec, mapped, {});
      return 'shared';
    }
    const { blobId, sums } = await this.copyBytes(rec);
    await this.commit(rec, blobId, { sums });
    this.map.put(srcId, blobId);
    return 'copied';
  }

  /** Streams the entry's bytes (a blob, or a manifest's pieces in order) into a new destination blob, checked. */
  private async copyBytes(rec: ObjectRecord): Promise<{ blobId: string; sums: BlobSums }> {
    const source = await this.openSource(rec);
    let readError: unknown;
    source.once('error', (err) => (readError = err));
    const staged = await this.dest.blobs.stage();
    const check = new ContentCheck(rec);
    try {
      await pipeline(source, check, staged.sink);
    } catch (err) {
      await staged.discard();
      // A source blob file that is gone is lost bytes, like corrupt ones; anything else may pass (a re-run retries).
      if (readError !== undefined && (readError as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new ContentMismatch(`corrupt source: a blob file is missing (${(readError as Error).message})`);
      }
      throw err;
    }
    const result = check.result();
    if (result.mismatch) {
      await staged.discard();
      throw new ContentMismatch(`corrupt source: ${result.mismatch}`);
    }
    return { blobId: await staged.seal(), sums: result.sums };
  }

  /** A stream of the entry's bytes at the source (unverified: ContentCheck checks them). */
  private async openSource(rec: ObjectRecord): Promise<Readable> {
    if (!isManifestId(rec.blobId)) return this.src.blobs.read(rec.blobId);
    const full = await this.src.meta.getObject(rec.bucket, rec.key);
    const pieces = full?.blobId === rec.blobId ? full.pieces : undefined;
    if (!pieces) throw new Error(`the pieces of manifest ${rec.blobId} are missing at the source`);
    const blobs = this.src.blobs;
    async function* bytes(): AsyncGenerator<Buffer> {
      for (const p of pieces ?? []) for await (const chunk of blobs.read(p.blobId)) yield chunk as Buffer;
    }
    return Readable.from(bytes(), { objectMode: false });
  }

  /** Commits the entry onto destination blob `blobId`, replacing whatever entry is there. */
  private async commit(rec: ObjectRecord, blobId: string, extra: { sums?: BlobSums; inline?: Buffer }): Promise<void> {
    const out = await this.dest.meta.commitPut(stored(rec, blobId), { insertOnly: false, nowSec: this.nowSec(), ...extra });
    if (out.result !== 'created' && out.result !== 'replaced') {
      throw new Error(`the destination refused the entry (${out.result}${out.result === 'over-quota' ? `: ${out.refusal.limit}` : ''})`);
    }
    await this.release(out.freedBlobs);
  }

  /** Deletes destination blobs a replacement freed; failures stay pending for the destination's own drain. */
  private async release(freed: string[]): Promise<void> {
    const done: string[] = [];
    for (const id of freed) {
      try {
        await this.dest.blobs.remove(id);
        done.push(id);
      } catch {
        // Left in the pending deletions: a Granary on the destination drains them at start.
      }
    }
    if (done.length > 0) await this.dest.meta.forgetBlobDeletions(done);
  }
}
