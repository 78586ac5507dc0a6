/**
 * DigestingStream (objects/etag.ts): the digests of what flows through, with the optional ones (MD5, the whole
 * CRC-32) skipped on request; the etag and the per-block checksums are always computed.
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

  it('skips the MD5 or the whole CRC-32 on request, with the same etag and block checksums', async () => {
    const all = await digestsOf(data);
    const noMd5 = await digestsOf(data, { md5: false });
    const noCrc = await digestsOf(data, { crc32: false });
    expect(noMd5.md5).toBe('');
    expect(noMd5.crc32).toBe(all.crc32);
    expect(noCrc.crc32).toBe(0);
    expect(noCrc.md5).toBe(all.md5);
    for (const d of [noMd5, noCrc]) {
      expect(d.etag).toBe(all.etag);
      expect(d.sums).toEqual(all.sums);
      expect(d.head).toEqual(all.head);
    }
  });
});
