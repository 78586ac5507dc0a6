/**
 * Streaming stored pieces (v1 chunks, v2 parts) back in order, one at a time: the assembled object goes through
 * the same receive → putObject path as every upload, with bounded memory.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { urlsafeB64Encode } from '../../auth/base64.js';
import type { BlobStore } from '../../store/blob.js';

/** One stream of the blobs' bytes, in order. */
export function streamBlobs(blobs: BlobStore, ids: string[]): Readable {
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const id of ids) {
      for await (const chunk of blobs.read(id)) yield chunk as Buffer;
    }
  }
  return Readable.from(bytes(), { objectMode: false });
}

/** SHA-1 of the blobs' bytes (a v1 block so far: at most 4 MiB), URL-safe base64. */
export async function sha1OfBlobs(blobs: BlobStore, ids: string[]): Promise<string> {
  const h = createHash('sha1');
  for await (const chunk of streamBlobs(blobs, ids)) h.update(chunk as Buffer);
  return urlsafeB64Encode(h.digest());
}
