/**
 * crc32Combine (objects/crc32-combine.ts): the CRC-32 of a concatenation from its parts' CRC-32s equals zlib's
 * CRC-32 of the whole, for random splits, empty parts and lengths with many set bits.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32Combine } from '../../src/objects/crc32-combine.js';

describe('crc32Combine', () => {
  it('equals the CRC-32 of the whole for random splits', () => {
    const data = randomBytes(70_000);
    for (let i = 0; i < 300; i++) {
      const cut = Math.floor(Math.random() * (data.length + 1));
      const end = cut + Math.floor(Math.random() * (data.length - cut + 1));
      const a = data.subarray(0, cut);
      const b = data.subarray(cut, end);
      expect(crc32Combine(crc32(a), crc32(b), b.length), `${cut}/${end}`).toBe(crc32(data.subarray(0, end)) >>> 0);
    }
  });

  it('handles empty parts and a chain of parts', () => {
    const data = randomBytes(1_000_003);
    expect(crc32Combine(crc32(data), 0, 0)).toBe(crc32(data) >>> 0);
    expect(crc32Combine(0, crc32(data), data.length)).toBe(crc32(data) >>> 0);
    let crc = 0;
    const sizes = [1, 262144, 65535, 131071, 7, 500_000];
    let off = 0;
    for (const n of sizes) {
      const part = data.subarray(off, off + n);
      crc = crc32Combine(crc, crc32(part), part.length);
      off += n;
    }
    expect(crc).toBe(crc32(data.subarray(0, off)) >>> 0);
  });
});
