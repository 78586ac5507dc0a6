/**
 * Bucket download settings (docs/development/kodo-protocol.md §8.6, §11) set with the official SDK's BucketManager and enforced over
 * plain HTTP: max-age (Cache-Control of downloads and fop results), referer anti-leech (white/black lists, empty
 * Referer, `*.domain`, CDN domains (GRANARY_CDN_DOMAINS) vs the source station with source_enabled, signed URLs), original protection (styles
 * and signed URLs served, originals and raw fops refused), their bucketInfo fields, authorisation and bad input.
 * CORS rules are in bucket-settings-cors.test.ts, the CLI in bucket-settings-cli.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { rawRequest, signedFetch, upload, type RawResponse } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const PUB = 'settings-pub';
const PRIV = 'settings-priv';
const PROT = 'settings-prot';
const ALICE_B = 'settings-alice';
/** A bound domain listed in GRANARY_CDN_DOMAINS (a CDN serves it); ORIGIN_DOMAIN is bound but not a CDN domain. */
const DOMAIN = 'pub.settings.test';
const ORIGIN_DOMAIN = 'pub.origin.example';
/** GRANARY_SOURCE_DOMAIN: `<bucket>.src.settings.test` is each bucket's default source domain. */
const SOURCE_PARENT = 'src.settings.example';
const THUMB = 'imageView2/1/w/50/h/40';
const b64 = (t: string): string => Buffer.from(t).toString('base64url');

type ErrorBody = { error: string };
type Info = Record<string, unknown>;

let s: TestServer;
let bm: qiniu.rs.BucketManager;
let alice: qiniu.rs.BucketManager;
let photo: Buffer;

/** A GET (or other method) with exact headers; `host` selects a bound domain. */
function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawResponse> {
  return rawRequest({ port: s.running.port, method, path, headers });
}
const viaDomain = (path: string, headers: Record<string, string> = {}): Promise<RawResponse> => get(path, { Host: DOMAIN, ...headers });
const errorOf = (r: RawResponse): string => (JSON.parse(r.body.toString()) as ErrorBody).error;
const info = async (bucket: string, m = bm): Promise<Info> => {
  const r = await sdk<Info>(m.getBucketInfo(bucket));
  expect(r.status).toBe(200);
  return r.data;
};
/** A signed download URL's path + query for `key` (may carry a `?fop`) of `bucket`, valid `ttl` seconds. */
function signedPath(bucket: string, key: string, ttl = 600): string {
  const u = new URL(bm.privateDownloadUrl(`${s.url}/${bucket}`, key, Math.floor(s.clock.nowMs() / 1000) + ttl));
  return u.pathname + u.search;
}
const referAntiLeech = (bucket: string, opts: Record<string, unknown>, m = bm) =>
  sdk<ErrorBody>(m.putReferAntiLeech(bucket, opts as { mode: number; norefer: number; pattern: string }));

beforeAll(async () => {
  s = await startTestServer({ GRANARY_CDN_DOMAINS: '*.settings.test, other.cdn.test', GRANARY_SOURCE_DOMAIN: SOURCE_PARENT });
  bm = s.bucketManager();
  for (const b of [PUB, PRIV, PROT]) await createBucket(s, b);
  expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
  photo = await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_1.jpg'));
  await upload(s, PUB, 'hello.txt', 'hello');
  await upload(s, PUB, 'photo.jpg', photo);
  await upload(s, PRIV, 'secret.txt', 'secret');
  await upload(s, PROT, 'photo.jpg', photo);
  await bindDomain(s.running.g, DOMAIN, PUB);
  await bindDomain(s.running.g, ORIGIN_DOMAIN, PUB);
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey), s.zoneConfig());
  expect((await sdk(alice.createBucket(ALICE_B, { regionId: 'z0' }))).status).toBe(200);
}, 60_000);
afterAll(async () => s.stop());

describe('bucketInfo before any setting', () => {
  it('shows Kodo defaults', async () => {
    expect(await info(PUB)).toMatchObject({
      max_age: 0,
      protected: 0,
      anti_leech_mode: 0,
      no_refer: false,
      source_enabled: false,
    });
    // Kodo leaves empty referer lists out.
    expect(await info(PUB)).not.toHaveProperty('refer_wl');
    expect(await info(PUB)).not.toHaveProperty('refer_bl');
  });
});

describe('maxAge', () => {
  it('sets Cache-Control of downloads, HEAD and fop results; updates; ≤ 0 is the default', async () => {
    expect((await get(`/${PUB}/hello.txt`)).headers['cache-control']).toBe('public, max-age=31536000');
    expect((await sdk(bm.putBucketMaxAge(PUB, { maxAge: 3600 }))).status).toBe(200);
    expect((await info(PUB)).max_age).toBe(3600);
    expect((await get(`/${PUB}/hello.txt`)).headers['cache-control']).toBe('public, max-age=3600');
    expect((await get(`/${PUB}/hello.txt`, {}, 'HEAD')).headers['cache-control']).toBe('public, max-age=3600');
    expect((await viaDomain('/hello.txt')).headers['cache-control']).toBe('public, max-age=3600');
    const thumb = await get(`/${PUB}/photo.jpg?${THUMB}`);
    expect(thumb.status).toBe(200);
    expect(thumb.headers['cache-control']).toBe('public, max-age=3600');
    const again = await get(`/${PUB}/photo.jpg?${THUMB}`);
    expect(again.headers['x-granary-cache']).toBe('hit');
    expect(again.headers['cache-control']).toBe('public, max-age=3600');
    // JSON fops stay uncacheable.
    expect((await get(`/${PUB}/photo.jpg?imageInfo`)).headers['cache-control']).toBe('no-store');

    expect((await sdk(bm.putBucketMaxAge(PUB, { maxAge: 120 }))).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`)).headers['cache-control']).toBe('public, max-age=120');
    // The SDK turns 0 into 31536000.
    expect((await sdk(bm.putBucketMaxAge(PUB, { maxAge: 0 }))).status).toBe(200);
    expect((await info(PUB)).max_age).toBe(31536000);
  });

  it('accepts the parameters in a form body too', async () => {
    const r = await signedFetch(s, { path: '/maxAge', body: `bucket=${PUB}&maxAge=600` });
    expect(r.status, await r.text()).toBe(200);
    expect((await info(PUB)).max_age).toBe(600);
    expect((await get(`/${PUB}/hello.txt`)).headers['cache-control']).toBe('public, max-age=600');
  });

  it('private buckets: private, max-age=0 until set, then capped by the signed URL deadline', async () => {
    expect((await get(signedPath(PRIV, 'secret.txt'))).headers['cache-control']).toBe('private, max-age=0');
    expect((await sdk(bm.putBucketMaxAge(PRIV, { maxAge: 60 }))).status).toBe(200);
    expect((await get(signedPath(PRIV, 'secret.txt'))).headers['cache-control']).toBe('private, max-age=60');
    const short = await get(signedPath(PRIV, 'secret.txt', 30));
    expect(short.status).toBe(200);
    // The seconds left on the URL (30 when signed, fewer once time passes), not the bucket's 60.
    const left = /^private, max-age=(\d+)$/.exec(String(short.headers['cache-control']))?.[1];
    expect(Number(left)).toBeGreaterThan(20);
    expect(Number(left)).toBeLessThanOrEqual(30);
  });

  it('refuses bad values (400 naming maxAge), unknown buckets (631) and other accounts (403)', async () => {
    const bad = await sdk<ErrorBody>(bm.putBucketMaxAge(PUB, { maxAge: 'soon' as unknown as number }));
    expect(bad.status).toBe(400);
    expect(bad.data.error).toMatch(/maxAge/);
    const missing = await signedFetch(s, { path: `/maxAge?bucket=${PUB}` });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as ErrorBody).error).toMatch(/maxAge/);
    expect((await sdk(bm.putBucketMaxAge('no-such-bucket', { maxAge: 10 }))).status).toBe(631);
    expect((await sdk(alice.putBucketMaxAge(PUB, { maxAge: 10 }))).status).toBe(403);
    expect((await sdk(alice.putBucketMaxAge(ALICE_B, { maxAge: 10 }))).status).toBe(200);
    expect((await info(ALICE_B, alice)).max_age).toBe(10);
    expect((await fetch(`${s.url}/maxAge?bucket=${PUB}&maxAge=5`, { method: 'POST' })).status).toBe(401);
  });
});

describe('referer anti-leech', () => {
  const GOOD = { Referer: 'https://example.com/page.html' };
  const SUB = { Referer: 'http://img.example.com:8080/gallery' };
  const EVIL = { Referer: 'https://evil.test/steal' };

  it('white list with *.domain, source_enabled=1: enforced path-style, on bound domains, fops and styles', async () => {
    const r = await referAntiLeech(PUB, { mode: 1, norefer: 0, pattern: 'example.com;*.example.com', source_enabled: 1 });
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    expect(await info(PUB)).toMatchObject({ anti_leech_mode: 1, refer_wl: ['example.com', '*.example.com'], no_refer: false, source_enabled: true });
    expect(await info(PUB)).not.toHaveProperty('refer_bl');
    expect((await get(`/${PUB}/hello.txt`, GOOD)).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`, SUB)).status).toBe(200);
    const evil = await get(`/${PUB}/hello.txt`, EVIL);
    expect(evil.status).toBe(403);
    expect(errorOf(evil)).toMatch(/referer.*evil\.test is not in the white list/i);
    expect(evil.headers['content-type']).toMatch(/application\/json/);
    expect(evil.headers.vary).toMatch(/Referer/);
    const none = await get(`/${PUB}/hello.txt`);
    expect(none.status).toBe(403);
    expect(errorOf(none)).toMatch(/without a Referer/);
    expect((await get(`/${PUB}/hello.txt`, { Referer: 'https://notexample.com/' })).status).toBe(403);
    // *.example.com does not cover example.com itself: only the exact rule lets it through.
    await referAntiLeech(PUB, { mode: 1, norefer: 0, pattern: '*.example.com', source_enabled: 1 });
    expect((await get(`/${PUB}/hello.txt`, GOOD)).status).toBe(403);
    expect((await get(`/${PUB}/hello.txt`, SUB)).status).toBe(200);
    // Bound domains, fop URLs, styles and HEAD are checked too.
    expect((await viaDomain('/hello.txt', EVIL)).status).toBe(403);
    expect((await viaDomain('/hello.txt', SUB)).status).toBe(200);
    expect((await get(`/${PUB}/photo.jpg?${THUMB}`, EVIL)).status).toBe(403);
    expect((await get(`/${PUB}/photo.jpg?${THUMB}`, SUB)).status).toBe(200);
    expect((await signedFetch(s, { path: `/style/${PUB}/name/${b64('thumb')}/style/${b64(THUMB)}`, scheme: 'QBox' })).status).toBe(200);
    expect((await get(`/${PUB}/photo.jpg-thumb`, EVIL)).status).toBe(403);
    expect((await get(`/${PUB}/photo.jpg-thumb`, SUB)).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`, EVIL, 'HEAD')).status).toBe(403);
  });

  it('norefer=1 lets requests without a Referer through', async () => {
    await referAntiLeech(PUB, { mode: 1, norefer: 1, pattern: 'example.com', source_enabled: 1 });
    expect((await info(PUB)).no_refer).toBe(true);
    expect((await get(`/${PUB}/hello.txt`)).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`, EVIL)).status).toBe(403);
  });

  it('black list refuses listed Referers (and empty ones unless norefer=1)', async () => {
    await referAntiLeech(PUB, { mode: 2, norefer: 0, pattern: 'evil.test;*.evil.test', source_enabled: 1 });
    expect(await info(PUB)).toMatchObject({ anti_leech_mode: 2, refer_bl: ['evil.test', '*.evil.test'], no_refer: false });
    expect(await info(PUB)).not.toHaveProperty('refer_wl');
    const evil = await get(`/${PUB}/hello.txt`, EVIL);
    expect(evil.status).toBe(403);
    expect(errorOf(evil)).toMatch(/in the black list/);
    expect((await get(`/${PUB}/hello.txt`, { Referer: 'https://cdn.evil.test/' })).status).toBe(403);
    expect((await get(`/${PUB}/hello.txt`, GOOD)).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`)).status).toBe(403);
    await referAntiLeech(PUB, { mode: 2, norefer: 1, pattern: 'evil.test', source_enabled: 1 });
    expect((await get(`/${PUB}/hello.txt`)).status).toBe(200);
  });

  it('source_enabled=0 (the SDK default) checks CDN domains only (GRANARY_CDN_DOMAINS), never the source station', async () => {
    await referAntiLeech(PUB, { mode: 1, norefer: 0, pattern: 'example.com' });
    expect((await info(PUB)).source_enabled).toBe(false);
    expect((await get(`/${PUB}/hello.txt`, EVIL)).status).toBe(200);
    expect((await get(`/${PUB}/photo.jpg?${THUMB}`, EVIL)).status).toBe(200);
    // A bound domain that is not a CDN domain and the bucket's source domain are Granary's own (the source station).
    expect((await get('/hello.txt', { Host: ORIGIN_DOMAIN, ...EVIL })).status).toBe(200);
    expect((await get('/hello.txt', { Host: `${PUB}.${SOURCE_PARENT}:${s.running.port}` })).status).toBe(200);
    // The CDN domain (listed as *.settings.test) is checked.
    expect((await viaDomain('/hello.txt', EVIL)).status).toBe(403);
    expect((await viaDomain(`/photo.jpg?${THUMB}`, EVIL)).status).toBe(403);
    expect((await viaDomain('/hello.txt')).status).toBe(403);
    expect((await viaDomain('/hello.txt', GOOD)).status).toBe(200);
    // source_enabled=1: everywhere.
    await referAntiLeech(PUB, { mode: 1, norefer: 0, pattern: 'example.com', source_enabled: 1 });
    expect((await get('/hello.txt', { Host: ORIGIN_DOMAIN, ...EVIL })).status).toBe(403);
    expect((await get('/hello.txt', { Host: `${PUB}.${SOURCE_PARENT}`, ...EVIL })).status).toBe(403);
    expect((await get('/hello.txt', { Host: `${PUB}.${SOURCE_PARENT}`, ...GOOD })).status).toBe(200);
  });

  it('signed private URLs are checked too', async () => {
    await referAntiLeech(PRIV, { mode: 1, norefer: 0, pattern: 'example.com', source_enabled: 1 });
    const path = signedPath(PRIV, 'secret.txt');
    expect((await get(path, GOOD)).status).toBe(200);
    expect((await get(path, EVIL)).status).toBe(403);
  });

  it('mode 0 switches it off and restores the defaults', async () => {
    await referAntiLeech(PUB, { mode: 0 });
    expect(await info(PUB)).toMatchObject({ anti_leech_mode: 0, no_refer: false, source_enabled: false });
    expect(Object.keys(await info(PUB))).not.toEqual(expect.arrayContaining(['refer_wl']));
    expect(Object.keys(await info(PUB))).not.toEqual(expect.arrayContaining(['refer_bl']));
    expect((await viaDomain('/hello.txt', EVIL)).status).toBe(200);
    expect((await get(`/${PUB}/hello.txt`)).headers.vary).toBeUndefined();
  });

  it('refuses bad parameters (400 naming them), unknown buckets (631) and other accounts (403)', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ mode: 3, norefer: 0, pattern: '*' }, /mode/],
      [{ mode: 1, norefer: 2, pattern: '*' }, /norefer/],
      [{ mode: 1, norefer: 0, pattern: '*', source_enabled: 'yes' }, /source_enabled/],
      [{ mode: 1, norefer: 0, pattern: 'https://example.com/' }, /pattern/],
      [{ mode: 1, norefer: 0, pattern: ';' }, /pattern/],
    ];
    for (const [opts, msg] of cases) {
      const r = await referAntiLeech(PUB, opts);
      expect(r.status, JSON.stringify(opts)).toBe(400);
      expect(r.data.error).toMatch(msg);
    }
    expect((await info(PUB)).anti_leech_mode).toBe(0);
    expect((await referAntiLeech('no-such-bucket', { mode: 1, norefer: 0, pattern: '*' })).status).toBe(631);
    expect((await referAntiLeech(PUB, { mode: 1, norefer: 0, pattern: '*' }, alice)).status).toBe(403);
    expect((await referAntiLeech(ALICE_B, { mode: 1, norefer: 1, pattern: '*' }, alice)).status).toBe(200);
  });
});

describe('original protection', () => {
  const size = async (body: Buffer): Promise<[number | undefined, number | undefined]> => {
    const m = await sharp(body).metadata();
    return [m.width, m.height];
  };

  beforeAll(async () => {
    expect((await signedFetch(s, { path: `/style/${PROT}/name/${b64('thumb')}/style/${b64(THUMB)}`, scheme: 'QBox' })).status).toBe(200);
  });

  it('refuses the original and raw fops, serves styles', async () => {
    expect((await sdk(bm.putBucketAccessStyleMode(PROT, 1))).status).toBe(200);
    expect((await info(PROT)).protected).toBe(1);
    const original = await get(`/${PROT}/photo.jpg`);
    expect(original.status).toBe(403);
    expect(errorOf(original)).toMatch(/protects its originals/);
    expect((await get(`/${PROT}/photo.jpg`, {}, 'HEAD')).status).toBe(403);
    expect((await get(`/${PROT}/photo.jpg?${THUMB}`)).status).toBe(403);
    expect((await get(`/${PROT}/photo.jpg?imageInfo`)).status).toBe(403);
    expect((await get(`/${PROT}/missing.jpg`)).status).toBe(403);
    const styled = await get(`/${PROT}/photo.jpg-thumb`);
    expect(styled.status).toBe(200);
    expect(await size(styled.body)).toEqual([50, 40]);
    const byQuery = await get(`/${PROT}/photo.jpg?style/thumb`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.body.equals(styled.body)).toBe(true);
    // A style followed by further fops could undo what the style hides.
    expect((await get(`/${PROT}/photo.jpg-thumb?imageInfo`)).status).toBe(403);
    expect((await get(`/${PROT}/photo.jpg?style/thumb|imageInfo`)).status).toBe(403);
  });

  it('serves signed URLs: the original and raw fops; a bad token is 401', async () => {
    const ok = await get(signedPath(PROT, 'photo.jpg'));
    expect(ok.status).toBe(200);
    expect(ok.body.equals(photo)).toBe(true);
    const fop = await get(signedPath(PROT, `photo.jpg?${THUMB}`));
    expect(fop.status).toBe(200);
    expect(await size(fop.body)).toEqual([50, 40]);
    const forged = signedPath(PROT, 'photo.jpg').replace(/token=([^:]+):.*/, 'token=$1:AAAA');
    expect((await get(forged)).status).toBe(401);
    const expired = signedPath(PROT, 'photo.jpg', -10);
    expect((await get(expired)).status).toBe(401);
  });

  it('mode 0 serves originals again', async () => {
    expect((await sdk(bm.putBucketAccessStyleMode(PROT, 0))).status).toBe(200);
    expect((await info(PROT)).protected).toBe(0);
    expect((await get(`/${PROT}/photo.jpg`)).status).toBe(200);
    expect((await get(`/${PROT}/photo.jpg?${THUMB}`)).status).toBe(200);
  });

  it('refuses bad modes (400), unknown buckets (631) and other accounts (403)', async () => {
    const bad = await sdk<ErrorBody>(bm.putBucketAccessStyleMode(PROT, 2));
    expect(bad.status).toBe(400);
    expect(bad.data.error).toMatch(/mode/);
    expect((await sdk(bm.putBucketAccessStyleMode('no-such-bucket', 1))).status).toBe(631);
    expect((await sdk(alice.putBucketAccessStyleMode(PROT, 1))).status).toBe(403);
    expect((await sdk(alice.putBucketAccessStyleMode(ALICE_B, 1))).status).toBe(200);
    expect((await info(ALICE_B, alice)).protected).toBe(1);
  });
});
