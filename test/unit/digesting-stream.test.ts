/**
 * DigestingStream (objects/etag.ts): the digests of what flows through, the MD5 skipped on request; the etag, the
 * per-block checksums and the whole CRC-32 (combined from them, objects/crc32-combine.ts) are always computed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DigestingStream, type DigestChoice, type Digests } from '../../src/objects/etag.js';

async function digestsOf(data: Buffer, choice?: DigestChoice): Promise<Digests> {
  const d = new DigestingStream(Number.POSITIVE_INFINITY, undefined, choice);
  // 64 KiB pieces, as a socket delivers them.
  const pieces = Array.from({ length: Math.ceil(data.length / 65536) }, (_, i) => data.subarray(i * 65536, (i + 1) * 65536));
  await pipeline(Readable.from(pieces), d, new Writable({ write: (_c, _e, cb) => cb() }));
  return d.digests();
}

describe('DigestingStream', () => {
  const data = randomBytes(5 * 1024 * 1024 + 123); // two Kodo blocks

  it('computes every digest by default', async () => {
    const all = await digestsOf(data);
    expect(all.size).toBe(data.length);
    expect(all.md5).toBe(createHash('md5').update(data).digest('hex'));
    expect(all.crc32).toBe(crc32(data) >>> 0);
    expect(all.blockSha1s).toHaveLength(2);
  });

  it('skips the MD5 on request, with the same etag, CRC-32 and block checksums', async () => {
    const all = await digestsOf(data);
    const noMd5 = await digestsOf(data, { md5: false });
    expect(noMd5.md5).toBe('');
    expect(noMd5.crc32).toBe(all.crc32);
    expect(noMd5.etag).toBe(all.etag);
    expect(noMd5.sums).toEqual(all.sums);
    expect(noMd5.head).toEqual(all.head);
  });

  it('the whole CRC-32 matches zlib for sizes around the 256 KiB checksum blocks, and for empty content', async () => {
    for (const size of [0, 1, 4096, 262143, 262144, 262145, 3 * 262144, 3 * 262144 + 17, 4 * 1024 * 1024]) {
      const bytes = data.subarray(0, size);
      expect((await digestsOf(bytes)).crc32, `${size} bytes`).toBe(crc32(bytes) >>> 0);
    }
  });
});
