/**
 * The etag check of `granary migrate --data-dir` (src/migrate/content-check.ts) against the independent qetag of
 * test/helpers/etag.ts: plain etags (one block, several blocks), v2 multipart etags (0x9e, parts not all 4 MiB)
 * recomputed from the entry's part sizes, chunk boundaries anywhere, and each kind of mismatch named.
 */
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { checkBuffer, ContentCheck } from '../../src/migrate/content-check.js';
import { seededBytes } from '../helpers/files.js';
import { qetag, qetagV2 } from '../helpers/etag.js';

const MiB = 1024 * 1024;
const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

/** Streams `bytes` through a ContentCheck in chunks of `chunk` bytes. */
async function streamCheck(entry: ConstructorParameters<typeof ContentCheck>[0], bytes: Buffer, chunk: number): Promise<ReturnType<ContentCheck['result']>> {
  const check = new ContentCheck(entry);
  const chunks = Array.from({ length: Math.ceil(bytes.length / chunk) }, (_, i) => bytes.subarray(i * chunk, (i + 1) * chunk));
  await pipeline(Readable.from(chunks), check, new Writable({ write: (_c, _e, cb) => cb() }));
  return check.result();
}

describe('ContentCheck', () => {
  it('accepts bytes matching a one-block and a multi-block etag, with their MD5', async () => {
    for (const size of [0, 5, 4 * MiB, 9 * MiB + 3]) {
      const bytes = seededBytes(`plain-${size}`, size);
      const r = await checkBuffer({ fsize: size, hash: qetag(bytes), md5: md5(bytes) }, bytes);
      expect(r.mismatch, `size ${size}`).toBeUndefined();
      expect(r.etag).toBe(qetag(bytes));
      expect(r.sums.crc32.length).toBe(Math.ceil(size / (256 * 1024)) * 4);
    }
  });

  it('recomputes a v2 etag (0x9e) from the part sizes, across chunk boundaries that straddle parts', async () => {
    const parts = [seededBytes('p1', 5 * MiB), seededBytes('p2', 5 * MiB), seededBytes('p3', 123_457)];
    const bytes = Buffer.concat(parts);
    const hash = qetagV2(parts);
    expect(hash).toMatch(/^n/);
    const entry = { fsize: bytes.length, hash, md5: md5(bytes), parts: parts.map((p) => p.length) };
    for (const chunk of [65_536, 1_000_003]) expect((await streamCheck(entry, bytes, chunk)).mismatch).toBeUndefined();
    // The same bytes under other part sizes give another etag: reported.
    const other = await streamCheck({ ...entry, parts: [4 * MiB, 6 * MiB, 123_457] }, bytes, 65_536);
    expect(other.mismatch).toMatch(/^etag .* computed, the entry says n/);
  });

  it('names a size, an etag and an MD5 mismatch', async () => {
    const bytes = seededBytes('x', 1000);
    const good = { fsize: 1000, hash: qetag(bytes), md5: md5(bytes) };
    expect((await checkBuffer({ ...good, fsize: 999 }, bytes)).mismatch).toBe('1000 bytes read, the entry says 999');
    const flipped = Buffer.from(bytes);
    flipped[10] = (flipped[10] as number) ^ 1;
    expect((await checkBuffer(good, flipped)).mismatch).toMatch(/^etag \S+ computed, the entry says /);
    expect((await checkBuffer({ ...good, md5: md5(flipped) }, bytes)).mismatch).toMatch(/^MD5 /);
    expect((await checkBuffer({ ...good, md5: '' }, bytes)).mismatch, 'no MD5 recorded: the etag decides').toBeUndefined();
  });
});
