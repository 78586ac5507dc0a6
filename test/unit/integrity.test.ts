/**
 * The checksum machinery of bitrot detection (src/objects/integrity.ts): per-block CRC-32s, the block-aligned read
 * range of a Range request, and the verifying stream (passes only verified bytes of the window; fails on a flipped
 * byte, a short or a long blob).
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  alignedRange,
  ChecksumMismatch,
  checkBuffer,
  crc32OfSums,
  SUM_BLOCK_BYTES,
  SumBuilder,
  sumsOf,
  VerifyingStream,
} from '../../src/objects/integrity.js';

const B = 16; // a small block size keeps the cases readable
const data = Buffer.from(Array.from({ length: 70 }, (_, i) => (i * 7 + 3) & 0xff));

async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Runs `input` (in chunks of `chunk` bytes) through a VerifyingStream for `window`, reading from `from`. */
function verify(input: Buffer, size: number, window: { start: number; end: number }, from: number, chunk = 5): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for (let i = 0; i < input.length; i += chunk) chunks.push(input.subarray(i, i + chunk));
  return collect(Readable.from(chunks).pipe(new VerifyingStream(sumsOf(data, B), size, window, from)));
}

describe('SumBuilder', () => {
  it('keeps one CRC-32 per block, the last one shorter, whatever the chunking', () => {
    const b = new SumBuilder(B);
    for (let i = 0; i < data.length; i += 3) b.update(data.subarray(i, i + 3));
    const sums = b.finish();
    expect(sums.blockBytes).toBe(B);
    expect(sums.crc32.length).toBe(5 * 4);
    expect(sums.crc32.readUInt32BE(0)).toBe(crc32(data.subarray(0, 16)) >>> 0);
    expect(sums.crc32.readUInt32BE(16)).toBe(crc32(data.subarray(64)) >>> 0);
    expect(sums).toEqual(sumsOf(data, B));
    expect(new SumBuilder(B).finish().crc32.length).toBe(0);
  });

  it("gives node:zlib's CRC-32 of every 256 KiB block (the values existing data dirs hold), whatever the chunking", () => {
    const big = randomBytes(3 * SUM_BLOCK_BYTES + 12_345);
    const b = new SumBuilder();
    for (let i = 0; i < big.length; ) {
      const n = 1 + ((i * 7919) % 70_000);
      b.update(big.subarray(i, i + n));
      i += n;
    }
    const sums = b.finish();
    for (let k = 0; k * SUM_BLOCK_BYTES < big.length; k++) {
      expect(sums.crc32.readUInt32BE(4 * k)).toBe(crc32(big.subarray(k * SUM_BLOCK_BYTES, (k + 1) * SUM_BLOCK_BYTES)) >>> 0);
    }
    expect(crc32OfSums(sums, big.length)).toBe(crc32(big) >>> 0);
  });
});

describe('checkBuffer', () => {
  it('passes intact bytes and names the block of a flipped byte', () => {
    const sums = sumsOf(data, B);
    expect(checkBuffer(data, data.length, sums)).toBeUndefined();
    const bad = Buffer.from(data);
    bad[40] = (bad[40] as number) ^ 1;
    expect(checkBuffer(bad, data.length, sums)?.block).toBe(2);
    expect(checkBuffer(data.subarray(1), data.length, sums)?.block).toBe(-1);
  });
});

describe('alignedRange', () => {
  it.each([
    [{ start: 0, end: 69 }, { start: 0, end: 69 }],
    [{ start: 17, end: 18 }, { start: 16, end: 31 }],
    [{ start: 15, end: 16 }, { start: 0, end: 31 }],
    [{ start: 65, end: 69 }, { start: 64, end: 69 }],
  ])('%j reads %j', (range, aligned) => {
    expect(alignedRange(range, 70, B)).toEqual(aligned);
  });
});

describe('VerifyingStream', () => {
  it('passes the whole blob and any window of it, verified', async () => {
    expect((await verify(data, 70, { start: 0, end: 69 }, 0)).equals(data)).toBe(true);
    const a = alignedRange({ start: 20, end: 50 }, 70, B);
    const got = await verify(data.subarray(a.start, a.end + 1), 70, { start: 20, end: 50 }, a.start, 7);
    expect(got.equals(data.subarray(20, 51))).toBe(true);
  });

  it('fails on a flipped byte without passing on the bytes of that block', async () => {
    const bad = Buffer.from(data);
    bad[40] = (bad[40] as number) ^ 1;
    const chunks = [bad.subarray(0, 35), bad.subarray(35)];
    const v = new VerifyingStream(sumsOf(data, B), 70, { start: 0, end: 69 }, 0);
    const passed: Buffer[] = [];
    v.on('data', (c: Buffer) => passed.push(c));
    const err = await new Promise<unknown>((resolve) => {
      v.on('error', resolve);
      Readable.from(chunks).pipe(v);
    });
    expect(err).toBeInstanceOf(ChecksumMismatch);
    expect((err as ChecksumMismatch).block).toBe(2);
    expect(Buffer.concat(passed).equals(data.subarray(0, 32))).toBe(true); // blocks 0 and 1 only
  });

  it('fails on a blob shorter or longer than its size', async () => {
    await expect(verify(data.subarray(0, 60), 70, { start: 0, end: 69 }, 0)).rejects.toBeInstanceOf(ChecksumMismatch);
    await expect(verify(Buffer.concat([data, Buffer.from('x')]), 70, { start: 0, end: 69 }, 0)).rejects.toBeInstanceOf(ChecksumMismatch);
  });
});
