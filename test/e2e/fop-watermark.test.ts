/**
 * watermark on download URLs (docs/development/kodo-protocol.md §10.5): image marks at the nine gravities (checked by pixels),
 * dissolve, ws/wst, marks from the same bucket and from a loopback origin (GRANARY_OUTBOUND_ALLOW), refused
 * private URLs (403), resource size limit, text marks (fonts, colours, sizes), mode 3, pipelines with
 * imageMogr2 on public and private buckets, bad input.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveBytes, startOrigin, watchConnects, type Origin } from '../helpers/fetch-origin.js';
import { upload } from '../helpers/http.js';
import { near, pixels, solid, type Pixels } from '../helpers/pixels.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, FIXTURE_IMAGES } from '../helpers/upload.js';

const PUB = 'wm-public';
const PRIV = 'wm-private';
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
const fixture = (name: string): Promise<Buffer> => readFile(join(FIXTURE_IMAGES, name));
const WHITE = [255, 255, 255];
const RED = [255, 0, 0];

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

/** Bounding box [left, top, width, height] of the pixels matching `pred`, or undefined. */
function bbox(p: Pixels, pred: (px: [number, number, number, number]) => boolean): [number, number, number, number] | undefined {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < p.height; y++) {
    for (let x = 0; x < p.width; x++) {
      if (!pred(p.at(x, y))) continue;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
    }
  }
  return x1 < 0 ? undefined : [x0, y0, x1 - x0 + 1, y1 - y0 + 1];
}
const isRed = (px: number[]): boolean => near(px, RED, 8);
const notWhite = (px: number[]): boolean => !near(px, WHITE, 40);

const get = async (base: string, path: string): Promise<Got> => {
  const res = await fetch(`${base}/${path}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
};
const errorOf = (g: Got): string => String((JSON.parse(g.body.toString()) as { error: string }).error);

describe('watermark', () => {
  let s: TestServer;
  let bm: qiniu.rs.BucketManager;
  let origin: Origin;
  let redUrl: string;

  const ok = async (keyAndQuery: string): Promise<Got> => {
    const r = await get(`${s.url}/${PUB}`, keyAndQuery);
    expect(r.status, `${keyAndQuery}: ${r.body.toString().slice(0, 200)}`).toBe(200);
    return r;
  };

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
    watchConnects(s, 'non-loopback');
    bm = s.bucketManager();
    await createBucket(s, PUB);
    await createBucket(s, PRIV);
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    await upload(s, PUB, 'white.png', await solid(200, 160, [255, 255, 255]));
    await upload(s, PUB, 'wide.png', await solid(400, 200, [255, 255, 255]));
    await upload(s, PUB, 'tiny.png', await solid(10, 10, [255, 255, 255]));
    await upload(s, PUB, 'red.png', await solid(20, 20, [255, 0, 0]));
    await upload(s, PUB, 'large.png', await solid(4000, 3200, [255, 255, 255]));
    await upload(s, PUB, 'photo.jpg', await fixture('orientation_landscape_1.jpg'));
    await upload(s, PUB, 'o6.jpg', await fixture('orientation_landscape_6.jpg'));
    await upload(s, PUB, 'corrupted.jpg', await fixture('corrupted.jpg'));
    await upload(s, PUB, 'text.txt', 'not an image');
    await upload(s, PRIV, 'p.jpg', await fixture('orientation_landscape_1.jpg'));
    await upload(s, PRIV, 'mark.png', await solid(20, 20, [255, 0, 0]));
    redUrl = `${s.url}/${PUB}/red.png`;
    origin = await startOrigin('127.0.0.1');
    origin.route('/blue.png', serveBytes(await solid(20, 20, [0, 0, 255]), 'image/png'));
  }, 60_000);
  afterAll(async () => {
    await origin?.close();
    await s?.stop();
  });

  describe('a mark read from the same bucket gets the checks of a download', () => {
    it('a disabled mark is refused (403), an expired one is missing (404)', async () => {
      await upload(s, PUB, 'mark-disabled.png', await solid(20, 20, [255, 0, 0]));
      expect((await sdk(bm.updateObjectStatus(PUB, 'mark-disabled.png', 1))).status).toBe(200);
      const disabled = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${s.url}/${PUB}/mark-disabled.png`)}`);
      expect(disabled.status).toBe(403);
      await upload(s, PUB, 'mark-expiring.png', await solid(20, 20, [255, 0, 0]));
      expect((await sdk(bm.deleteAfterDays(PUB, 'mark-expiring.png', 1))).status).toBe(200);
      s.clock.advance(2 * 86400);
      try {
        const expired = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${s.url}/${PUB}/mark-expiring.png`)}`);
        expect(expired.status).toBe(404);
      } finally {
        s.clock.advance(-2 * 86400);
      }
    });
  });

  describe('image marks', () => {
    // white.png is 200×160, the mark 20×20, default margins 10 px.
    const expectedAt: Record<string, [number, number]> = {
      NorthWest: [10, 10],
      North: [100, 10],
      NorthEast: [170, 10],
      West: [10, 80],
      Center: [100, 80],
      East: [170, 80],
      SouthWest: [10, 130],
      South: [100, 130],
      SouthEast: [170, 130],
    };

    it.each(Object.entries(expectedAt))('gravity %s puts the mark at %j', async (g, [x, y]) => {
      const r = await ok(`white.png?watermark/1/image/${b64(redUrl)}/gravity/${g}`);
      expect(r.headers.get('content-type')).toBe('image/png');
      const p = await pixels(r.body);
      expect([p.width, p.height]).toEqual([200, 160]);
      expect(bbox(p, isRed)).toEqual([x, y, 20, 20]);
      expect(bbox(p, notWhite)).toEqual([x, y, 20, 20]);
    });

    it('defaults: SouthEast, 10 px margins; dx/dy move it', async () => {
      expect(bbox(await pixels((await ok(`white.png?watermark/1/image/${b64(redUrl)}`)).body), isRed)).toEqual([170, 130, 20, 20]);
      const r = await ok(`white.png?watermark/1/image/${b64(redUrl)}/gravity/NorthWest/dx/0/dy/33`);
      expect(bbox(await pixels(r.body), isRed)).toEqual([0, 33, 20, 20]);
    });

    it('dissolve blends the mark', async () => {
      const p = await pixels((await ok(`white.png?watermark/1/image/${b64(redUrl)}/dissolve/50/gravity/NorthWest`)).body);
      expect(near(p.at(15, 15), [255, 128, 128], 3)).toBe(true);
      expect(near(p.at(50, 50), WHITE, 0)).toBe(true);
    });

    it('ws scales the mark relative to the base (short edge by default, wst picks the edges)', async () => {
      const short = await pixels((await ok(`white.png?watermark/1/image/${b64(redUrl)}/ws/0.5`)).body);
      expect(bbox(short, isRed)).toEqual([110, 70, 80, 80]);
      const width = await pixels((await ok(`white.png?watermark/1/image/${b64(redUrl)}/ws/0.25/wst/2/gravity/NorthWest`)).body);
      expect(bbox(width, isRed)).toEqual([10, 10, 50, 50]);
    });

    it('an image from a loopback origin admitted by GRANARY_OUTBOUND_ALLOW', async () => {
      const before = origin.requests.length;
      const r = await ok(`white.png?watermark/1/image/${b64(`${origin.base}/blue.png`)}/gravity/Center/dx/0/dy/0`);
      expect(bbox(await pixels(r.body), (px) => near(px, [0, 0, 255], 8))).toEqual([90, 70, 20, 20]);
      expect(origin.requests.length).toBe(before + 1);
      const missing = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${origin.base}/nope.png`)}`);
      expect(missing.status).toBe(404);
    });

    it('a JPEG base keeps its format; auto-oriented before marking', async () => {
      const r = await ok(`photo.jpg?watermark/1/image/${b64(redUrl)}/gravity/NorthWest/dx/0/dy/0`);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      const p = await pixels(r.body);
      expect(near(p.mean(3, 3, 14, 14), RED, 12)).toBe(true);
      // o6.jpg is stored 450×600; upright it is 600×450 and the mark lands at its upright top-left.
      const o = await pixels((await ok(`o6.jpg?watermark/1/image/${b64(redUrl)}/gravity/NorthWest/dx/0/dy/0`)).body);
      expect([o.width, o.height]).toEqual([600, 450]);
      expect(near(o.mean(3, 3, 14, 14), RED, 12)).toBe(true);
    });

    it('a mark larger than the base is 400', async () => {
      const r = await get(`${s.url}/${PUB}`, `tiny.png?watermark/1/image/${b64(redUrl)}`);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/watermark: the watermark image \(20x20\) is larger than the 10x10 image/);
      const scaled = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(redUrl)}/ws/1/wst/1`);
      expect(scaled.status).toBe(400);
    });

    it('the marks of one request together stay below 25,000,000 pixels', async () => {
      // Each mark scaled to 3200×3200 (10,240,000 pixels): two fit, the third is refused before decoding.
      const mark = `image/${b64(redUrl)}/ws/1`;
      const r = await get(`${s.url}/${PUB}`, `large.png?watermark/3/${mark}/${mark}/${mark}`);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/watermark: the marks together exceed 25000000 pixels/);
    });

    it('a missing or non-image mark is a clean error', async () => {
      expect((await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${s.url}/${PUB}/nope.png`)}`)).status).toBe(404);
      const t = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${s.url}/${PUB}/text.txt`)}`);
      expect(t.status).toBe(415);
      expect(errorOf(t)).toMatch(/watermark image: the source is not a supported image/);
    });
  });

  describe('text marks', () => {
    const text = (params: string): string => `wide.png?watermark/2/text/${b64('Granary 水印')}${params}`;

    it('renders in the expected corner with the fill colour', async () => {
      const r = await ok(text(`/fontsize/600/fill/${b64('#FF0000')}`));
      const p = await pixels(r.body);
      const box = bbox(p, notWhite);
      expect(box).toBeDefined();
      const [x, y, w, h] = box as [number, number, number, number];
      // SouthEast with 10 px margins: the ink ends near the bottom-right corner and starts past the middle.
      expect(x + w).toBeLessThanOrEqual(390);
      expect(x + w).toBeGreaterThan(350);
      expect(y + h).toBeLessThanOrEqual(190);
      expect(y).toBeGreaterThan(100);
      expect(x).toBeGreaterThan(150);
      expect(h).toBeGreaterThan(15);
      expect(bbox(p, isRed)).toBeDefined();
      expect(bbox(p, (px) => notWhite(px) && !(px[0] > 200 && px[1] < px[0] && px[2] < px[0]))).toBeUndefined();
    });

    it('fontsize 0 is the default (240 twips); size, fill names and fonts change the rendering', async () => {
      const zero = await ok(text('/fontsize/0'));
      const dflt = await ok(text(''));
      expect(zero.body.equals(dflt.body)).toBe(true);
      const small = bbox(await pixels(dflt.body), notWhite) as number[];
      const large = bbox(await pixels((await ok(text('/fontsize/720'))).body), notWhite) as number[];
      expect(large[3] as number).toBeGreaterThan((small[3] as number) * 2);
      const blue = await pixels((await ok(text(`/fontsize/600/fill/${b64('blue')}/gravity/NorthWest`))).body);
      expect(bbox(blue, (px) => px[2] > 200 && px[0] < 60 && px[1] < 60)).toBeDefined();
      const serif = await ok(text(`/font/${b64('DejaVu Serif Bold')}/fontsize/600`));
      const sans = await ok(text('/fontsize/600'));
      expect(serif.body.equals(sans.body)).toBe(false);
      // An unknown family falls back to the default face.
      expect((await ok(text(`/font/${b64('宋体')}/fontsize/600`))).body.equals(sans.body)).toBe(true);
    });

    it('dissolve applies to text too', async () => {
      const p = await pixels((await ok(text(`/fontsize/1200/fill/${b64('black')}/dissolve/40`))).body);
      const darkest = Math.min(...Array.from({ length: p.width * p.height }, (_, i) => p.at(i % p.width, Math.floor(i / p.width))[0]));
      expect(darkest).toBeGreaterThan(140);
      expect(darkest).toBeLessThan(170);
    });

    it('a text that cannot fit is 400', async () => {
      const r = await get(`${s.url}/${PUB}`, `tiny.png?watermark/2/text/${b64('far too long for ten pixels')}/fontsize/400`);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/watermark: the (text|watermark text)/);
    });
  });

  describe('mode 3, pipelines, private buckets', () => {
    it('mode 3 draws each mark with its own parameters', async () => {
      const q = `watermark/3/image/${b64(redUrl)}/gravity/NorthWest/dx/0/dy/0/text/${b64('Hi')}/fontsize/600/fill/${b64('blue')}/gravity/SouthEast`;
      const p = await pixels((await ok(`wide.png?${q}`)).body);
      expect(bbox(p, isRed)).toEqual([0, 0, 20, 20]);
      const blue = bbox(p, (px) => px[2] > 200 && px[0] < 60 && px[1] < 60) as number[];
      expect(blue[0] as number).toBeGreaterThan(300);
      expect(blue[1] as number).toBeGreaterThan(150);
    });

    it('imageMogr2 | watermark on a public bucket', async () => {
      const r = await ok(`photo.jpg?imageMogr2/thumbnail/100x/format/png|watermark/1/image/${b64(redUrl)}/gravity/NorthEast/dx/0/dy/0`);
      expect(r.headers.get('content-type')).toBe('image/png');
      const p = await pixels(r.body);
      expect([p.width, p.height]).toEqual([100, 75]);
      expect(near(p.mean(82, 2, 16, 16), RED, 6)).toBe(true);
    });

    it('imageMogr2 | watermark on a private bucket, the mark read from that bucket', async () => {
      const deadline = Math.floor(Date.now() / 1000) + 3600;
      const mark = `${s.url}/${PRIV}/mark.png`;
      const signed = bm.privateDownloadUrl(
        `${s.url}/${PRIV}`,
        `p.jpg?imageMogr2/thumbnail/200x/format/png|watermark/1/image/${b64(mark)}/gravity/SouthWest/dx/0/dy/0`,
        deadline,
      );
      const r = await fetch(signed);
      expect(r.status).toBe(200);
      const p = await pixels(Buffer.from(await r.arrayBuffer()));
      expect([p.width, p.height]).toEqual([200, 150]);
      expect(near(p.mean(2, 132, 16, 16), RED, 6)).toBe(true);
      expect((await get(`${s.url}/${PRIV}`, `p.jpg?watermark/1/image/${b64(mark)}`)).status).toBe(401);
    });
  });

  describe('bad input', () => {
    it.each([
      ['watermark', /watermark: mode must be/],
      ['watermark/4/image/aGk', /watermark: mode must be/],
      ['watermark/1', /watermark: mode 1 needs image/],
      ['watermark/2/dx/3', /watermark: mode 2 needs text/],
      ['watermark/1/image/!!!', /watermark: image is not URL-safe base64/],
      [`watermark/1/image/${b64('ftp://x/y.png')}`, /watermark: image must be an http\(s\) URL/],
      [`watermark/1/image/${b64('http://x/y.png')}/text/${b64('a')}`, /watermark: unknown parameter "text" for an image watermark/],
      [`watermark/1/image/${b64('http://x/y.png')}/dissolve/0`, /watermark: dissolve must be/],
      [`watermark/1/image/${b64('http://x/y.png')}/gravity/Up`, /watermark: unknown gravity "Up"/],
      [`watermark/1/image/${b64('http://x/y.png')}/ws/2`, /watermark: ws must be/],
      [`watermark/1/image/${b64('http://x/y.png')}/dx`, /watermark: parameter dx has no value/],
      [`watermark/2/text/${b64('a')}/fill/${b64('nocolour')}`, /watermark: fill must be/],
      [`watermark/2/text/${b64('a')}/fontsize/-1`, /watermark: fontsize must be/],
      [`watermark/2/text/${b64('x'.repeat(300))}`, /watermark: text must have/],
      [`watermark/3/dx/1/image/${b64('http://x/y.png')}`, /watermark: mode 3: dx before the first image or text/],
    ])('%s → 400', async (q, msg) => {
      const r = await get(`${s.url}/${PUB}`, `white.png?${q}`);
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(errorOf(r)).toMatch(msg);
    });

    it('a corrupted base fails cleanly', async () => {
      const r = await get(`${s.url}/${PUB}`, `corrupted.jpg?watermark/1/image/${b64(redUrl)}`);
      expect([400, 415]).toContain(r.status);
      expect(errorOf(r)).toMatch(/watermark/);
      expect((await get(`${s.url}/${PUB}`, 'white.png?imageInfo')).status).toBe(200);
    });
  });
});

describe('watermark without an outbound allow-list, small resource limit', () => {
  let s: TestServer;
  let origin: Origin;

  beforeAll(async () => {
    s = await startTestServer({ GRANARY_FOP_MAX_RESOURCE: '1000' });
    watchConnects(s, 'all');
    await createBucket(s, PUB);
    await upload(s, PUB, 'white.png', await solid(200, 160, [255, 255, 255]));
    await upload(s, PUB, 'photo.jpg', await fixture('orientation_landscape_1.jpg'));
    origin = await startOrigin('127.0.0.1');
    origin.route('/blue.png', serveBytes(await solid(20, 20, [0, 0, 255]), 'image/png'));
  }, 60_000);
  afterAll(async () => {
    await origin?.close();
    await s?.stop();
  });

  it('a loopback (private) URL is refused with 403 and never reached', async () => {
    const r = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${origin.base}/blue.png`)}`);
    expect(r.status).toBe(403);
    expect(errorOf(r)).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    expect(origin.connections()).toBe(0);
  });

  it('a mark above GRANARY_FOP_MAX_RESOURCE is 400', async () => {
    const r = await get(`${s.url}/${PUB}`, `white.png?watermark/1/image/${b64(`${s.url}/${PUB}/photo.jpg`)}`);
    expect(r.status).toBe(400);
    expect(errorOf(r)).toMatch(/watermark: the watermark image is larger than 1000 bytes/);
  });
});
