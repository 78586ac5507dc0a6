/**
 * imageMogr2 on download URLs (docs/development/kodo-protocol.md §10.3): thumbnail geometries, gravity + crop (with offsets), rotate,
 * auto-orient, format/quality/strip/interlace, blur, size-limit, output limits (imageView2 too), pipelines,
 * private buckets and bad input.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateJpegQuality } from '../../src/fops/jpeg-quality.js';
import { upload } from '../helpers/http.js';
import { grid, near, pixels, solid, type Rgb } from '../helpers/pixels.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const PUB = 'mogr-public';
const PRIV = 'mogr-private';
const fixture = (name: string): Promise<Buffer> => readFile(join(FIXTURE_IMAGES, name));

/** The nine 100×100 cells of `nine.png` (300×300), row by row: NorthWest … SouthEast. */
const CELLS: Rgb[] = [
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
  [0, 255, 255],
  [255, 0, 255],
  [255, 255, 255],
  [0, 0, 0],
  [255, 128, 0],
];
const GRAVITIES = ['NorthWest', 'North', 'NorthEast', 'West', 'Center', 'East', 'SouthWest', 'South', 'SouthEast'];

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

describe('imageMogr2', () => {
  let s: TestServer;
  let bm: qiniu.rs.BucketManager;
  let photo: Buffer;
  let quadPng: Buffer;

  const get = async (bucket: string, keyAndQuery: string): Promise<Got> => {
    const res = await fetch(`${s.url}/${bucket}/${keyAndQuery}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  };
  const ok = async (keyAndQuery: string): Promise<Got> => {
    const r = await get(PUB, keyAndQuery);
    expect(r.status, `${keyAndQuery}: ${r.body.toString().slice(0, 200)}`).toBe(200);
    return r;
  };
  const dims = async (b: Buffer): Promise<[number, number]> => {
    const m = await sharp(b).metadata();
    return [m.width, m.height];
  };
  const errorOf = (g: Got): string => String((JSON.parse(g.body.toString()) as { error: string }).error);

  beforeAll(async () => {
    s = await startTestServer();
    bm = s.bucketManager();
    await createBucket(s, PUB);
    await createBucket(s, PRIV);
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    photo = await fixture('orientation_landscape_1.jpg');
    await upload(s, PUB, 'photo.jpg', photo);
    for (const o of [3, 6, 8]) await upload(s, PUB, `o${o}.jpg`, await fixture(`orientation_landscape_${o}.jpg`));
    await upload(s, PUB, 'canon.jpg', await fixture('Canon_40D.jpg'));
    await upload(s, PUB, 'nine.png', await grid(100, 3, 3, CELLS));
    // 200×150: red, green / blue, white quadrants (100×75 each).
    quadPng = await sharp({ create: { width: 200, height: 150, channels: 3, background: { r: 0, g: 0, b: 0 } } })
      .composite([
        { input: await solid(100, 75, [255, 0, 0]), left: 0, top: 0 },
        { input: await solid(100, 75, [0, 255, 0]), left: 100, top: 0 },
        { input: await solid(100, 75, [0, 0, 255]), left: 0, top: 75 },
        { input: await solid(100, 75, [255, 255, 255]), left: 100, top: 75 },
      ])
      .removeAlpha()
      .png()
      .toBuffer();
    await upload(s, PUB, 'quad.png', quadPng);
    await upload(s, PUB, 'corrupted.jpg', await fixture('corrupted.jpg'));
    await upload(s, PUB, 'text.txt', 'not an image');
    await upload(s, PRIV, 'p.jpg', photo);
    const wide = await sharp({ create: { width: 10001, height: 100, channels: 3, background: { r: 9, g: 9, b: 9 } } }).png().toBuffer();
    await upload(s, PUB, 'wide.png', wide);
    const big = await sharp({ create: { width: 6000, height: 5000, channels: 3, background: { r: 9, g: 9, b: 9 } } }).png().toBuffer();
    await upload(s, PUB, 'big.png', big);
  }, 120_000);
  afterAll(async () => s?.stop());

  describe('thumbnail', () => {
    // photo.jpg is 600×450; expected sizes worked out by hand from the documented semantics.
    it.each([
      ['!50p', 300, 225],
      ['!25px', 150, 450],
      ['!x20p', 600, 90],
      ['120x', 120, 90],
      ['x90', 120, 90],
      ['900x', 900, 675],
      ['200x200', 200, 150],
      ['1000x500', 667, 500],
      ['!200x200r', 267, 200],
      ['!100x300r', 400, 300],
      ['123x45!', 123, 45],
      ['300x300>', 300, 225],
      ['800x800>', 600, 450],
      ['800x800<', 800, 600],
      ['300x300<', 600, 450],
      ['30000@', 200, 150],
      ['1080000@', 1200, 900],
    ])('thumbnail/%s → %ix%i', async (geom, w, h) => {
      const r = await ok(`photo.jpg?imageMogr2/thumbnail/${encodeURIComponent(geom)}`);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      expect(await dims(r.body)).toEqual([w, h]);
    });

    it('sizes are computed on the upright image only with auto-orient', async () => {
      // o6.jpg is stored 450×600 with orientation 6 (upright 600×450).
      expect(await dims((await ok('o6.jpg?imageMogr2/auto-orient/thumbnail/300x')).body)).toEqual([300, 225]);
      const raw = await ok('o6.jpg?imageMogr2/thumbnail/300x');
      expect(await dims(raw.body)).toEqual([300, 400]);
      // Without strip the orientation tag stays, so viewers still turn it upright.
      expect((await sharp(raw.body).metadata()).orientation).toBe(6);
    });
  });

  describe('gravity and crop', () => {
    it.each(GRAVITIES.map((g, i) => [g, i] as const))('crop/100x100 at gravity %s takes that cell', async (g, i) => {
      const r = await ok(`nine.png?imageMogr2/gravity/${g}/crop/100x100`);
      expect(r.headers.get('content-type')).toBe('image/png');
      const p = await pixels(r.body);
      expect([p.width, p.height]).toEqual([100, 100]);
      expect(near(p.mean(0, 0, 100, 100), CELLS[i] as Rgb, 1)).toBe(true);
    });

    it('default gravity is NorthWest; a missing side is the whole side', async () => {
      const p = await pixels((await ok('nine.png?imageMogr2/crop/100x')).body);
      expect([p.width, p.height]).toEqual([100, 300]);
      expect(near(p.at(50, 50), CELLS[0] as Rgb)).toBe(true);
      expect(near(p.at(50, 250), CELLS[6] as Rgb)).toBe(true);
      const q = await pixels((await ok('nine.png?imageMogr2/crop/x100')).body);
      expect([q.width, q.height]).toEqual([300, 100]);
    });

    it.each([
      // [query, size, colour of every pixel]
      ['crop/!100x100a100a100', [100, 100], CELLS[4]],
      ['crop/!100x100a200a0', [100, 100], CELLS[2]],
      ['gravity/SouthEast/crop/!100x100-100-100', [100, 100], CELLS[4]],
      ['gravity/Center/crop/!100x100a100a0', [100, 100], CELLS[5]],
      // -dx at NorthWest cuts the region: 150 wide shifted 50 left leaves 100 px of the first column.
      ['crop/!150x100-50a0', [100, 100], CELLS[0]],
      ['crop/!100x150a0-50', [100, 100], CELLS[0]],
      // Offsets pushing past the far edge are clipped too.
      ['gravity/SouthEast/crop/!100x100a50a0', [50, 100], CELLS[8]],
    ] as const)('%s', async (q, size, colour) => {
      const p = await pixels((await ok(`nine.png?imageMogr2/${q}`)).body);
      expect([p.width, p.height]).toEqual(size);
      expect(near(p.mean(0, 0, p.width, p.height), colour as Rgb, 1)).toBe(true);
    });

    it('crops the thumbnail, not the source', async () => {
      // 300×300 → 150×150, then the centre 50×50 is the centre cell.
      const p = await pixels((await ok('nine.png?imageMogr2/thumbnail/!50p/gravity/Center/crop/50x50')).body);
      expect([p.width, p.height]).toEqual([50, 50]);
      expect(near(p.mean(5, 5, 40, 40), CELLS[4] as Rgb, 2)).toBe(true);
    });

    it('a region outside the image is 400', async () => {
      const r = await get(PUB, 'nine.png?imageMogr2/crop/!100x100a400a0');
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/imageMogr2: the crop region lies outside/);
    });
  });

  describe('rotate', () => {
    it('rotate/90 turns the picture clockwise', async () => {
      expect(await dims((await ok('photo.jpg?imageMogr2/rotate/90')).body)).toEqual([450, 600]);
      const p = await pixels((await ok('quad.png?imageMogr2/rotate/90')).body);
      expect([p.width, p.height]).toEqual([150, 200]);
      // Clockwise: bottom-left (blue) comes to the top-left, top-left (red) to the top-right.
      expect(near(p.at(10, 10), [0, 0, 255])).toBe(true);
      expect(near(p.at(140, 10), [255, 0, 0])).toBe(true);
      expect(near(p.at(10, 190), [255, 255, 255])).toBe(true);
      expect(near(p.at(140, 190), [0, 255, 0])).toBe(true);
    });

    it('other angles: white corners for JPEG, transparent for PNG', async () => {
      const j = await pixels((await ok('quad.png?imageMogr2/rotate/45/format/jpg')).body);
      expect(j.width).toBeGreaterThanOrEqual(246);
      expect(j.width).toBeLessThanOrEqual(249);
      expect(near(j.at(1, 1), [255, 255, 255])).toBe(true);
      const p = await pixels((await ok('quad.png?imageMogr2/rotate/45')).body);
      expect(p.at(1, 1)[3]).toBe(0);
      expect(p.at(Math.floor(p.width / 2), Math.floor(p.height / 2))[3]).toBe(255);
    });

    it('crop happens before rotate (with and without a thumbnail)', async () => {
      const a = await pixels((await ok('quad.png?imageMogr2/crop/100x75/rotate/90')).body);
      expect([a.width, a.height]).toEqual([75, 100]);
      expect(near(a.mean(0, 0, 75, 100), [255, 0, 0], 1)).toBe(true);
      // 200×150 → 100×75; the left 50×75 is red over blue; rotated clockwise: blue left, red right.
      const b = await pixels((await ok('quad.png?imageMogr2/thumbnail/!50p/crop/50x75/rotate/90')).body);
      expect([b.width, b.height]).toEqual([75, 50]);
      expect(near(b.mean(2, 2, 30, 46), [0, 0, 255], 3)).toBe(true);
      expect(near(b.mean(43, 2, 30, 46), [255, 0, 0], 3)).toBe(true);
    });
  });

  describe('auto-orient', () => {
    const thumb = async (b: Buffer): Promise<Buffer> => sharp(b).resize(16, 12, { fit: 'fill' }).greyscale().raw().toBuffer();

    it.each([3, 6, 8])('orientation_landscape_%i comes out upright', async (o) => {
      const ref = await thumb((await ok('photo.jpg?imageMogr2/thumbnail/300x')).body);
      const r = await ok(`o${o}.jpg?imageMogr2/auto-orient/thumbnail/300x`);
      expect(await dims(r.body)).toEqual([300, 225]);
      const got = await thumb(r.body);
      const diff = ref.reduce((sum, v, i) => sum + Math.abs(v - (got[i] as number)), 0) / ref.length;
      expect(diff).toBeLessThan(20);
      // Without auto-orient the stored grid is processed: a different picture.
      const raw = await thumb((await ok(`o${o}.jpg?imageMogr2/thumbnail/!50p/strip`)).body);
      const rawDiff = ref.reduce((sum, v, i) => sum + Math.abs(v - (raw[i] as number)), 0) / ref.length;
      expect(rawDiff).toBeGreaterThan(diff);
      expect((await sharp(r.body).metadata()).orientation ?? 1).toBe(1);
    });
  });

  describe('format, quality, strip, interlace', () => {
    it.each([
      ['png', 'image/png', 'png'],
      ['webp', 'image/webp', 'webp'],
      ['gif', 'image/gif', 'gif'],
      ['avif', 'image/avif', 'heif'],
      ['tiff', 'image/tiff', 'tiff'],
      ['jpg', 'image/jpeg', 'jpeg'],
    ])('format/%s', async (f, type, sharpFormat) => {
      const r = await ok(`quad.png?imageMogr2/thumbnail/50x/format/${f}`);
      expect(r.headers.get('content-type')).toBe(type);
      const m = await sharp(r.body).metadata();
      expect(m.format).toBe(sharpFormat);
      expect([m.width, m.height]).toEqual([50, 38]);
    });

    it('quality without ! is capped at the source JPEG quality, with ! it is used as given', async () => {
      expect(estimateJpegQuality(photo)).toBe(90);
      expect(estimateJpegQuality((await ok('photo.jpg?imageMogr2/quality/95')).body)).toBe(90);
      expect(estimateJpegQuality((await ok('photo.jpg?imageMogr2/quality/95!')).body)).toBe(95);
      expect(estimateJpegQuality((await ok('photo.jpg?imageMogr2/quality/40')).body)).toBe(40);
      expect(estimateJpegQuality((await ok('photo.jpg?imageMogr2/thumbnail/100x')).body)).toBe(75);
      expect(estimateJpegQuality((await ok('photo.jpg?imageView2/2/w/100/q/95')).body)).toBe(90);
      expect(estimateJpegQuality((await ok('photo.jpg?imageView2/2/w/100/q/95!')).body)).toBe(95);
    });

    it('quality changes the size', async () => {
      const lo = await ok('photo.jpg?imageMogr2/quality/10');
      const hi = await ok('photo.jpg?imageMogr2/quality/95!');
      expect(lo.body.length).toBeLessThan(hi.body.length / 2);
    });

    it('strip removes EXIF; without it EXIF is kept', async () => {
      const kept = await sharp((await ok('canon.jpg?imageMogr2/thumbnail/100x')).body).metadata();
      expect(kept.exif).toBeDefined();
      const stripped = await sharp((await ok('canon.jpg?imageMogr2/thumbnail/100x/strip')).body).metadata();
      expect(stripped.exif).toBeUndefined();
      expect(stripped.icc).toBeUndefined();
    });

    it('interlace/1 writes a progressive JPEG', async () => {
      expect((await sharp((await ok('photo.jpg?imageMogr2/interlace/1')).body).metadata()).isProgressive).toBe(true);
      expect((await sharp((await ok('photo.jpg?imageMogr2/interlace/0')).body).metadata()).isProgressive).toBe(false);
    });
  });

  describe('blur and size-limit', () => {
    it('blur softens the edges between the quadrants', async () => {
      const sharpEdge = await pixels((await ok('quad.png?imageMogr2/strip')).body);
      expect(near(sharpEdge.at(99, 30), [255, 0, 0], 0)).toBe(true);
      const p = await pixels((await ok('quad.png?imageMogr2/blur/10x5')).body);
      expect([p.width, p.height]).toEqual([200, 150]);
      const edge = p.at(99, 30);
      expect(edge[0]).toBeLessThan(230);
      expect(edge[1]).toBeGreaterThan(25);
      // Far from an edge, the colour is unchanged.
      expect(near(p.at(30, 30), [255, 0, 0], 2)).toBe(true);
      expect((await ok('quad.png?imageMogr2/blur/1x0')).status).toBe(200);
    });

    it('size-limit re-encodes a JPEG smaller', async () => {
      const full = await ok('photo.jpg?imageMogr2/quality/95!');
      expect(full.body.length).toBeGreaterThan(20 * 1024);
      const r = await ok('photo.jpg?imageMogr2/quality/95!/size-limit/20k');
      expect(r.body.length).toBeLessThanOrEqual(20 * 1024);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      expect(await dims(r.body)).toEqual(await dims(full.body));
    });

    it('size-limit ! answers the source when the result is larger', async () => {
      const r = await ok('quad.png?imageMogr2/format/jpg/quality/100/size-limit/10m!');
      expect(r.headers.get('content-type')).toBe('image/png');
      expect(r.body.equals(quadPng)).toBe(true);
      const plain = await ok('quad.png?imageMogr2/format/jpg/quality/100/size-limit/10m');
      expect(plain.headers.get('content-type')).toBe('image/jpeg');
      expect(plain.body.length).toBeGreaterThan(quadPng.length);
    });
  });

  describe('output limits', () => {
    it('imageMogr2 refuses outputs over 9999 px or 25,000,000 pixels', async () => {
      // The last one: a 5000×3750 thumbnail is within the limits, rotated by 45° it is not.
      for (const q of ['thumbnail/!999p', 'thumbnail/9999x9999!', 'thumbnail/5000x/rotate/45']) {
        const r = await get(PUB, `photo.jpg?imageMogr2/${q}`);
        expect(r.status, q).toBe(400);
        expect(errorOf(r)).toMatch(/imageMogr2: the output would be \d+x\d+/);
      }
    });

    it('imageView2 too', async () => {
      const wide = await get(PUB, 'wide.png?imageView2/3/h/100');
      expect(wide.status).toBe(400);
      expect(errorOf(wide)).toMatch(/imageView2: the output would be 10001x100/);
      const big = await get(PUB, 'big.png?imageView2/3/w/100/h/5000');
      expect(big.status).toBe(400);
      expect(errorOf(big)).toMatch(/imageView2: the output would be 6000x5000/);
      expect(await dims((await ok('big.png?imageView2/2/w/4999/h/4999')).body)).toEqual([4999, 4166]);
    });
  });

  describe('pipelines, private buckets, bad input', () => {
    it('a pipeline feeds imageMogr2 into the next stage', async () => {
      const r = await ok('photo.jpg?imageMogr2/auto-orient/thumbnail/100x/format/png|imageInfo');
      expect(JSON.parse(r.body.toString())).toMatchObject({ format: 'png', width: 100, height: 75 });
      const two = await ok('nine.png?imageMogr2/crop/200x200|imageMogr2/gravity/SouthEast/crop/100x100');
      expect(near((await pixels(two.body)).mean(0, 0, 100, 100), CELLS[4] as Rgb, 1)).toBe(true);
    });

    it('a signed URL on a private bucket works, an unsigned one is 401', async () => {
      const deadline = Math.floor(Date.now() / 1000) + 3600;
      const signed = bm.privateDownloadUrl(`${s.url}/${PRIV}`, 'p.jpg?imageMogr2/thumbnail/!50p/rotate/90', deadline);
      const r = await fetch(signed);
      expect(r.status).toBe(200);
      expect(await dims(Buffer.from(await r.arrayBuffer()))).toEqual([225, 300]);
      expect((await get(PRIV, 'p.jpg?imageMogr2/thumbnail/!50p/rotate/90')).status).toBe(401);
    });

    it.each([
      ['imageMogr2', /imageMogr2: no operation/],
      ['imageMogr2/thumbnail/abc', /imageMogr2: bad thumbnail geometry "abc"/],
      ['imageMogr2/rotate/400', /imageMogr2: rotate must be/],
      ['imageMogr2/nope/1', /imageMogr2: unknown parameter "nope"/],
      ['imageMogr2/format/bmp', /imageMogr2: unsupported format/],
      ['imageMogr2/quality/0', /imageMogr2: quality/],
      ['imageMogr2/blur/1', /imageMogr2: blur/],
      ['imageMogr2/gravity/Up/crop/10x10', /imageMogr2: unknown gravity/],
      ['imageMogr2/crop/10y10', /imageMogr2: bad crop geometry/],
      ['imageMogr2/size-limit/abc', /imageMogr2: size-limit/],
    ])('%s → 400 JSON', async (q, msg) => {
      const r = await get(PUB, `photo.jpg?${q}`);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(errorOf(r)).toMatch(msg);
    });

    it('corrupted and non-image sources fail cleanly; the server keeps serving', async () => {
      const c = await get(PUB, 'corrupted.jpg?imageMogr2/thumbnail/100x/rotate/30');
      expect([400, 415]).toContain(c.status);
      expect(errorOf(c)).toMatch(/imageMogr2/);
      const t = await get(PUB, 'text.txt?imageMogr2/thumbnail/100x');
      expect(t.status).toBe(415);
      expect((await get(PUB, 'photo.jpg?imageMogr2/thumbnail/10x')).status).toBe(200);
    });
  });
});
