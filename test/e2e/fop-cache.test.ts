/**
 * The derived-result cache of fops on download URLs: hits, single-flight, LRU eviction under
 * GRANARY_FOP_CACHE_SIZE, restart, a new source hash, ETag/304, JSON never cached, private buckets.
 * `X-Granary-Cache: miss` marks the one request that computed a result.
 */
import { readdir, readFile, stat, writeFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const B = 'fcache';
const PRIV = 'fcache-private';
const fixture = (name: string): Promise<Buffer> => readFile(join(FIXTURE_IMAGES, name));

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

async function get(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<Got> {
  const res = await fetch(`${s.url}/${path}`, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** Every file under the cache directory with its size (temp dir excluded). */
async function cacheFiles(dataDir: string): Promise<{ name: string; size: number }[]> {
  const root = join(dataDir, 'fop-cache');
  const out: { name: string; size: number }[] = [];
  for (const sub of await readdir(root).catch(() => [] as string[])) {
    if (sub === 'tmp' || sub === 'key-id') continue;
    for (const name of await readdir(join(root, sub))) out.push({ name, size: (await stat(join(root, sub, name))).size });
  }
  return out;
}

describe('fop result cache', () => {
  let s: TestServer;
  let photo: Buffer;

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, B);
    await createBucket(s, PRIV);
    expect((await sdk(s.bucketManager().putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    photo = await fixture('orientation_landscape_1.jpg');
    await upload(s, B, 'photo.jpg', photo);
    await upload(s, PRIV, 'p.jpg', photo);
  }, 60_000);
  afterAll(async () => s.stop());

  it('the second identical request is a hit with the same bytes, ETag and headers', async () => {
    const a = await get(s, `${B}/photo.jpg?imageView2/1/w/120/h/90`);
    expect(a.status, a.body.toString()).toBe(200);
    expect(a.headers.get('x-granary-cache')).toBe('miss');
    const b = await get(s, `${B}/photo.jpg?imageView2/1/w/120/h/90`);
    expect(b.status).toBe(200);
    expect(b.headers.get('x-granary-cache')).toBe('hit');
    expect(b.body.equals(a.body)).toBe(true);
    for (const r of [a, b]) {
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      expect(r.headers.get('content-length')).toBe(String(r.body.length));
      expect(r.headers.get('cache-control')).toBe('public, max-age=31536000');
      expect(r.headers.get('etag')).toMatch(/^"[\w-]+\.[0-9a-f]{20}"$/);
    }
    expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
    const m = await sharp(b.body).metadata();
    expect([m.width, m.height]).toEqual([120, 90]);
    // Another pipeline is another result with another ETag.
    const c = await get(s, `${B}/photo.jpg?imageView2/1/w/60/h/45`);
    expect(c.headers.get('x-granary-cache')).toBe('miss');
    expect(c.headers.get('etag')).not.toBe(a.headers.get('etag'));
  });

  it('20 concurrent identical requests compute once', async () => {
    const all = await Promise.all(Array.from({ length: 20 }, () => get(s, `${B}/photo.jpg?imageView2/2/w/333/format/png`)));
    expect(all.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(all.filter((r) => r.headers.get('x-granary-cache') === 'miss')).toHaveLength(1);
    expect(all.filter((r) => r.headers.get('x-granary-cache') === 'hit')).toHaveLength(19);
    for (const r of all) expect(r.body.equals(all[0]!.body)).toBe(true);
    expect((await sharp(all[0]!.body).metadata()).format).toBe('png');
  });

  it('If-None-Match with the ETag is a 304 (cached or not); another ETag gets the body', async () => {
    const a = await get(s, `${B}/photo.jpg?imageView2/2/w/200`);
    const etag = a.headers.get('etag') as string;
    const nm = await get(s, `${B}/photo.jpg?imageView2/2/w/200`, { 'if-none-match': etag });
    expect(nm.status).toBe(304);
    expect(nm.body.length).toBe(0);
    expect(nm.headers.get('etag')).toBe(etag);
    const other = await get(s, `${B}/photo.jpg?imageView2/2/w/200`, { 'if-none-match': '"something-else"' });
    expect(other.status).toBe(200);
    expect(other.body.equals(a.body)).toBe(true);
    // A result not cached yet: computed, then 304 all the same.
    const fresh = await get(s, `${B}/photo.jpg?imageView2/2/w/201`);
    const etag2 = fresh.headers.get('etag') as string;
    const s2 = await startTestServer();
    try {
      await createBucket(s2, B);
      await upload(s2, B, 'photo.jpg', photo);
      const r = await get(s2, `${B}/photo.jpg?imageView2/2/w/201`, { 'if-none-match': etag2 });
      expect(r.status).toBe(304);
      expect(r.headers.get('x-granary-cache')).toBe('miss');
    } finally {
      await s2.stop();
    }
  });

  it('JSON fops are never cached and stay no-store', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await get(s, `${B}/photo.jpg?imageInfo`);
      expect(r.status).toBe(200);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('etag')).toBeNull();
      expect(r.headers.get('x-granary-cache')).toBeNull();
    }
    const before = (await cacheFiles(s.dataDir)).length;
    await get(s, `${B}/photo.jpg?imageView2/2/w/90|imageInfo`);
    expect((await cacheFiles(s.dataDir)).length).toBe(before);
  });

  it('overwriting the source (a new hash) gives a fresh result', async () => {
    await upload(s, B, 'changing.jpg', photo);
    const a = await get(s, `${B}/changing.jpg?imageView2/2/w/100`);
    expect(a.headers.get('x-granary-cache')).toBe('miss');
    expect(await sharp(a.body).metadata()).toMatchObject({ width: 100, height: 75 });
    const portrait = await sharp(photo).rotate(90).jpeg().toBuffer();
    await upload(s, B, 'changing.jpg', portrait);
    const b = await get(s, `${B}/changing.jpg?imageView2/2/w/100`);
    expect(b.status).toBe(200);
    expect(b.headers.get('x-granary-cache')).toBe('miss');
    expect(b.headers.get('etag')).not.toBe(a.headers.get('etag'));
    expect(await sharp(b.body).metadata()).toMatchObject({ width: 100, height: 133 });
    // The old ETag no longer revalidates.
    expect((await get(s, `${B}/changing.jpg?imageView2/2/w/100`, { 'if-none-match': a.headers.get('etag') as string })).status).toBe(200);
  });

  it('a private bucket is authorised before the cache: unsigned is 401 even for a cached result', async () => {
    const deadline = Math.floor(Date.now() / 1000) + 3600;
    const url = s.bucketManager().privateDownloadUrl(`${s.url}/${PRIV}`, 'p.jpg?imageView2/1/w/40/h/30', deadline);
    const first = await fetch(url);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-granary-cache')).toBe('miss');
    expect(first.headers.get('cache-control')).toBe('private, max-age=0');
    await first.arrayBuffer();
    const second = await fetch(url);
    expect(second.headers.get('x-granary-cache')).toBe('hit');
    await second.arrayBuffer();
    const unsigned = await get(s, `${PRIV}/p.jpg?imageView2/1/w/40/h/30`);
    expect(unsigned.status).toBe(401);
    const etag = second.headers.get('etag') as string;
    expect((await get(s, `${PRIV}/p.jpg?imageView2/1/w/40/h/30`, { 'if-none-match': etag })).status).toBe(401);
  });

  it('evicts the least recently used results beyond GRANARY_FOP_CACHE_SIZE', async () => {
    const pipes = { a: 'imageView2/2/w/300', b: 'imageView2/2/w/200', c: 'imageView2/2/w/260' };
    const size: Record<string, number> = {};
    for (const [k, p] of Object.entries(pipes)) size[k] = (await get(s, `${B}/photo.jpg?${p}`)).body.length;
    const bound = size.a! + Math.max(size.b!, size.c!);
    expect(bound).toBeLessThan(size.a! + size.b! + size.c!);
    const small = await startTestServer({ GRANARY_FOP_CACHE_SIZE: String(bound) });
    try {
      await createBucket(small, B);
      await upload(small, B, 'photo.jpg', photo);
      const label = async (k: keyof typeof pipes): Promise<string | null> =>
        (await get(small, `${B}/photo.jpg?${pipes[k]}`)).headers.get('x-granary-cache');
      expect(await label('a')).toBe('miss');
      expect(await label('b')).toBe('miss');
      expect(await label('a')).toBe('hit'); // a is now more recent than b
      expect(await label('c')).toBe('miss'); // over the bound: b goes
      const files = await cacheFiles(small.dataDir);
      expect(files).toHaveLength(2);
      expect(files.reduce((n, f) => n + f.size, 0)).toBeLessThanOrEqual(bound);
      expect(await label('c')).toBe('hit');
      expect(await label('a')).toBe('hit');
      expect(await label('b')).toBe('miss');
      // A result larger than the whole cache is served, not stored.
      const big = await get(small, `${B}/photo.jpg?imageView2/2/w/600/format/png`);
      expect(big.status).toBe(200);
      expect(big.body.length).toBeGreaterThan(bound);
      expect(big.headers.get('x-granary-cache')).toBe('bypass');
      expect(big.headers.get('content-length')).toBe(String(big.body.length));
    } finally {
      await small.stop();
    }
  });

  it('GRANARY_FOP_CACHE_SIZE=0 disables the cache (ETag and 304 still work)', async () => {
    const off = await startTestServer({ GRANARY_FOP_CACHE_SIZE: '0' });
    try {
      await createBucket(off, B);
      await upload(off, B, 'photo.jpg', photo);
      const a = await get(off, `${B}/photo.jpg?imageView2/2/w/100`);
      const b = await get(off, `${B}/photo.jpg?imageView2/2/w/100`);
      for (const r of [a, b]) {
        expect(r.status).toBe(200);
        expect(r.headers.get('x-granary-cache')).toBe('bypass');
      }
      expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
      expect((await get(off, `${B}/photo.jpg?imageView2/2/w/100`, { 'if-none-match': a.headers.get('etag') as string })).status).toBe(304);
      expect(await cacheFiles(off.dataDir)).toEqual([]);
    } finally {
      await off.stop();
    }
  });

  it('a restart keeps serving hits; temp leftovers and foreign files are removed', async () => {
    const first = await startTestServer();
    const dataDir = first.dataDir;
    let second: TestServer | undefined;
    try {
      await createBucket(first, B);
      await upload(first, B, 'photo.jpg', photo);
      const a = await get(first, `${B}/photo.jpg?imageView2/1/w/77`);
      expect(a.headers.get('x-granary-cache')).toBe('miss');
      await first.running.close();
      // A crash mid-write leaves a temp file; something else may have dropped a file in the tree.
      await writeFile(join(dataDir, 'fop-cache', 'tmp', 'deadbeef.tmp'), 'half a thumbnail');
      await mkdir(join(dataDir, 'fop-cache', 'zz'), { recursive: true });
      await writeFile(join(dataDir, 'fop-cache', 'zz', 'not-an-entry'), 'junk');
      second = await startTestServer({ GRANARY_DATA_DIR: dataDir });
      const b = await get(second, `${B}/photo.jpg?imageView2/1/w/77`);
      expect(b.status).toBe(200);
      expect(b.headers.get('x-granary-cache')).toBe('hit');
      expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
      expect(b.body.equals(a.body)).toBe(true);
      expect(await readdir(join(dataDir, 'fop-cache', 'tmp'))).toEqual([]);
      expect(await readdir(join(dataDir, 'fop-cache', 'zz'))).toEqual([]);
    } finally {
      await second?.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
