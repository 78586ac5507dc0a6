/**
 * Deterministic object content: a 1 MiB pseudo-random block, repeated. Every process derives the same bytes,
 * so the baseline server's plain files equal what was uploaded to Granary without passing data around, and a
 * 1 GiB body is produced on the fly (never held in memory).
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';

export const BLOCK_BYTES = 1024 * 1024;

let cached: Buffer | undefined;

/** The 1 MiB block (xorshift32 from a fixed seed: incompressible, not sniffed as any known file type). */
export function block(): Buffer {
  if (cached) return cached;
  const buf = Buffer.allocUnsafe(BLOCK_BYTES);
  let x = 0x9e3779b9;
  for (let i = 0; i < BLOCK_BYTES; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeUInt32LE(x >>> 0, i);
  }
  cached = buf;
  return buf;
}

/** The first `size` bytes of the content as one buffer (small objects only). */
export function contentBuffer(size: number): Buffer {
  if (size > BLOCK_BYTES) throw new Error('contentBuffer is for objects up to 1 MiB');
  return block().subarray(0, size);
}

/** Yields `size` bytes of content as views of the block (no copies). */
export function* contentChunks(size: number): Generator<Buffer> {
  const b = block();
  for (let off = 0; off < size; off += BLOCK_BYTES) yield b.subarray(0, Math.min(BLOCK_BYTES, size - off));
}

/** A readable stream of `size` bytes of content. */
export function contentStream(size: number): Readable {
  return Readable.from(contentChunks(size), { objectMode: false });
}

/** Writes `size` bytes of content to `path`. */
export async function writeContentFile(path: string, size: number): Promise<void> {
  await pipeline(contentStream(size), createWriteStream(path));
}

/** Kodo block size (docs/development/kodo-protocol.md §5, §7): v1 blocks and the 4 MiB units of the etag. */
export const KODO_BLOCK_BYTES = 4 * 1024 * 1024;

const digestCache = new Map<string, Buffer>();

/**
 * `algorithm` digest of the first `length` bytes of the content. Every piece a client sends here starts at a
 * multiple of 1 MiB (4 MiB blocks and parts), so its bytes, and digest, depend on its length only: cached, so
 * the load generator hashes each distinct length once instead of every piece (it must not be the bottleneck).
 */
export function contentDigest(algorithm: 'md5' | 'sha1', length: number): Buffer {
  const k = `${algorithm}:${length}`;
  let d = digestCache.get(k);
  if (!d) {
    const h = createHash(algorithm);
    for (const c of contentChunks(length)) h.update(c);
    d = h.digest();
    digestCache.set(k, d);
  }
  return d;
}

const crcCache = new Map<number, number>();

/** CRC-32 (a number, like mkblk's `crc32`) of the first `length` bytes of the content; cached like contentDigest. */
export function contentCrc32(length: number): number {
  let crc = crcCache.get(length);
  if (crc === undefined) {
    crc = 0;
    for (const c of contentChunks(length)) crc = crc32(c, crc);
    crc >>>= 0;
    crcCache.set(length, crc);
  }
  return crc;
}

/** The Kodo etag (`hash`, docs/development/kodo-protocol.md §7) of `size` bytes of content, from one SHA-1 per 4 MiB block. */
export function contentEtag(size: number): string {
  const blocks: Buffer[] = [];
  for (let off = 0; off < size || blocks.length === 0; off += KODO_BLOCK_BYTES) {
    blocks.push(contentDigest('sha1', Math.min(KODO_BLOCK_BYTES, size - off)));
  }
  const tagged =
    blocks.length === 1
      ? Buffer.concat([Buffer.from([0x16]), blocks[0] as Buffer])
      : Buffer.concat([Buffer.from([0x96]), createHash('sha1').update(Buffer.concat(blocks)).digest()]);
  return tagged.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}
