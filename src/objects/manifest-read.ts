/**
 * Reading objects assembled from resumable pieces (manifests, ports/manifest.ts): the entry's bytes are
 * its pieces' bytes in order, streamed one piece after the other, never copied into one blob.
 *
 * - Ranges map onto the pieces they touch (`piecesInRange`): a range may start and end inside pieces and span
 *   any number of piece boundaries; each piece is read only over its own part of the range.
 * - Every piece is verified against its own checksums as it streams (verified-read.ts `verifiedStream`, whole
 *   256 KiB checksum blocks around the range), so a corrupt piece fails the read with 599 `objectCorrupt` and is
 *   marked corrupt — which makes the entry (and every entry sharing the piece) corrupt for stat and later reads.
 *   Before the first byte the client gets the JSON 599; later the transfer is cut. A missing piece file counts as
 *   corrupt too. Pieces stored before checksums existed are passed unverified (as they were when assembled).
 * - `localManifestFile` (ffmpeg and other readers that need a path) writes the verified bytes into a temp file
 *   under the fop temp dir (`<dataDir>/fop-tmp/`, emptied at start), removed by `release()`.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Granary } from '../context.js';
import { fopTempPath, fopTempRoot } from '../fops/temp-root.js';
import type { ByteRange } from '../ports/blob.js';
import type { StoredPiece } from '../ports/manifest.js';
import type { ObjectRecord } from '../ports/meta.js';
import { checkNotCorrupt, readFailure, verifiedStream, type CorruptTarget } from './verified-read.js';

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
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const slice of slices) {
      const piece = pieces[slice.index] as StoredPiece;
      const target: CorruptTarget = { blobId: piece.blobId, ...entry };
      const whole = slice.start === 0 && slice.end === piece.size - 1;
      const sliceRange = whole ? undefined : { start: slice.start, end: slice.end };
      // verifiedStream fails with the catalogue error itself; a raw read of a legacy piece is mapped here.
      const stream = piece.sums ? verifiedStream(g, target, piece.size, piece.sums, sliceRange) : g.blobs.read(piece.blobId, sliceRange);
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
