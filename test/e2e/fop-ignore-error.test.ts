/**
 * `/ignore-error/1` (docs/development/kodo-protocol.md §10.1): a pipeline carrying it answers the original object when processing
 * fails (bad image, limits, decoding), but not when the request itself is wrong (bad parameters, missing object,
 * missing signature).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const B = 'ignore-err';
const PRIV = 'ignore-err-private';

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

async function get(s: TestServer, path: string): Promise<Got> {
  const res = await fetch(`${s.url}/${path}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

describe('ignore-error', () => {
  let s: TestServer;
  let corrupted: Buffer;
  const text = Buffer.from('plain text, not an image');
  let bomb: Buffer;
  let photo: Buffer;

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, B);
    await createBucket(s, PRIV);
    expect((await sdk(s.bucketManager().putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    corrupted = await readFile(join(FIXTURE_IMAGES, 'corrupted.jpg'));
    photo = await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_1.jpg'));
    bomb = await sharp({ create: { width: 20000, height: 20000, channels: 3, background: '#000' }, limitInputPixels: false })
      .png({ compressionLevel: 9 })
      .toBuffer();
    await upload(s, B, 'corrupted.jpg', corrupted);
    await upload(s, B, 'text.txt', text, { mimeType: 'text/plain' });
    await upload(s, B, 'bomb.png', bomb);
    await upload(s, B, 'photo.jpg', photo);
    await upload(s, PRIV, 'text.txt', text, { mimeType: 'text/plain' });
  }, 60_000);
  afterAll(async () => s.stop());

  it.each([
    ['text.txt', 'imageView2/1/w/50/ignore-error/1', 415],
    ['bomb.png', 'imageView2/2/w/100/ignore-error/1', 400],
    ['corrupted.jpg', 'imageView2/2/w/100/ignore-error/1', 400],
    ['text.txt', 'imageInfo/ignore-error/1', 415],
    ['text.txt', 'imageView2/2/w/10|imageAve/ignore-error/1', 415],
  ])('%s?%s → the original object', async (key, q, status) => {
    const without = await get(s, `${B}/${key}?${q.replace(/\/ignore-error\/1/, '')}`);
    expect(without.status).toBe(status);
    const r = await get(s, `${B}/${key}?${q}`);
    expect(r.status).toBe(200);
    const original = { 'text.txt': text, 'bomb.png': bomb, 'corrupted.jpg': corrupted }[key]!;
    expect(r.body.equals(original)).toBe(true);
    expect(r.headers.get('content-length')).toBe(String(original.length));
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('x-granary-fop-ignored-error')).toBe(String(status));
    if (key === 'text.txt') expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('a successful pipeline with ignore-error is the processed result', async () => {
    const r = await get(s, `${B}/photo.jpg?imageView2/1/w/30/h/20/ignore-error/1`);
    expect(r.status).toBe(200);
    expect(await sharp(r.body).metadata()).toMatchObject({ width: 30, height: 20 });
    expect(r.headers.get('x-granary-fop-ignored-error')).toBeNull();
  });

  it('ignore-error/0 keeps the error', async () => {
    const r = await get(s, `${B}/text.txt?imageView2/1/w/50/ignore-error/0`);
    expect(r.status).toBe(415);
    expect(JSON.parse(r.body.toString())).toHaveProperty('error');
  });

  it('bad parameters, a missing object and a missing signature are still errors', async () => {
    expect((await get(s, `${B}/photo.jpg?imageView2/9/w/50/ignore-error/1`)).status).toBe(400);
    expect((await get(s, `${B}/nope.jpg?imageView2/1/w/50/ignore-error/1`)).status).toBe(404);
    expect((await get(s, `${PRIV}/text.txt?imageView2/1/w/50/ignore-error/1`)).status).toBe(401);
    const deadline = Math.floor(Date.now() / 1000) + 3600;
    const signed = s.bucketManager().privateDownloadUrl(`${s.url}/${PRIV}`, 'text.txt?imageView2/1/w/50/ignore-error/1', deadline);
    const r = await fetch(signed);
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(text)).toBe(true);
  });
});
