/**
 * Bucket image styles (docs/development/kodo-protocol.md §10.1, §6 bucketInfo `separator`/`styles`): management routes on the uc host,
 * `<key><sep><style>` downloads (path style, bound domains, private signed URLs), several separators,
 * `?style/<name>`, exact keys winning over styles, authorisation and bad input.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { styleCandidates } from '../../src/buckets/styles.js';
import { rawRequest, signedFetch, upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const B = 'styled';
const PRIV = 'styled-private';
const THUMB = 'imageView2/1/w/50/h/40';
const b64 = (s: string): string => Buffer.from(s).toString('base64url');

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

async function get(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<Got> {
  const res = await fetch(`${s.url}/${path}`, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

const size = async (body: Buffer): Promise<[number | undefined, number | undefined]> => {
  const m = await sharp(body).metadata();
  return [m.width, m.height];
};

describe('styles: pure key matching', () => {
  it('matches <prefix><sep><name> for defined names, longest name first', () => {
    const st = { separator: '-!', styles: { thumb: 'imageInfo', 'big-thumb': 'imageAve', x: 'imageInfo' } };
    expect(styleCandidates(st, 'a.jpg-thumb')).toEqual([{ key: 'a.jpg', name: 'thumb', pipeline: 'imageInfo' }]);
    expect(styleCandidates(st, 'a.jpg!big-thumb')).toEqual([
      { key: 'a.jpg', name: 'big-thumb', pipeline: 'imageAve' },
      { key: 'a.jpg!big', name: 'thumb', pipeline: 'imageInfo' },
    ]);
    expect(styleCandidates(st, 'a.jpg_thumb')).toEqual([]);
    expect(styleCandidates(st, '-thumb')).toEqual([]);
    expect(styleCandidates(st, 'thumb')).toEqual([]);
  });
});

describe('styles', () => {
  let s: TestServer;
  let photo: Buffer;
  let alice: qiniu.auth.digest.Mac;

  const manage = (path: string, mac?: qiniu.auth.digest.Mac): Promise<Response> =>
    signedFetch(s, { path, scheme: 'QBox', ...(mac ? { mac } : {}) });
  const setStyle = (bucket: string, name: string, fop: string, mac?: qiniu.auth.digest.Mac): Promise<Response> =>
    manage(`/style/${bucket}/name/${b64(name)}/style/${b64(fop)}`, mac);
  const info = async (bucket: string): Promise<{ separator: string; styles: Record<string, string> }> => {
    const r = await sdk<{ separator: string; styles: Record<string, string> }>(s.bucketManager().getBucketInfo(bucket));
    expect(r.status).toBe(200);
    return r.data;
  };

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, B);
    await createBucket(s, PRIV);
    expect((await sdk(s.bucketManager().putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    photo = await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_1.jpg'));
    await upload(s, B, 'photo.jpg', photo);
    await upload(s, PRIV, 'p.jpg', photo);
    const pair = await s.running.g.keyIndex.create(0);
    alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
  }, 60_000);
  afterAll(async () => s.stop());

  it('bucketInfo shows the default separator and no styles', async () => {
    expect(await info(B)).toMatchObject({ separator: '-', styles: {} });
  });

  it('a style set over the uc API serves <key>-<style>, sharing the fop result and ETag', async () => {
    const r = await setStyle(B, 'thumb', THUMB);
    expect(r.status, await r.text()).toBe(200);
    expect((await info(B)).styles).toEqual({ thumb: THUMB });
    const styled = await get(s, `${B}/photo.jpg-thumb`);
    expect(styled.status, styled.body.toString()).toBe(200);
    expect(styled.headers.get('content-type')).toBe('image/jpeg');
    expect(await size(styled.body)).toEqual([50, 40]);
    const direct = await get(s, `${B}/photo.jpg?${THUMB}`);
    expect(direct.headers.get('etag')).toBe(styled.headers.get('etag'));
    expect(direct.headers.get('x-granary-cache')).toBe('hit');
    expect(direct.body.equals(styled.body)).toBe(true);
    // A further fop on the URL runs after the style.
    const chained = await get(s, `${B}/photo.jpg-thumb?imageInfo`);
    expect(JSON.parse(chained.body.toString())).toMatchObject({ width: 50, height: 40 });
    // ?style/<name> names it on the object's own key.
    const q = await get(s, `${B}/photo.jpg?style/thumb`);
    expect(q.status).toBe(200);
    expect(q.body.equals(styled.body)).toBe(true);
    const qi = await get(s, `${B}/photo.jpg?style/thumb|imageInfo`);
    expect(JSON.parse(qi.body.toString())).toMatchObject({ width: 50 });
  });

  it('an existing key wins over a style; unknown styles and missing prefixes are 404', async () => {
    await upload(s, B, 'photo.jpg-exact', 'not a thumbnail');
    await setStyle(B, 'exact', THUMB);
    const exact = await get(s, `${B}/photo.jpg-exact`);
    expect(exact.body.toString()).toBe('not a thumbnail');
    expect((await get(s, `${B}/photo.jpg-nostyle`)).status).toBe(404);
    expect((await get(s, `${B}/nothing.jpg-thumb`)).status).toBe(404);
    expect((await get(s, `${B}/photo.jpg_thumb`)).status).toBe(404);
    const unknown = await get(s, `${B}/photo.jpg?style/nostyle`);
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body.toString()).error).toMatch(/nostyle/);
  });

  it('several one-character separators', async () => {
    const r = await manage(`/separator/${B}/sep/${b64('-_!')}`);
    expect(r.status, await r.text()).toBe(200);
    expect((await info(B)).separator).toBe('-_!');
    for (const sep of ['-', '_', '!']) {
      const g = await get(s, `${B}/photo.jpg${encodeURIComponent(sep)}thumb`);
      expect(g.status, sep).toBe(200);
      expect(await size(g.body)).toEqual([50, 40]);
    }
    expect((await get(s, `${B}/photo.jpg~thumb`)).status).toBe(404);
    await manage(`/separator/${B}/sep/${b64('!')}`);
    expect((await get(s, `${B}/photo.jpg-thumb`)).status).toBe(404);
    expect((await get(s, `${B}/photo.jpg!thumb`)).status).toBe(200);
    await manage(`/separator/${B}/sep/${b64('-')}`);
  });

  it('works on a bound domain and with private signed URLs', async () => {
    await bindDomain(s.running.g, 'styled.example.test', B);
    const viaDomain = await rawRequest({ port: s.running.port, path: '/photo.jpg-thumb', headers: { Host: 'styled.example.test' } });
    expect(viaDomain.status).toBe(200);
    expect(await size(viaDomain.body)).toEqual([50, 40]);

    expect((await setStyle(PRIV, 'small', 'imageView2/2/w/30')).status).toBe(200);
    const deadline = Math.floor(Date.now() / 1000) + 600;
    const signed = s.bucketManager().privateDownloadUrl(`${s.url}/${PRIV}`, 'p.jpg-small', deadline);
    const ok = await fetch(signed);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('private, max-age=0');
    expect(await size(Buffer.from(await ok.arrayBuffer()))).toEqual([30, 23]);
    expect((await get(s, `${PRIV}/p.jpg-small`)).status).toBe(401);
    expect((await get(s, `${PRIV}/p.jpg?style/small`)).status).toBe(401);
  });

  it('unstyle removes a style (and is idempotent)', async () => {
    await setStyle(B, 'gone', 'imageView2/2/w/10');
    expect((await get(s, `${B}/photo.jpg-gone`)).status).toBe(200);
    const r = await manage(`/unstyle/${B}/name/${b64('gone')}`);
    expect(r.status).toBe(200);
    expect((await manage(`/unstyle/${B}/name/${b64('gone')}`)).status).toBe(200);
    expect((await get(s, `${B}/photo.jpg-gone`)).status).toBe(404);
    expect((await info(B)).styles).not.toHaveProperty('gone');
    expect((await info(B)).styles).toHaveProperty('thumb', THUMB);
  });

  it('authorisation: unsigned 401, another account 403, missing bucket 631', async () => {
    const unsigned = await fetch(`${s.url}/style/${B}/name/${b64('x')}/style/${b64(THUMB)}`, { method: 'POST' });
    expect(unsigned.status).toBe(401);
    expect((await setStyle(B, 'x', THUMB, alice)).status).toBe(403);
    expect((await manage(`/unstyle/${B}/name/${b64('thumb')}`, alice)).status).toBe(403);
    expect((await manage(`/separator/${B}/sep/${b64('_')}`, alice)).status).toBe(403);
    expect((await setStyle('no-such-bucket', 'x', THUMB)).status).toBe(631);
    expect((await info(B)).styles).not.toHaveProperty('x');
  });

  it.each([
    [`/style/${B}/name/${b64('bad name')}/style/${b64(THUMB)}`, /style name/],
    [`/style/${B}/name/${b64('ok')}/style/${b64('imageView2/9/w/1')}`, /mode must be 0\.\.5/],
    [`/style/${B}/name/${b64('ok')}/style/${b64('nope')}`, /unknown command/],
    [`/style/${B}/name/${b64('ok')}/style/${b64('')}`, /style/],
    [`/style/${B}/name/%%%/style/${b64(THUMB)}`, /./],
    [`/style/${B}/name/${b64('ok')}`, /expected/],
    [`/separator/${B}/sep/${b64('ab')}`, /separator/],
    [`/separator/${B}/sep/${b64('--')}`, /separator/],
    [`/separator/${B}/sep/${b64('')}`, /separator|missing/],
  ])('%s → 400', async (path, msg) => {
    const r = await manage(path);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(msg);
  });
});
