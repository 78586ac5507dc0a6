/**
 * Animated GIF and WebP under the image fops (docs/development/kodo-protocol.md §10.2–§10.5, src/fops/animation.ts): imageView2 and
 * imageMogr2 keep every frame (per-frame size, frame colours in order, loop and delays) when writing GIF or WebP;
 * other outputs take the first frame; imageInfo counts frames; watermarks land on every frame; too many frames
 * and GIF bombs (tiny frames on a large logical screen) are refused from the header.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upload } from '../helpers/http.js';
import { near, solid, type Rgb } from '../helpers/pixels.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const BUCKET = 'anim';
const W = 120;
const H = 80;
/** Frame i: its left half in COLOURS[i], its right half white. */
const COLOURS: Rgb[] = [
  [255, 0, 0],
  [0, 200, 0],
  [0, 0, 255],
  [0, 0, 0],
];
const WHITE: Rgb = [255, 255, 255];
const DELAYS = [100, 200, 300, 400];
const LOOP = 2;
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');

/** The test animation as raw RGBA frames stacked vertically. */
function frames(): Buffer {
  const raw = Buffer.alloc(W * H * COLOURS.length * 4);
  COLOURS.forEach((c, f) => {
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const o = ((f * H + y) * W + x) * 4;
        const [r, g, b] = x < W / 2 ? c : WHITE;
        raw[o] = r;
        raw[o + 1] = g;
        raw[o + 2] = b;
        raw[o + 3] = 255;
      }
    }
  });
  return raw;
}

function animation(format: 'gif' | 'webp'): Promise<Buffer> {
  const img = sharp(frames(), { raw: { width: W, height: H * COLOURS.length, channels: 4, pageHeight: H } });
  return (format === 'gif' ? img.gif({ loop: LOOP, delay: DELAYS }) : img.webp({ loop: LOOP, delay: DELAYS, lossless: true })).toBuffer();
}

/**
 * A hand-written GIF: a `sw`×`sh` logical screen and `n` frames of 1×1 pixel each (a few bytes per frame), so its
 * decoded size (sw × sh × n) is unrelated to its file size.
 */
function tinyFramesGif(sw: number, sh: number, n: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(sw, 0);
  screen.writeUInt16LE(sh, 2);
  screen[4] = 0x80; // a global colour table of 2 entries
  const parts = [Buffer.from('GIF89a'), screen, Buffer.from([0, 0, 0, 255, 0, 0])];
  parts.push(Buffer.from([0x21, 0xff, 0x0b]), Buffer.from('NETSCAPE2.0'), Buffer.from([3, 1, 0, 0, 0]));
  for (let i = 0; i < n; i++) {
    parts.push(Buffer.from([0x21, 0xf9, 4, 0, 10, 0, 0, 0])); // graphic control: 100 ms
    const desc = Buffer.alloc(10);
    desc[0] = 0x2c;
    desc.writeUInt16LE(1, 5);
    desc.writeUInt16LE(1, 7);
    // LZW, minimum code size 2: clear (4), index 0, end (5) in 3-bit codes.
    parts.push(desc, Buffer.from([2, 2, 0x44, 0x01, 0]));
  }
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}

interface Decoded {
  format: string;
  pages: number;
  width: number;
  pageHeight: number;
  loop: number | undefined;
  delay: number[] | undefined;
  /** [r, g, b] of frame `f` at (x, y). */
  at(f: number, x: number, y: number): Rgb;
}

async function decode(body: Buffer): Promise<Decoded> {
  const meta = await sharp(body).metadata();
  const { data, info } = await sharp(body, { animated: true }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const pages = meta.pages ?? 1;
  const pageHeight = info.height / pages;
  return {
    format: meta.format,
    pages,
    width: info.width,
    pageHeight,
    loop: meta.loop,
    delay: meta.delay,
    at: (f, x, y) => {
      const o = ((f * pageHeight + y) * info.width + x) * info.channels;
      return [data[o] as number, data[o + 1] as number, data[o + 2] as number];
    },
  };
}

interface Got {
  status: number;
  body: Buffer;
  headers: Headers;
}

describe('animated images', () => {
  let s: TestServer;

  const get = async (keyAndQuery: string, server = s): Promise<Got> => {
    const res = await fetch(`${server.url}/${BUCKET}/${keyAndQuery}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
  };
  const ok = async (keyAndQuery: string): Promise<Decoded> => {
    const r = await get(keyAndQuery);
    expect(r.status, `${keyAndQuery}: ${r.body.toString().slice(0, 300)}`).toBe(200);
    return decode(r.body);
  };
  const errorOf = (g: Got): string => String((JSON.parse(g.body.toString()) as { error: string }).error);

  /** Every frame is `width`×`height`, in order, with the source's loop and delays. */
  const expectFrames = (d: Decoded, width: number, height: number): void => {
    expect(d.pages).toBe(COLOURS.length);
    expect([d.width, d.pageHeight]).toEqual([width, height]);
    expect(d.loop).toBe(LOOP);
    expect(d.delay).toEqual(DELAYS);
  };
  /** At (x, y) every frame shows its own colour (`own`) or white. */
  const expectColourAt = (d: Decoded, x: number, y: number, own: boolean): void => {
    COLOURS.forEach((c, f) => {
      const want = own ? c : WHITE;
      expect(near(d.at(f, x, y), want, 40), `frame ${f} at (${x},${y}) is ${d.at(f, x, y).join(',')}, want ${want.join(',')}`).toBe(true);
    });
  };

  beforeAll(async () => {
    s = await startTestServer();
    await createBucket(s, BUCKET);
    await upload(s, BUCKET, 'a.gif', await animation('gif'));
    await upload(s, BUCKET, 'a.webp', await animation('webp'));
    await upload(s, BUCKET, 'mark.png', await solid(20, 20, [255, 0, 255]));
    await upload(s, BUCKET, 'still.gif', await sharp(await solid(30, 20, [255, 0, 0])).gif().toBuffer());
    await upload(s, BUCKET, 'frames1001.gif', tinyFramesGif(1, 1, 1001));
    // 200 frames on a 1000×1000 screen: 200,000,000 pixels decoded from 4.6 kB, over GRANARY_FOP_MAX_PIXELS.
    await upload(s, BUCKET, 'bomb.gif', tinyFramesGif(1000, 1000, 200));
  }, 60_000);
  afterAll(async () => s?.stop());

  describe.each(['gif', 'webp'] as const)('%s source', (fmt) => {
    const key = `a.${fmt}`;
    const type = `image/${fmt}`;

    it('the test source is what the tests assume', async () => {
      const d = await decode(await animation(fmt));
      expectFrames(d, W, H);
      expectColourAt(d, 10, 40, true);
      expectColourAt(d, 100, 40, false);
    });

    it('imageView2 mode 1 centre-crops every frame to exactly W×H', async () => {
      const r = await get(`${key}?imageView2/1/w/40/h/40`);
      expect(r.headers.get('content-type')).toBe(type);
      const d = await decode(r.body);
      // 120×80 → 60×40, then the centre 40×40 (x 10..50 of the 60): left 20 px coloured, right 20 px white.
      expectFrames(d, 40, 40);
      expectColourAt(d, 5, 20, true);
      expectColourAt(d, 35, 20, false);
    });

    it('imageView2 mode 2 scales every frame (sizes from one frame, not the stack)', async () => {
      const d = await ok(`${key}?imageView2/2/w/60/h/60`);
      expectFrames(d, 60, 40);
      expectColourAt(d, 10, 20, true);
      expectColourAt(d, 50, 20, false);
    });

    it('imageMogr2 thumbnail', async () => {
      const d = await ok(`${key}?imageMogr2/thumbnail/x40`);
      expectFrames(d, 60, 40);
      expectColourAt(d, 10, 20, true);
      expectColourAt(d, 50, 20, false);
    });

    it('imageMogr2 crop with offsets cuts the same box from every frame', async () => {
      // x 40..120, y 20..60: the first 20 columns coloured, the rest white.
      const d = await ok(`${key}?imageMogr2/crop/!80x40a40a20`);
      expectFrames(d, 80, 40);
      expectColourAt(d, 10, 20, true);
      expectColourAt(d, 60, 20, false);
    });

    it('imageMogr2 rotate 90 turns every frame (the coloured left half comes on top)', async () => {
      const d = await ok(`${key}?imageMogr2/rotate/90`);
      expectFrames(d, 80, 120);
      expectColourAt(d, 40, 20, true);
      expectColourAt(d, 40, 100, false);
    });

    it('imageMogr2 thumbnail, crop and a 30° rotation together', async () => {
      // 120×80 → 60×40 → crop 40×40 at (0,0) → rotated bounding box ceil(40cos30 + 40sin30) = 55.
      const d = await ok(`${key}?imageMogr2/thumbnail/60x/crop/40x40/rotate/30`);
      expectFrames(d, 55, 55);
      expectColourAt(d, 27, 27, true);
    });

    it('imageMogr2 blur works frame by frame (no colour bleeds from the neighbouring frame)', async () => {
      const d = await ok(`${key}?imageMogr2/blur/5x3`);
      expectFrames(d, W, H);
      expectColourAt(d, 15, 0, true);
      expectColourAt(d, 15, H - 1, true);
    });

    it('format/png, format/jpg and format/avif take the first frame', async () => {
      for (const [f, ct] of [
        ['png', 'image/png'],
        ['jpg', 'image/jpeg'],
        ['avif', 'image/avif'],
      ]) {
        const r = await get(`${key}?imageView2/2/w/60/format/${f}`);
        expect(r.status, r.body.toString().slice(0, 200)).toBe(200);
        expect(r.headers.get('content-type')).toBe(ct);
        const d = await decode(r.body);
        expect(d.pages, f).toBe(1);
        expect([d.width, d.pageHeight]).toEqual([60, 40]);
        expect(near(d.at(0, 10, 20), COLOURS[0] as Rgb, 40), `${f}: ${d.at(0, 10, 20).join(',')}`).toBe(true);
      }
    });

    it('converting between GIF and WebP keeps the animation', async () => {
      const other = fmt === 'gif' ? 'webp' : 'gif';
      const r = await get(`${key}?imageMogr2/format/${other}`);
      expect(r.headers.get('content-type')).toBe(`image/${other}`);
      const d = await decode(r.body);
      expect(d.format).toBe(other);
      expectFrames(d, W, H);
      expectColourAt(d, 10, 40, true);
      expectColourAt(d, 100, 40, false);
    });

    it('imageInfo reports one frame’s size and the frame count', async () => {
      const r = await get(`${key}?imageInfo`);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body.toString())).toMatchObject({ format: fmt, width: W, height: H, frameNumber: COLOURS.length });
    });

    it('watermark lands on every frame at the gravity of one frame', async () => {
      const markUrl = `${s.url}/${BUCKET}/mark.png`;
      const r = await get(`${key}?watermark/1/image/${b64(markUrl)}/gravity/SouthEast/dx/10/dy/10`);
      expect(r.status, r.body.toString().slice(0, 200)).toBe(200);
      expect(r.headers.get('content-type')).toBe(type);
      const d = await decode(r.body);
      expectFrames(d, W, H);
      // The mark covers x 90..110, y 50..70 of each frame.
      for (let f = 0; f < COLOURS.length; f++) {
        expect(near(d.at(f, 100, 60), [255, 0, 255], 40), `frame ${f}: ${d.at(f, 100, 60).join(',')}`).toBe(true);
        expect(near(d.at(f, 100, 20), WHITE, 40)).toBe(true);
      }
      expectColourAt(d, 10, 40, true);
    });

    it('size-limit re-encodes WebP output as an animation', async () => {
      const d = await ok(`${key}?imageMogr2/format/webp/quality/90/size-limit/1k`);
      expect(d.pages).toBe(COLOURS.length);
      expect(d.pageHeight).toBe(H);
      expect(d.delay).toEqual(DELAYS);
    });
  });

  it('a still GIF has one frame', async () => {
    const r = await get('still.gif?imageInfo');
    expect(JSON.parse(r.body.toString())).toMatchObject({ format: 'gif', width: 30, height: 20, frameNumber: 1 });
    const d = await ok('still.gif?imageView2/2/w/15');
    expect([d.pages, d.width, d.pageHeight]).toEqual([1, 15, 10]);
  });

  it('more than GRANARY_FOP_MAX_FRAMES frames → 400 from the header, under every image command', async () => {
    for (const q of ['imageInfo', 'imageView2/2/w/1', 'imageMogr2/format/png', 'imageAve']) {
      const r = await get(`frames1001.gif?${q}`);
      expect(r.status, q).toBe(400);
      expect(errorOf(r)).toMatch(/1001 frames.*1000 \(GRANARY_FOP_MAX_FRAMES\)/);
    }
  });

  it('a GIF bomb (tiny frames on a large screen) is refused before decoding; the server keeps serving', async () => {
    for (const q of ['imageView2/2/w/100', 'imageMogr2/thumbnail/10x', 'imageInfo']) {
      const r = await get(`bomb.gif?${q}`);
      expect(r.status, q).toBe(400);
      expect(errorOf(r)).toMatch(/200 frames of 1000x1000, 200000000 pixels in all/);
    }
    expect((await get('a.gif?imageInfo')).status).toBe(200);
  });

  describe('output limits', () => {
    let small: TestServer;
    beforeAll(async () => {
      small = await startTestServer({ GRANARY_FOP_MAX_PIXELS: '500000', GRANARY_FOP_MAX_FRAMES: '4' });
      await createBucket(small, BUCKET);
      await upload(small, BUCKET, 'a.gif', await animation('gif'));
      await upload(small, BUCKET, 'five.gif', tinyFramesGif(2, 2, 5));
    }, 60_000);
    afterAll(async () => small?.stop());

    it('GRANARY_FOP_MAX_FRAMES is configurable', async () => {
      expect((await get('a.gif?imageInfo', small)).status).toBe(200);
      const r = await get('five.gif?imageInfo', small);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/5 frames, the limit is 4/);
    });

    it('an animated output over GRANARY_FOP_MAX_PIXELS over all frames → 400; as a still image it passes', async () => {
      // 4 frames of 600×400 = 960,000 pixels.
      const r = await get('a.gif?imageMogr2/thumbnail/!500p', small);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/4 frames of 600x400/);
      const png = await get('a.gif?imageMogr2/thumbnail/!500p/format/png', small);
      expect(png.status).toBe(200);
      expect((await sharp(png.body).metadata()).width).toBe(600);
    });

    it('the limit counts the rotated bounding box of every frame', async () => {
      // 360×240 per frame is 345,600 pixels in all; rotated 45° each frame is 425×425, 722,500 in all.
      expect((await get('a.gif?imageMogr2/thumbnail/!300p', small)).status).toBe(200);
      const r = await get('a.gif?imageMogr2/thumbnail/!300p/rotate/45', small);
      expect(r.status).toBe(400);
      expect(errorOf(r)).toMatch(/4 frames of 425x425/);
    });
  });
});
