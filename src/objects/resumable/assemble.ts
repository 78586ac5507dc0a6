/**
 * Streaming stored pieces (v1 chunks, v2 parts) back in order, one at a time: the assembled object goes through
 * the same receive → putObject path as every upload, with bounded memory. Every piece is checked against its own
 * checksums on the way (objects/verified-read.ts): a corrupt piece fails the assembly with 599 and is never
 * copied into an object.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { urlsafeB64Encode } from '../../auth/base64.js';
import type { Granary } from '../../context.js';
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

/** SHA-1 of the pieces' bytes (a v1 block so far: at most 4 MiB), URL-safe base64. */
export async function sha1OfPieces(g: Granary, ids: string[]): Promise<string> {
  const h = createHash('sha1');
  for await (const chunk of await streamPieces(g, ids)) h.update(chunk as Buffer);
  return urlsafeB64Encode(h.digest());
}
