/**
 * Image fops on download URLs (docs/development/kodo-protocol.md §10.1, §10.2, §10.4): imageView2 modes 0–5, EXIF orientation,
 * imageInfo, imageAve, malformed fops, corrupt and non-image sources, decompression bombs, private buckets.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const PUB = 'fop-public';
const PRIV = 'fop-private';
const fixture = (name: string): Promise<Buffer> => readFile(join(FIXTURE_IMAGES, name));

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

/** Four 100×75 quadrants: red (top-left), green (top-right), blue (bottom-left), white (bottom-right). */
async function quadrants(): Promise<Buffer> {
  const block = (r: number, g: number, b: number): Promise<Buffer> =>
    sharp({ create: { width: 100, height: 75, channels: 3, background: { r, g, b } } }).png().toBuffer();
  return sharp({ create: { width: 200, height: 150, channels: 3, background: { r: 0, g: 0, b: 0 } } })
    .composite([
      { input: await block(255, 0, 0), left: 0, top: 0 },
      { input: await block(0, 255, 0), left: 100, top: 0 },
      { input: await block(0, 0, 255), left: 0, top: 75 },
      { input: await block(255, 255, 255), left: 100, top: 75 },
    ])
    .removeAlpha()
    .png()
    .toBuffer();
}

/**
 * Expected imageView2 output size, written independently of the server: the largest (modes 0, 2) or smallest
 * (modes 1, 3, 4, 5) proportional size meeting the bounds, capped at the source size, then the crop box.
 */
function expectedSize(mode: number, sw: number, sh: number, w?: number, h?: number): [number, number] {
  const landscape = sw >= sh;
  // Per-axis bounds in terms of width and height of the source orientation.
  let bw: number | undefined;
  let bh: number | undefined;
  if (mode === 0 || mode === 4 || mode === 5) {
    const [l, s] = mode === 5 ? [w ?? h, h ?? w] : [w, h];
    bw = landscape ? l : s;
    bh = landscape ? s : l;
  } else {
    [bw, bh] = mode === 1 ? [w ?? h, h ?? w] : [w, h];
  }
  const factors = [bw === undefined ? undefined : bw / sw, bh === undefined ? undefined : bh / sh].filter(
    (f): f is number => f !== undefined,
  );
  const shrinkToFit = mode === 0 || mode === 2;
  const f = Math.min(1, shrinkToFit ? Math.min(...factors) : Math.max(...factors));
  let width = Math.max(1, Math.round(sw * f));
  let height = Math.max(1, Math.round(sh * f));
  if (mode === 1 || mode === 5) {
    width = Math.min(width, bw as number);
    height = Math.min(height, bh as number);
  }
  return [width, height];
}

describe('image fops', () => {
  let s: TestServer;
  let photo: Buffer;
  let bm: qiniu.rs.BucketManager;

  const get = async (bucket: string, keyAndQuery: string): Promise<Got> => {
    const res = await fetch(`${s.url}/${bucket}/${keyAndQuery}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  };
  const json = (g: Got): Record<string, unknown> => JSON.parse(g.body.toString()) as Record<string, unknown>;

  beforeAll(async () => {
    s = await startTestServer();
    bm = s.bucketManager();
    await createBucket(s, PUB);
    await createBucket(s, PRIV);
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    photo = await fixture('orientation_landscape_1.jpg');
    await upload(s, PUB, 'photo.jpg', photo);
    for (const o of [3, 6, 8]) await upload(s, PUB, `o${o}.jpg`, await fixture(`orientation_landscape_${o}.jpg`));
    await upload(s, PUB, 'quad.png', await quadrants());
    await upload(s, PUB, 'corrupted.jpg', await fixture('corrupted.jpg'));
    await upload(s, PUB, 'invalid.jpg', await fixture('invalid_image00971.jpg'));
    await upload(s, PUB, 'text.txt', 'just some text, not an image');
    const bomb = await sharp({ create: { width: 20000, height: 20000, channels: 3, background: { r: 0, g: 0, b: 0 } }, limitInputPixels: false })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    await upload(s, PUB, 'bomb.png', bomb);
    await upload(s, PRIV, 'p.jpg', photo);
    await upload(s, PUB, 'canon.jpg', await fixture('Canon_40D.jpg'));
  }, 120_000);
  afterAll(async () => s.stop());

  describe('exif', () => {
    it('answers libexif-style values with TIFF types for a camera photo', async () => {
      const r = await get(PUB, 'canon.jpg?exif');
      expect(r.status, r.body.toString()).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const tags = json(r) as Record<string, { val: string; type: number }>;
      expect(tags.Make).toEqual({ val: 'Canon', type: 2 });
      expect(tags.XResolution?.type).toBe(5);
      expect(tags.ExifVersion?.val).toMatch(/^Exif Version /);
    });

    it('an image without EXIF, or not a JPEG, is a 400 JSON error', async () => {
      for (const key of ['quad.png?exif', 'invalid.jpg?exif']) {
        const r = await get(PUB, key);
        expect(r.status, key).toBe(400);
        expect(json(r).error).toMatch(/EXIF/);
      }
    });
  });

  describe('imageView2 sizes', () => {
    const pairs: [number | undefined, number | undefined][] = [
      [200, 100],
      [100, 200],
      [300, 300],
      [1000, 100],
      [150, undefined],
      [undefined, 120],
      [2000, 2000],
    ];
    const cases = [0, 1, 2, 3, 4, 5].flatMap((mode) => pairs.map(([w, h]) => [mode, w, h] as const));
    it.each(cases)('mode %i w=%s h=%s', async (mode, w, h) => {
      const q = `imageView2/${mode}${w === undefined ? '' : `/w/${w}`}${h === undefined ? '' : `/h/${h}`}`;
      const r = await get(PUB, `photo.jpg?${q}`);
      expect(r.status, r.body.toString()).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      const m = await sharp(r.body).metadata();
      expect([m.width, m.height]).toEqual(expectedSize(mode, 600, 450, w, h));
    });

    it('mode 1 crops the centre to exactly W×H', async () => {
      const r = await get(PUB, 'quad.png?imageView2/1/w/100/h/100');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/png');
      const { data, info } = await sharp(r.body).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).toEqual([100, 100]);
      // Scaled to 133×100 then 16 px cut on each side: the four quadrants meet at the centre.
      const px = (x: number, y: number): number[] => [...data.subarray((y * 100 + x) * 3, (y * 100 + x) * 3 + 3)];
      const near = (a: number[], b: number[]): boolean => a.every((v, i) => Math.abs(v - (b[i] as number)) <= 8);
      expect(near(px(10, 10), [255, 0, 0])).toBe(true);
      expect(near(px(90, 10), [0, 255, 0])).toBe(true);
      expect(near(px(10, 90), [0, 0, 255])).toBe(true);
      expect(near(px(90, 90), [255, 255, 255])).toBe(true);
    });

    it('converts format and honours quality', async () => {
      const webp = await get(PUB, 'photo.jpg?imageView2/2/w/100/format/webp/q/50');
      expect(webp.headers.get('content-type')).toBe('image/webp');
      expect((await sharp(webp.body).metadata()).format).toBe('webp');
      const png = await get(PUB, 'photo.jpg?imageView2/2/w/100/format/png/interlace/1');
      expect((await sharp(png.body).metadata()).format).toBe('png');
      const lo = await get(PUB, 'photo.jpg?imageView2/2/w/300/q/10!');
      const hi = await get(PUB, 'photo.jpg?imageView2/2/w/300/q/95');
      expect(lo.body.length).toBeLessThan(hi.body.length);
    });

    it.each([3, 6, 8])('orientation %i comes out upright', async (o) => {
      const ref = await sharp((await get(PUB, 'photo.jpg?imageView2/2/w/300')).body).metadata();
      const r = await get(PUB, `o${o}.jpg?imageView2/2/w/300`);
      expect(r.status).toBe(200);
      const m = await sharp(r.body).metadata();
      expect([m.width, m.height]).toEqual([ref.width, ref.height]);
      expect([m.width, m.height]).toEqual([300, 225]);
      // Same picture: the upright thumbnails look alike.
      const raw = async (b: Buffer): Promise<Buffer> => sharp(b).resize(16, 12, { fit: 'fill' }).greyscale().raw().toBuffer();
      const [a, b] = [await raw((await get(PUB, 'photo.jpg?imageView2/2/w/300')).body), await raw(r.body)];
      const diff = a.reduce((sum, v, i) => sum + Math.abs(v - (b[i] as number)), 0) / a.length;
      expect(diff).toBeLessThan(20);
    });
  });

  describe('info fops', () => {
    it('imageInfo of a JPEG', async () => {
      const r = await get(PUB, 'photo.jpg?imageInfo');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(json(r)).toEqual({ format: 'jpeg', width: 600, height: 450, colorModel: 'ycbcr', size: photo.length, orientation: 'Top-left' });
      expect(json(await get(PUB, 'o6.jpg?imageInfo'))).toMatchObject({ width: 450, height: 600, orientation: 'Right-top' });
    });

    it('imageInfo of a PNG', async () => {
      const r = await get(PUB, 'quad.png?imageInfo');
      expect(r.status).toBe(200);
      expect(json(r)).toMatchObject({ format: 'png', width: 200, height: 150, colorModel: 'rgba' });
      expect(json(r).orientation).toBeUndefined();
    });

    it('imageAve is the mean colour', async () => {
      const { data, info } = await sharp(photo).raw().toBuffer({ resolveWithObject: true });
      const sums = [0, 0, 0];
      for (let i = 0; i < data.length; i += info.channels) for (let c = 0; c < 3; c++) sums[c]! += data[i + c]!;
      const mean = sums.map((v) => v / (data.length / info.channels));
      const r = await get(PUB, 'photo.jpg?imageAve');
      expect(r.status).toBe(200);
      const rgb = String(json(r).RGB);
      expect(rgb).toMatch(/^0x[0-9a-f]{6}$/);
      const got = [0, 1, 2].map((i) => parseInt(rgb.slice(2 + i * 2, 4 + i * 2), 16));
      got.forEach((v, i) => expect(Math.abs(v - (mean[i] as number))).toBeLessThan(4));
      expect(json(await get(PUB, 'quad.png?imageAve')).RGB).toBe(`0x${[128, 128, 128].map((v) => v.toString(16)).join('')}`);
    });

    it('pipelines: the output of one stage feeds the next', async () => {
      const r = await get(PUB, 'photo.jpg?imageView2/1/w/64/h/32/format/png|imageInfo');
      expect(json(r)).toMatchObject({ format: 'png', width: 64, height: 32 });
      expect((await get(PUB, 'photo.jpg?imageInfo|imageAve')).status).toBe(400);
    });
  });

  describe('bad input', () => {
    it.each(['imageView2/9/w/10', 'imageView2/1/w/-1', 'imageView2/1/w/abc', 'imageView2/1/w/10000', 'frobnicate/1', 'imageView2'])(
      '%s → 400 JSON',
      async (q) => {
        const r = await get(PUB, `photo.jpg?${q}`);
        expect(r.status).toBe(400);
        expect(r.headers.get('content-type')).toMatch(/^application\/json/);
        expect(r.headers.get('cache-control')).toBe('no-store');
        expect(String(json(r).error)).toMatch(/imageView2|frobnicate/);
      },
    );

    it.each(['corrupted.jpg', 'invalid.jpg'])('%s → clean answer, server keeps serving', async (key) => {
      for (const q of ['imageInfo', 'imageAve', 'imageView2/1/w/50']) {
        const r = await get(PUB, `${key}?${q}`);
        expect([200, 400, 415], `${key}?${q}: ${r.status} ${r.body.toString()}`).toContain(r.status);
        if (r.status !== 200) expect(typeof json(r).error).toBe('string');
      }
      expect((await get(PUB, 'photo.jpg?imageInfo')).status).toBe(200);
    });

    it('a text file is not an image', async () => {
      for (const q of ['imageInfo', 'imageView2/1/w/50']) {
        const r = await get(PUB, `text.txt?${q}`);
        expect(r.status).toBe(415);
        expect(String(json(r).error)).toMatch(/not a supported image/);
      }
    });

    it('a decompression bomb is refused from its header', async () => {
      for (const q of ['imageView2/2/w/100', 'imageAve', 'imageInfo']) {
        const t0 = Date.now();
        const r = await get(PUB, `bomb.png?${q}`);
        expect(r.status).toBe(400);
        expect(String(json(r).error)).toMatch(/20000x20000/);
        expect(Date.now() - t0).toBeLessThan(1000);
      }
    });

    it('a missing key is 404', async () => {
      expect((await get(PUB, 'nope.jpg?imageInfo')).status).toBe(404);
    });
  });

  describe('private bucket', () => {
    it('a signed fop URL works, an unsigned one is 401', async () => {
      const deadline = Math.floor(Date.now() / 1000) + 3600;
      const signed = bm.privateDownloadUrl(`${s.url}/${PRIV}`, 'p.jpg?imageView2/1/w/40/h/30', deadline);
      expect(signed).toContain('p.jpg?imageView2/1/w/40/h/30&e=');
      const r = await fetch(signed);
      expect(r.status).toBe(200);
      const m = await sharp(Buffer.from(await r.arrayBuffer())).metadata();
      expect([m.width, m.height]).toEqual([40, 30]);
      const info = await fetch(bm.privateDownloadUrl(`${s.url}/${PRIV}`, 'p.jpg?imageInfo', deadline));
      expect(info.status).toBe(200);
      expect((await get(PRIV, 'p.jpg?imageInfo')).status).toBe(401);
      // The fop is part of what is signed: changing it breaks the signature.
      expect((await fetch(signed.replace('w/40', 'w/41'))).status).toBe(401);
    });
  });

  describe('limits', () => {
    it('a source above GRANARY_FOP_MAX_SOURCE is 400', async () => {
      const small = await startTestServer({ GRANARY_FOP_MAX_SOURCE: '1000' });
      try {
        await createBucket(small, 'lim');
        await upload(small, 'lim', 'photo.jpg', photo);
        const res = await fetch(`${small.url}/lim/photo.jpg?imageInfo`);
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: string }).error).toMatch(/limit is 1000/);
        const plain = await fetch(`${small.url}/lim/photo.jpg`);
        expect(plain.status).toBe(200);
        // Read the body: a response the client never reads holds the server's graceful stop until a time-out.
        expect(Buffer.from(await plain.arrayBuffer()).equals(photo)).toBe(true);
      } finally {
        await small.stop();
      }
    });
  });
});
