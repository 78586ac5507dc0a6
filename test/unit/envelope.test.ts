/**
 * The encrypted blob format (store/crypto/envelope.ts): round trips of every size class through the stream and
 * buffer forms, ranges decrypting only their chunks, truncation at a chunk boundary and any flipped bit caught,
 * re-wrapping for a new master key, and SSE-C blobs opening only with their customer key.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  CHUNK_BYTES,
  chunkSpan,
  DecryptStream,
  EncryptStream,
  HEADER_BYTES,
  masterKeyId,
  type MasterKey,
  openBuffer,
  openHeader,
  rewrapHeader,
  sealBuffer,
  sealedSize,
} from '../../src/store/crypto/envelope.js';

const key = (): MasterKey => {
  const k = randomBytes(32);
  return { key: k, id: masterKeyId(k), source: 'test' };
};

async function encrypt(master: MasterKey, plain: Buffer, customerKey?: Buffer): Promise<Buffer> {
  const parts: Buffer[] = [];
  // Odd-sized writes: chunk boundaries never line up with them.
  const writes = [];
  for (let at = 0; at < plain.length; at += 10_007) writes.push(plain.subarray(at, at + 10_007));
  for await (const c of Readable.from(writes).pipe(new EncryptStream(master, customerKey))) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

async function decryptRange(master: MasterKey, stored: Buffer, start: number, end: number): Promise<Buffer> {
  const { dataKey, nonce } = openHeader(stored, [master]);
  const span = chunkSpan(start, end);
  const d = new DecryptStream(dataKey, nonce, { firstChunk: span.firstChunk, skip: start - span.firstChunk * CHUNK_BYTES, limit: end - start + 1, toEnd: false });
  const parts: Buffer[] = [];
  for await (const c of Readable.from([stored.subarray(span.storedStart, span.storedEnd + 1)]).pipe(d)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

describe('envelope format', () => {
  const master = key();

  it('round-trips every size class, stream and buffer forms alike', async () => {
    for (const size of [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES, 200_000]) {
      const plain = randomBytes(size);
      const stored = await encrypt(master, plain);
      expect(stored.length).toBe(sealedSize(size));
      expect(openBuffer([master], stored).equals(plain)).toBe(true);
      expect(openBuffer([master], sealBuffer(master, plain)).equals(plain)).toBe(true);
    }
  });

  it('decrypts ranges from the chunks they cover, the last chunk full or not', async () => {
    for (const size of [3 * CHUNK_BYTES, 3 * CHUNK_BYTES + 5]) {
      const plain = randomBytes(size);
      const stored = await encrypt(master, plain);
      for (const [a, b] of [[0, 0], [CHUNK_BYTES - 1, CHUNK_BYTES], [5, size - 1], [2 * CHUNK_BYTES, size - 1], [size - 1, size - 1]] as const) {
        expect((await decryptRange(master, stored, a, b)).equals(plain.subarray(a, b + 1)), `${size} ${a}-${b}`).toBe(true);
      }
    }
  });

  it('catches a flipped bit anywhere and a blob cut after a whole chunk', async () => {
    const plain = randomBytes(2 * CHUNK_BYTES);
    const stored = await encrypt(master, plain);
    for (const at of [0, 9, 20, 60, HEADER_BYTES, HEADER_BYTES + CHUNK_BYTES + 3, stored.length - 1]) {
      const bad = Buffer.from(stored);
      bad[at]! ^= 0x01;
      expect(() => openBuffer([master], bad), `byte ${at}`).toThrow();
    }
    expect(() => openBuffer([master], stored.subarray(0, HEADER_BYTES + CHUNK_BYTES + 16))).toThrow(/does not authenticate/);
  });

  it('re-wraps a header for a new key without touching the data', async () => {
    const plain = randomBytes(100_000);
    const stored = await encrypt(master, plain);
    const next = key();
    const head = rewrapHeader(stored, [master], next);
    const moved = Buffer.concat([head, stored.subarray(HEADER_BYTES)]);
    expect(openBuffer([next], moved).equals(plain)).toBe(true);
    expect(() => openBuffer([master], moved)).toThrow(/not configured/);
  });

  it('opens an SSE-C blob only with its customer key, also after a re-wrap', async () => {
    const plain = randomBytes(70_000);
    const ck = randomBytes(32);
    const stored = await encrypt(master, plain, ck);
    expect(openBuffer([master], stored, ck).equals(plain)).toBe(true);
    expect(() => openBuffer([master], stored)).toThrow(expect.objectContaining({ code: 'ESSECKEY' }));
    expect(() => openBuffer([master], stored, randomBytes(32))).toThrow(expect.objectContaining({ code: 'ESSECKEY' }));
    const next = key();
    const moved = Buffer.concat([rewrapHeader(stored, [master], next), stored.subarray(HEADER_BYTES)]);
    expect(openBuffer([next], moved, ck).equals(plain)).toBe(true);
  });
});
