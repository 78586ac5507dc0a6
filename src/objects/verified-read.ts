/**
 * Reading an entry's bytes for anyone outside the store (downloads, fops, resource reads, assembly of resumable
 * pieces): every read is checked against the blob's checksums (integrity.ts), so corrupt bytes are never served
 * as good ones.
 *
 * - A mismatch marks the blob corrupt in the MetaStore (every entry sharing it: stat shows `corrupt`, downloads
 *   answer 599 at once afterwards, fops refuse it) and logs it once, then fails the read with 599
 *   `objectCorrupt`. Before the first byte was sent the client gets that JSON answer; later the transfer is cut
 *   (never a clean 200 with wrong bytes). A missing blob file counts as corrupt too.
 * - Blobs stored before checksums existed ("legacy") are verified against the entry's MD5 (or its etag) on a
 *   whole read: the last chunk is held back until the digest matched, and the checksums computed on the way are
 *   recorded (upgrade in place). Range reads of legacy blobs are served unverified until the scrubber or a whole
 *   read upgraded them.
 */
import { bindCustomerKey } from '../ports/customer-key.js';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { Readable, Transform, Writable, type TransformCallback } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import type { Granary } from '../context.js';
import { Errors, isKodoError, storageError } from '../errors.js';
import { fopTempPath, fopTempRoot } from '../fops/temp-root.js';
import type { BlobSums, ByteRange } from '../ports/blob.js';
import type { StoredPiece } from '../ports/manifest.js';
import type { ObjectRecord } from '../ports/meta.js';
import { DigestingStream } from './etag.js';
import { alignedRange, ChecksumMismatch, checkBuffer, VerifyingStream } from './integrity.js';

/** What a corrupt blob is reported with: the blob and, when known, the entry that was being read. */
export interface CorruptTarget {
  blobId: string;
  bucket?: string;
  key?: string;
}

/** Marks `target.blobId` corrupt and logs it (once: only the first report of a blob is logged at error level). */
export async function markCorrupt(g: Pick<Granary, 'meta' | 'log'>, target: CorruptTarget, detail: string): Promise<void> {
  try {
    if (await g.meta.markBlobCorrupt(target.blobId)) {
      g.log.error({ ...target, detail }, 'bitrot: stored bytes do not match their checksums; the object is marked corrupt');
    }
  } catch (err) {
    g.log.error({ err, ...target, detail }, 'bitrot detected, but marking the object corrupt failed');
  }
}

/**
 * The catalogue error for a failed read: `objectCorrupt` (599) for a checksum mismatch or a missing blob file —
 * the blob is marked corrupt in the background — else the storage error (599 family) or `err` itself.
 */
export function readFailure(g: Pick<Granary, 'meta' | 'log'>, target: CorruptTarget, err: unknown): Error {
  if (isKodoError(err)) return err;
  const code = (err as { code?: string } | null)?.code;
  // ESSECKEY: an SSE-C blob read without its customer key (store/crypto/envelope.ts): refused, not corrupt.
  if (code === 'ESSECKEY') return Errors.objectCustomerKey();
  // EINTEGRITY: encrypted bytes that do not authenticate (store/crypto/envelope.ts CiphertextMismatch).
  if (err instanceof ChecksumMismatch || code === 'ENOENT' || code === 'EINTEGRITY') {
    const detail = err instanceof ChecksumMismatch || code === 'EINTEGRITY' ? (err as Error).message : 'the blob file is missing';
    void markCorrupt(g, target, detail);
    return Errors.objectCorrupt(detail);
  }
  const storage = storageError(err, 'reading the object');
  if (storage) g.log.error({ err, ...target }, storage.message);
  return storage ?? (err as Error);
}

function targetOf(rec: ObjectRecord): CorruptTarget {
  return { blobId: rec.blobId, bucket: rec.bucket, key: rec.key };
}

/**
 * Whole objects up to this size (bytes) are read at once and verified before their answer's headers go out
 * (`readObjectSmall`: fewer syscalls and no stream for tiny objects); larger ones and ranges stream (`readObject`).
 */
export const SMALL_OBJECT_BYTES = 64 * 1024;

/** Refuses an entry already known corrupt (599). */
export function checkNotCorrupt(rec: ObjectRecord): void {
  if (rec.corrupt) throw Errors.objectCorrupt('found by an earlier read or the scrubber');
}

/**
 * Pipes `source` (a blob read) into `out`, which is what the caller sends: a read error ends `out` with its
 * catalogue error (readFailure), and `out` ending early (the client went away) closes `source`.
 */
function pipeRead(g: Granary, source: Readable, out: Transform, target: CorruptTarget): Readable {
  source.on('error', (err) => out.destroy(readFailure(g, target, err)));
  out.on('close', () => source.destroy());
  return source.pipe(out);
}

/**
 * A stream of the entry's bytes (or of `range`), each verified before it is passed on. Errors: 599
 * objectCorrupt (marked), 599 storage errors.
 */
export function readObject(g: Granary, rec: ObjectRecord, range?: ByteRange): Readable {
  if (rec.pieces) return readManifest(g, { ...rec, pieces: rec.pieces }, range);
  return rec.sums ? verifiedStream(g, targetOf(rec), rec.fsize, rec.sums, range, rec.inline) : readLegacy(g, rec, range);
}

/**
 * The bytes of blob `blobId` (or of `range`): `inline`, the bytes of an inline blob the entry read carried
 * (ObjectRecord.inline), when given, else a read of the BlobStore.
 */
function blobRead(g: Granary, blobId: string, range: ByteRange | undefined, stored: Buffer | undefined): Readable {
  if (!stored) return g.blobs.read(blobId, range);
  let inline: Buffer;
  try {
    inline = openInline(g, stored);
  } catch (err) {
    const failed = new Readable({ read: () => undefined });
    process.nextTick(() => failed.destroy(err as Error));
    return failed;
  }
  return Readable.from([range ? inline.subarray(range.start, range.end + 1) : inline], { objectMode: false });
}

/** The plaintext of inline bytes as stored (decrypted under encryption at rest; throws an EINTEGRITY error). */
function openInline(g: Pick<Granary, 'blobs'>, stored: Buffer): Buffer {
  return g.blobs.openInline ? g.blobs.openInline(stored) : stored;
}

/**
 * The verified bytes of a blob of `size` bytes (or of `range`), reading whole blocks around the range; `inline`:
 * the blob's bytes when the entry read carried them (ObjectRecord.inline), verified all the same.
 */
export function verifiedStream(
  g: Granary,
  target: CorruptTarget,
  size: number,
  sums: BlobSums,
  range?: ByteRange,
  inline?: Buffer,
): Readable {
  const window = range ?? { start: 0, end: size - 1 };
  const aligned = alignedRange(window, size, sums.blockBytes);
  const source = blobRead(g, target.blobId, range ? aligned : undefined, inline);
  const verify = new VerifyingStream(sums, size, window, aligned.start, (m) => readFailure(g, target, m));
  return pipeRead(g, source, verify, target);
}

/**
 * Reads a whole blob with checksums and checks it (the scrubber): resolves when every block matched, rejects
 * with 599 objectCorrupt (the blob is marked) or a storage error. `pace` sees every chunk (rate limiting).
 */
export async function verifyBlob(
  g: Granary,
  blob: { blobId: string; size: number; sums: BlobSums },
  pace?: (chunk: Buffer) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const stream = verifiedStream(g, { blobId: blob.blobId }, blob.size, blob.sums);
  await drainTo(stream, pace, signal);
}

/**
 * Reads a whole entry whose blob has no checksums yet (stored by an earlier version) and checks it against the
 * entry's digest; on a match its checksums are recorded. Rejects like `verifyBlob`.
 */
export async function verifyLegacyEntry(g: Granary, rec: ObjectRecord, pace?: (chunk: Buffer) => Promise<void>, signal?: AbortSignal): Promise<void> {
  await drainTo(readLegacy(g, rec), pace, signal);
}

/**
 * Consumes `stream` through 'data' events (an async iterator's `read()` would copy buffered chunks together),
 * pausing while `pace` runs after each chunk; stops (destroying it) when `signal` aborts.
 */
async function drainTo(stream: Readable, pace?: (chunk: Buffer) => Promise<void>, signal?: AbortSignal): Promise<void> {
  const onAbort = (): void => void stream.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal?.addEventListener('abort', onAbort, { once: true });
  stream.on('data', (chunk: Buffer) => {
    if (!pace) return;
    stream.pause();
    pace(chunk).then(
      () => stream.resume(),
      (err: unknown) => stream.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  });
  try {
    await finished(stream);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The whole entry in memory (small entries only: callers check the size), verified. */
export async function readObjectSmall(g: Granary, rec: ObjectRecord): Promise<Buffer> {
  if (rec.pieces) return readManifestSmall(g, { ...rec, pieces: rec.pieces });
  checkNotCorrupt(rec);
  let bytes: Buffer;
  try {
    bytes = rec.inline ? openInline(g, rec.inline) : await g.blobs.readSmall(rec.blobId, rec.fsize);
  } catch (err) {
    throw readFailure(g, targetOf(rec), err);
  }
  const mismatch = rec.sums ? checkBuffer(bytes, rec.fsize, rec.sums) : await checkLegacyBuffer(g, rec, bytes);
  if (mismatch) throw readFailure(g, targetOf(rec), mismatch);
  return bytes;
}

/**
 * A local file of the entry's bytes for a subprocess (ffmpeg, heif-convert), verified by one full read first.
 * Release it when done.
 */
export async function localObjectFile(g: Granary, rec: ObjectRecord): Promise<{ path: string; release(): Promise<void> }> {
  if (rec.pieces) return localManifestFile(g, { ...rec, pieces: rec.pieces });
  checkNotCorrupt(rec);
  await pipeline(readObject(g, rec), new Writable({ write: (_c, _e, cb) => cb() }));
  try {
    return await g.blobs.localFile(rec.blobId);
  } catch (err) {
    throw readFailure(g, targetOf(rec), err);
  }
}

/**
 * Verifies pieces (v1 chunks, v2 parts) as one stream in order, each against its own checksums (pieces stored
 * before checksums existed are passed unverified). Errors as `readObject`.
 */
export function readPieces(g: Granary, pieces: Array<{ blobId: string; size?: number; sums?: BlobSums }>): Readable {
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const p of pieces) {
      const piece =
        p.sums && p.size !== undefined ? verifiedStream(g, { blobId: p.blobId }, p.size, p.sums) : g.blobs.read(p.blobId);
      try {
        for await (const chunk of piece) yield chunk as Buffer;
      } catch (err) {
        throw readFailure(g, { blobId: p.blobId }, err);
      }
    }
  }
  // Readable.from keeps backpressure, and a consumer that stops early ends the generator (closing the piece).
  return Readable.from(bytes(), { objectMode: false });
}

// ---- blobs without checksums (stored by an earlier version) ----

/** Whether `digests` match what the entry says of its content (MD5 when recorded, else the etag). */
function matchesEntry(rec: ObjectRecord, digests: { md5: string; etag: string; size: number }): boolean {
  if (digests.size !== rec.fsize) return false;
  return rec.md5 ? digests.md5 === rec.md5 : digests.etag === rec.hash;
}

async function checkLegacyBuffer(g: Granary, rec: ObjectRecord, bytes: Buffer): Promise<ChecksumMismatch | undefined> {
  const d = new DigestingStream();
  d.resume();
  d.end(bytes);
  await new Promise((r) => d.once('end', r));
  const digests = d.digests();
  if (!matchesEntry(rec, digests)) return new ChecksumMismatch(-1, 'the content does not match its recorded digest');
  await g.meta.setBlobSums(rec.blobId, rec.fsize, digests.sums);
  return undefined;
}

/**
 * A legacy blob: ranges unverified; a whole read is digested on the way, its last chunk held back until the
 * digest matched the entry (then its checksums are recorded).
 */
function readLegacy(g: Granary, rec: ObjectRecord, range?: ByteRange): Readable {
  const source = blobRead(g, rec.blobId, range, rec.inline);
  if (range) return pipeRead(g, source, new Transform({ transform: (c: Buffer, _e, cb) => cb(null, c) }), targetOf(rec));
  const digest = new DigestingStream();
  digest.resume();
  let last: Buffer | undefined;
  const out = new Transform({
    transform(chunk: Buffer, _e, cb: TransformCallback) {
      digest.write(chunk);
      const prev = last;
      last = chunk;
      cb(null, prev);
    },
    flush(cb: TransformCallback) {
      digest.end();
      digest.once('end', () => {
        const digests = digest.digests();
        if (!matchesEntry(rec, digests)) {
          cb(readFailure(g, targetOf(rec), new ChecksumMismatch(-1, 'the content does not match its recorded digest')));
          return;
        }
        void g.meta.setBlobSums(rec.blobId, rec.fsize, digests.sums).catch(() => undefined);
        cb(null, last);
      });
    },
  });
  return pipeRead(g, source, out, targetOf(rec));
}

/*
 * Objects assembled from resumable pieces (manifests, ports/manifest.ts): the entry's bytes are
 * its pieces' bytes in order, streamed one piece after the other, never copied into one blob.
 *
 * - Ranges map onto the pieces they touch (`piecesInRange`): a range may start and end inside pieces and span
 *   any number of piece boundaries; each piece is read only over its own part of the range.
 * - Every piece is verified against its own checksums as it streams (`verifiedStream` above, whole
 *   256 KiB checksum blocks around the range), so a corrupt piece fails the read with 599 `objectCorrupt` and is
 *   marked corrupt — which makes the entry (and every entry sharing the piece) corrupt for stat and later reads.
 *   Before the first byte the client gets the JSON 599; later the transfer is cut. A missing piece file counts as
 *   corrupt too. Pieces stored before checksums existed are passed unverified (as they were when assembled).
 * - `localManifestFile` (ffmpeg and other readers that need a path) writes the verified bytes into a temp file
 *   under the fop temp dir (`<dataDir>/fop-tmp/`, emptied at start), removed by `release()`.
 */

/** The part of one piece a range covers: the piece's index and inclusive byte offsets inside the piece. */
export interface PieceSlice {
  index: number;
  start: number;
  end: number;
}

/**
 * Maps an inclusive byte `range` of the whole object onto its pieces of `sizes` bytes (in order): the slices of
 * the pieces it touches, in order (pieces of 0 bytes never appear). Without `range`, every non-empty piece whole.
 * A range past the end is clipped to the pieces' total.
 */
export function piecesInRange(sizes: readonly number[], range?: ByteRange): PieceSlice[] {
  const out: PieceSlice[] = [];
  let offset = 0;
  sizes.forEach((size, index) => {
    const first = offset;
    const last = offset + size - 1;
    offset += size;
    if (size === 0) return;
    const lo = range ? Math.max(first, range.start) : first;
    const hi = range ? Math.min(last, range.end) : last;
    if (lo <= hi) out.push({ index, start: lo - first, end: hi - first });
  });
  return out;
}

/** The pieces' bytes (or those of `range` of the whole), in order, each verified; `entry` names the reports. */
function readPieceSlices(g: Granary, pieces: readonly StoredPiece[], range: ByteRange | undefined, entry: { bucket?: string; key?: string }): Readable {
  const slices = piecesInRange(pieces.map((p) => p.size), range);
  // Pieces are opened as the answer drains, outside this call's async context: with this call's SSE-C key.
  const inScope = bindCustomerKey();
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const slice of slices) {
      const piece = pieces[slice.index] as StoredPiece;
      const target: CorruptTarget = { blobId: piece.blobId, ...entry };
      const whole = slice.start === 0 && slice.end === piece.size - 1;
      const sliceRange = whole ? undefined : { start: slice.start, end: slice.end };
      // verifiedStream fails with the catalogue error itself; a raw read of a legacy piece is mapped here.
      const stream = inScope(() => (piece.sums ? verifiedStream(g, target, piece.size, piece.sums, sliceRange) : g.blobs.read(piece.blobId, sliceRange)));
      try {
        for await (const chunk of stream) yield chunk as Buffer;
      } catch (err) {
        throw readFailure(g, target, err);
      }
    }
  }
  // Readable.from keeps backpressure, and a consumer that stops early ends the generator (closing the piece).
  return Readable.from(bytes(), { objectMode: false });
}

/** Where a manifest entry's corruption is reported: its bucket and key (the piece is added per read). */
function entryOf(rec: ObjectRecord): { bucket: string; key: string } {
  return { bucket: rec.bucket, key: rec.key };
}

/** A stream of a manifest entry's bytes (or of `range`), verified piece by piece. Errors: 599 (see module). */
export function readManifest(g: Granary, rec: ObjectRecord & { pieces: StoredPiece[] }, range?: ByteRange): Readable {
  return readPieceSlices(g, rec.pieces, range, entryOf(rec));
}

/** The whole manifest entry in memory (small entries only: callers check the size), verified. */
export async function readManifestSmall(g: Granary, rec: ObjectRecord & { pieces: StoredPiece[] }): Promise<Buffer> {
  checkNotCorrupt(rec);
  const parts: Buffer[] = [];
  for await (const chunk of readManifest(g, rec)) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/**
 * A local file of the manifest entry's bytes: its pieces concatenated, verified, into a temp file under the fop
 * temp dir. `release()` removes it.
 */
export async function localManifestFile(
  g: Granary,
  rec: ObjectRecord & { pieces: StoredPiece[] },
): Promise<{ path: string; release(): Promise<void> }> {
  checkNotCorrupt(rec);
  await mkdir(fopTempRoot(g.config.dataDir), { recursive: true });
  // Named with the process tag, like the fops' temp dirs: the reaper removes only what a dead process left.
  const path = fopTempPath(g.config.dataDir, g.processTag, 'manifest-');
  const release = (): Promise<void> => rm(path, { force: true });
  try {
    await pipeline(readManifest(g, rec), createWriteStream(path, { flags: 'wx' }));
  } catch (err) {
    await release();
    throw err;
  }
  return { path, release };
}

/**
 * The first `bytes` bytes of pieces (fewer when they hold fewer), verified: the head an assembled upload's MIME
 * type is sniffed from. Errors: 599 objectCorrupt (the piece is marked), storage errors.
 */
export async function readPiecesHead(g: Granary, pieces: readonly StoredPiece[], bytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  if (bytes <= 0) return Buffer.alloc(0);
  for await (const chunk of readPieceSlices(g, pieces, { start: 0, end: bytes - 1 }, {})) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}
