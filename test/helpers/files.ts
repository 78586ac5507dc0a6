/**
 * Test content on disk: files of any size written by streaming 1 MiB chunks of a seeded keystream (AES-128-CTR
 * over zeros — deterministic, fast, incompressible), and streamed SHA-1s of files and downloads, so a 100 MiB case
 * never holds the whole content in memory.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { sha1OfStream } from './http.js';

const MiB = 1024 * 1024;

/** A deterministic byte generator: successive calls continue the same stream for a given seed. */
export function seededStream(seed: string): (length: number) => Buffer {
  const key = createHash('sha256').update(`key:${seed}`).digest().subarray(0, 16);
  const iv = createHash('sha256').update(`iv:${seed}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  return (length) => cipher.update(Buffer.alloc(length));
}

/** `length` seeded bytes (for small, in-memory content). */
export function seededBytes(seed: string, length: number): Buffer {
  return seededStream(seed)(length);
}

/** Writes `size` seeded bytes to `path` in chunks of at most 1 MiB. */
export async function writeSeededFile(path: string, size: number, seed: string): Promise<void> {
  const next = seededStream(seed);
  const fh = await open(path, 'w');
  try {
    for (let written = 0; written < size; ) {
      const chunk = next(Math.min(MiB, size - written));
      await fh.write(chunk);
      written += chunk.length;
    }
  } finally {
    await fh.close();
  }
}

/** Hex SHA-1 of a file, streamed. */
export async function sha1OfFile(path: string): Promise<string> {
  const h = createHash('sha1');
  for await (const chunk of createReadStream(path, { highWaterMark: MiB })) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** A download read as a stream: status, headers, hex SHA-1 and length of the body. */
export interface StreamedDownload {
  status: number;
  headers: Headers;
  sha1: string;
  length: number;
}

/** `GET <base>/<bucket>/<key>` (path style), hashing the body as it arrives. */
export async function downloadSha1(base: string, bucket: string, key: string): Promise<StreamedDownload> {
  const res = await fetch(`${base}/${encodeURIComponent(bucket)}/${encodeURIComponent(key)}`);
  return { status: res.status, headers: res.headers, ...(await sha1OfStream(res)) };
}
