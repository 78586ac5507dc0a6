/**
 * Deterministic object content: a 1 MiB pseudo-random block, repeated. Every process derives the same bytes,
 * so the baseline server's plain files equal what was uploaded to Granary without passing data around, and a
 * 1 GiB body is produced on the fly (never held in memory).
 */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

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
