/**
 * Image formats beyond what libvips decodes itself: HEIC/HEIF through heif-convert (imageInfo,
 * imageView2, imageAve; 415 naming GRANARY_HEIF_CONVERT without it) and animated GIF frame counts.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upload } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const B = 'formats';
const fixture = (name: string): Promise<Buffer> => readFile(join(FIXTURE_IMAGES, name));

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

async function get(s: TestServer, path: string): Promise<Got> {
  const res = await fetch(`${s.url}/${path}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}
const json = (g: Got): Record<string, unknown> => JSON.parse(g.body.toString()) as Record<string, unknown>;

/** A `frames`-frame animated GIF, 40×30, each frame another solid colour. */
async function animatedGif(frames: number): Promise<Buffer> {
  const colours = ['#ff0000', '#00ff00', '#0000ff', '#ffff00', '#00ffff', '#ff00ff', '#ffffff'];
  const pngs = await Promise.all(
    Array.from({ length: frames }, (_, i) => sharp({ create: { width: 40, height: 30, channels: 3, background: colours[i % colours.length]! } }).png().toBuffer()),
  );
  return sharp(pngs, { join: { animated: true } }).gif({ delay: Array(frames).fill(100) as number[] }).toBuffer();
}

describe('HEIC and GIF', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, B);
    await upload(s, B, 'iphone.heic', await fixture('heic_IMG_5195.HEIC'));
    await upload(s, B, 'sample.heif', await fixture('heic_samplefilehub.heif'));
    await upload(s, B, 'anim.gif', await animatedGif(5));
    await upload(s, B, 'still.gif', await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } }).gif().toBuffer());
  }, 60_000);
  afterAll(async () => s.stop());

  it.each([
    ['iphone.heic', 2566, 3313],
    ['sample.heif', 640, 426],
  ])('imageInfo of %s', async (key, width, height) => {
    const r = await get(s, `${B}/${key}?imageInfo`);
    expect(r.status, r.body.toString()).toBe(200);
    expect(json(r)).toMatchObject({ format: 'heic', width, height, colorModel: 'ycbcr' });
  });

  it.each([
    ['iphone.heic', 2566, 3313],
    ['sample.heif', 640, 426],
  ])('imageView2 of %s decodes through heif-convert (JPEG by default)', async (key, sw, sh) => {
    const r = await get(s, `${B}/${key}?imageView2/2/w/200/h/200`);
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/jpeg');
    const m = await sharp(r.body).metadata();
    const f = Math.min(200 / sw, 200 / sh);
    expect([m.width, m.height]).toEqual([Math.round(sw * f), Math.round(sh * f)]);
    // Real pixels, not a blank canvas.
    const stats = await sharp(r.body).stats();
    expect(stats.channels[0]!.stdev).toBeGreaterThan(5);
    if (key !== 'sample.heif') return; // one conversion of the 8.5 MP photo is enough
    const png = await get(s, `${B}/${key}?imageView2/1/w/64/h/64/format/png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(await sharp(png.body).metadata()).toMatchObject({ format: 'png', width: 64, height: 64 });
  });

  it.each([
    ['imageMogr2/thumbnail/100x', 'image/jpeg', 100, 67],
    ['watermark/2/text/SGk', 'image/jpeg', 640, 426],
  ])('%s of a HEIC decodes through heif-convert', async (fop, type, w, h) => {
    const r = await get(s, `${B}/sample.heif?${fop}`);
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.headers.get('content-type')).toBe(type);
    expect(await sharp(r.body).metadata()).toMatchObject({ width: w, height: h });
  });

  it('imageAve of a HEIC', async () => {
    const r = await get(s, `${B}/sample.heif?imageAve`);
    expect(r.status, r.body.toString()).toBe(200);
    expect(String(json(r).RGB)).toMatch(/^0x[0-9a-f]{6}$/);
  });

  it('without heif-convert, HEIC decoding is a 415 naming GRANARY_HEIF_CONVERT; its header still answers', async () => {
    const bare = await startTestServer({ GRANARY_HEIF_CONVERT: '/nonexistent/heif-convert' });
    try {
      await createBucket(bare, B);
      await upload(bare, B, 'sample.heif', await fixture('heic_samplefilehub.heif'));
      for (const q of ['imageView2/2/w/100', 'imageAve']) {
        const r = await get(bare, `${B}/sample.heif?${q}`);
        expect(r.status).toBe(415);
        expect(r.headers.get('content-type')).toMatch(/^application\/json/);
        expect(String(json(r).error)).toMatch(/GRANARY_HEIF_CONVERT/);
        expect(String(json(r).error)).toMatch(/libheif-examples/);
      }
      expect((await get(bare, `${B}/sample.heif?imageInfo`)).status).toBe(200);
    } finally {
      await bare.stop();
    }
  });

  it('a heif-convert that overruns the time limit is killed and the request answers 400', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'slow-heif-'));
    const pidFile = join(dir, 'pid');
    const script = join(dir, 'slow-heif-convert');
    await writeFile(script, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 60\n`);
    await chmod(script, 0o755);
    const slow = await startTestServer({ GRANARY_HEIF_CONVERT: script, GRANARY_FOP_TIMEOUT: '1' });
    try {
      await createBucket(slow, B);
      await upload(slow, B, 'sample.heif', await fixture('heic_samplefilehub.heif'));
      const r = await get(slow, `${B}/sample.heif?imageView2/2/w/100`);
      expect(r.status).toBe(400);
      expect(String(json(r).error)).toMatch(/timed out/);
      const pid = Number((await readFile(pidFile, 'utf8')).trim());
      const alive = (): boolean => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      const deadline = Date.now() + 10_000;
      while (alive() && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      expect(alive()).toBe(false);
      expect((await get(slow, `${B}/sample.heif?imageInfo`)).status).toBe(200);
    } finally {
      await slow.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('imageInfo of an animated GIF counts its frames', async () => {
    const r = await get(s, `${B}/anim.gif?imageInfo`);
    expect(r.status).toBe(200);
    expect(json(r)).toMatchObject({ format: 'gif', width: 40, height: 30, colorModel: 'paletted', frameNumber: 5 });
    expect(json(await get(s, `${B}/still.gif?imageInfo`))).toMatchObject({ format: 'gif', frameNumber: 1 });
  });
});
