/**
 * Assembling a resumable upload (v1 mkfile, v2 complete) without copying it: the object becomes a
 * manifest of the stored pieces (ports/manifest.ts), committed through putObject like every upload. Its etag is
 * composed from digests recorded when the pieces arrived (docs/development/kodo-protocol.md §7), its MIME type sniffed from the first
 * HEAD_BYTES of the first piece(s); no byte is copied and none is hashed again, except:
 * - a v1 block sent as several bput chunks: its SHA-1 is computed at mkfile by reading that block (≤ 4 MiB);
 * - a v2 part over 4 MiB stored before block SHA-1s were recorded, ending an upload whose other parts are 4 MiB:
 *   read once to get its blocks' SHA-1s (≤ the part size, 1 GiB).
 * Pieces read here are verified against their own checksums (objects/verified-read.ts): a corrupt one fails the
 * assembly with 599 before anything is stored.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { urlsafeB64Encode } from '../../auth/base64.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { newManifestId, type StoredPiece } from '../../ports/manifest.js';
import type { SessionClaim } from '../../ports/meta.js';
import { HEAD_BYTES } from '../etag.js';
import { readPiecesHead } from '../verified-read.js';
import type { PutBody } from '../receive.js';
import { readPieces } from '../verified-read.js';

/** One stream of the pieces' bytes, in order, verified. A piece whose record vanished fails it (ENOENT). */
export async function streamPieces(g: Granary, ids: string[]): Promise<Readable> {
  const states = await g.meta.blobStates(ids);
  return readPieces(
    g,
    ids.map((blobId) => {
      const st = states.get(blobId);
      return { blobId, ...(st?.size !== undefined ? { size: st.size } : {}), ...(st?.sums ? { sums: st.sums } : {}) };
    }),
  );
}

/** SHA-1 of the pieces' bytes (a v1 block: at most 4 MiB), URL-safe base64. */
export async function sha1OfPieces(g: Granary, ids: string[]): Promise<string> {
  const h = createHash('sha1');
  for await (const chunk of await streamPieces(g, ids)) h.update(chunk as Buffer);
  return urlsafeB64Encode(h.digest());
}

/**
 * The pieces `ids` with their sizes (bytes) and checksums as recorded; `fallbackSize` gives the size of a piece
 * recorded without one (stored by an earlier version). Fails when a piece's record is gone (its session was
 * dropped meanwhile: the caller tells that race from a genuine failure).
 */
export async function storedPieces(g: Granary, ids: string[], fallbackSize: (id: string, index: number) => number | undefined): Promise<StoredPiece[]> {
  const states = await g.meta.blobStates(ids);
  return ids.map((blobId, i) => {
    const st = states.get(blobId);
    const size = st?.size ?? fallbackSize(blobId, i);
    if (!st || size === undefined) throw Object.assign(new Error('a piece of the upload is gone'), { code: 'ENOENT' });
    return { blobId, size, ...(st.sums ? { sums: st.sums } : {}) };
  });
}

/**
 * The body putObject commits for an upload assembled from `pieces` (in order) with the composed `etag`: sealing it
 * names a new manifest; the commit records the manifest and consumes `claim` in one transaction, answering
 * `lost(reason)` when the session changed meanwhile. Reads the head bytes for MIME sniffing (599 when corrupt).
 */
export async function assembledBody(
  g: Granary,
  a: { pieces: StoredPiece[]; etag: string; claim: SessionClaim; lost: (reason: 'gone' | 'replaced') => Error },
): Promise<PutBody> {
  const size = a.pieces.reduce((n, p) => n + p.size, 0);
  // Pieces sealed with an SSE-C key the request does not give cannot be sniffed: no head (the type is the client's
  // or application/octet-stream).
  const head = await readPiecesHead(g, a.pieces, Math.min(size, HEAD_BYTES)).catch((err: unknown) => {
    if (isKodoError(err, 'objectCustomerKey')) return Buffer.alloc(0);
    throw err;
  });
  let id: string | undefined;
  return {
    staged: { seal: async () => (id ??= newManifestId()), discard: async () => undefined },
    digests: { size, etag: a.etag, head },
    manifest: { pieces: a.pieces.map((p) => ({ blobId: p.blobId, size: p.size })), claim: a.claim, lost: a.lost },
  };
}
