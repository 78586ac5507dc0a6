/** imageMogr2 parameters and geometry arithmetic, gravity placement, output limits (docs/development/kodo-protocol.md §10.3). */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { anchorBox, insetBox, parseGravity } from '../../src/fops/gravity.js';
import { checkOutputSize } from '../../src/fops/image-output.js';
import { effectiveQuality, estimateJpegQuality } from '../../src/fops/jpeg-quality.js';
import { cropRect, parseCrop, parseThumbnail, rotatedSize, thumbnailSize } from '../../src/fops/mogr2-geometry.js';
import { parseImageMogr2 } from '../../src/fops/mogr2-params.js';
import { parsePipeline } from '../../src/fops/registry.js';
import { status400 } from '../helpers/errors.js';


describe('thumbnail geometry', () => {
  // Source 600×450 (landscape) and 450×600 (portrait); expected sizes worked out by hand.
  it.each([
    ['!50p', 600, 450, 300, 225],
    ['!150p', 600, 450, 900, 675],
    ['!50px', 600, 450, 300, 450],
    ['!x50p', 600, 450, 600, 225],
    ['300x', 600, 450, 300, 225],
    ['1200x', 600, 450, 1200, 900],
    ['x90', 600, 450, 120, 90],
    ['200x200', 600, 450, 200, 150],
    ['200x200', 450, 600, 150, 200],
    ['1200x1200', 600, 450, 1200, 900],
    ['!200x200r', 600, 450, 267, 200],
    ['!200x200r', 450, 600, 200, 267],
    ['200x300!', 600, 450, 200, 300],
    ['300x300>', 600, 450, 300, 225],
    ['700x700>', 600, 450, 600, 450],
    ['700x400>', 600, 450, 533, 400],
    ['1200x1200<', 600, 450, 1200, 900],
    ['700x400<', 600, 450, 600, 450],
    ['300x>', 600, 450, 300, 225],
    ['x900<', 600, 450, 1200, 900],
    ['30000@', 600, 450, 200, 150],
    ['1080000@', 600, 450, 1200, 900],
  ])('%s on %ix%i → %ix%i', (g, sw, sh, w, h) => {
    expect(thumbnailSize(parseThumbnail(g), sw, sh)).toEqual({ width: w, height: h });
  });

  it('area results never exceed the area', () => {
    for (const area of [1, 7, 1000, 12345, 99999]) {
      const { width, height } = thumbnailSize({ kind: 'area', area }, 641, 479);
      expect(width * height <= area || width === 1 || height === 1).toBe(true);
    }
  });

  it.each(['', 'abc', '!p', '!0p', '!1000p', '0x10', '10000x', 'x', '10x10r', '!10x10', '10x!', '5x5@', '0@', '25000000@', '-5x5'])(
    'rejects %j',
    (g) => status400(() => parseThumbnail(g), /imageMogr2: .*thumbnail/),
  );
});

describe('crop geometry', () => {
  it.each([
    ['300x', 'NorthWest', { left: 0, top: 0, width: 300, height: 450 }],
    ['x100', 'NorthWest', { left: 0, top: 0, width: 600, height: 100 }],
    ['200x100', 'Center', { left: 200, top: 175, width: 200, height: 100 }],
    ['200x100', 'SouthEast', { left: 400, top: 350, width: 200, height: 100 }],
    ['200x100', 'North', { left: 200, top: 0, width: 200, height: 100 }],
    ['200x100', 'East', { left: 400, top: 175, width: 200, height: 100 }],
    ['!200x100a30a40', 'NorthWest', { left: 30, top: 40, width: 200, height: 100 }],
    ['!400x400-30a100', 'NorthWest', { left: 0, top: 100, width: 370, height: 350 }],
    ['!400x400a30-100', 'NorthWest', { left: 30, top: 0, width: 400, height: 300 }],
    ['!200x100a50a0', 'SouthEast', { left: 450, top: 350, width: 150, height: 100 }],
    ['!200x100-50-50', 'SouthEast', { left: 350, top: 300, width: 200, height: 100 }],
    ['900x900', 'Center', { left: 0, top: 0, width: 600, height: 450 }],
  ] as const)('%s at %s on 600x450', (g, gravity, rect) => {
    expect(cropRect(parseCrop(g), gravity, 600, 450)).toEqual(rect);
  });

  it('a region entirely outside is a 400', () => {
    status400(() => cropRect(parseCrop('!100x100a700a0'), 'NorthWest', 600, 450), /outside/);
  });

  it.each(['', 'x', '0x10', '10x10a5', '!10x10b5b5', '10001x', '10x10+5+5'])('rejects %j', (g) =>
    status400(() => parseCrop(g), /imageMogr2: .*crop/),
  );
});

describe('rotation and gravity', () => {
  it('rotated bounding boxes', () => {
    expect(rotatedSize(200, 100, 90)).toEqual({ width: 100, height: 200 });
    expect(rotatedSize(200, 100, 180)).toEqual({ width: 200, height: 100 });
    expect(rotatedSize(200, 100, 270)).toEqual({ width: 100, height: 200 });
    expect(rotatedSize(100, 100, 45)).toEqual({ width: 142, height: 142 });
  });

  it('anchors and insets at the nine gravities', () => {
    const W = 100;
    const H = 80;
    const expectBox = { NorthWest: [0, 0], North: [40, 0], NorthEast: [80, 0], West: [0, 30], Center: [40, 30], East: [80, 30], SouthWest: [0, 60], South: [40, 60], SouthEast: [80, 60] };
    for (const [g, [l, t]] of Object.entries(expectBox)) {
      expect(anchorBox(parseGravity('x', g), W, H, 20, 20)).toEqual({ left: l, top: t });
      const inset = insetBox(parseGravity('x', g), W, H, 20, 20, 5, 7);
      const dl = g.endsWith('East') ? -5 : 5;
      const dt = g.startsWith('South') ? -7 : 7;
      expect(inset).toEqual({ left: (l as number) + dl, top: (t as number) + dt });
    }
    expect(parseGravity('x', 'southeast')).toBe('SouthEast');
    status400(() => parseGravity('imageMogr2', 'Up'), /imageMogr2: unknown gravity "Up"/);
  });

  it('output limits', () => {
    expect(() => checkOutputSize('x', 9999, 2500)).not.toThrow();
    status400(() => checkOutputSize('imageMogr2', 10000, 10), /imageMogr2: the output would be 10000x10/);
    status400(() => checkOutputSize('imageView2', 5000, 5000), /imageView2: .*25000000/);
  });
});

describe('parseImageMogr2', () => {
  it('parses every parameter', () => {
    expect(
      parseImageMogr2(
        'auto-orient/thumbnail/!50p/strip/gravity/center/crop/!100x50a5-6/rotate/90/format/webp/blur/3x1.5/interlace/1/quality/80!/size-limit/15k!'.split('/'),
      ),
    ).toEqual({
      autoOrient: true,
      strip: true,
      thumbnail: { kind: 'percent', pw: 50, ph: 50 },
      gravity: 'Center',
      crop: { w: 100, h: 50, dx: 5, dy: -6 },
      rotate: 90,
      format: 'webp',
      blur: { radius: 3, sigma: 1.5 },
      interlace: true,
      quality: 80,
      forceQuality: true,
      sizeLimit: { bytes: 15 * 1024, orSource: true },
    });
    expect(parseImageMogr2(['size-limit', '2m']).sizeLimit).toEqual({ bytes: 2 * 1024 * 1024, orSource: false });
    expect(parseImageMogr2(['rotate', '360']).rotate).toBeUndefined();
    expect(parseImageMogr2(['format', 'JPG']).format).toBe('jpeg');
  });

  it.each([
    ['imageMogr2', /no operation/],
    ['imageMogr2/frob/1', /unknown parameter "frob"/],
    ['imageMogr2/rotate/0', /rotate must be/],
    ['imageMogr2/rotate/361', /rotate must be/],
    ['imageMogr2/rotate', /rotate has no value/],
    ['imageMogr2/quality/0', /quality must be/],
    ['imageMogr2/quality/101', /quality must be/],
    ['imageMogr2/format/bmp', /unsupported format "bmp"/],
    ['imageMogr2/blur/0x1', /blur must be/],
    ['imageMogr2/blur/3', /blur must be/],
    ['imageMogr2/blur/3x51', /blur must be/],
    ['imageMogr2/interlace/2', /interlace must be/],
    ['imageMogr2/size-limit/10g', /size-limit must be/],
    ['imageMogr2/size-limit/0', /size-limit must be/],
    ['imageMogr2/strip/strip', /strip given twice/],
    ['imageMogr2/gravity/Up', /unknown gravity/],
    ['imageMogr2/thumbnail/big', /bad thumbnail geometry "big"/],
    ['imageMogr2/crop/big', /bad crop geometry "big"/],
  ])('%s → 400 %s', (q, msg) => status400(() => parsePipeline(q), msg));
});

describe('JPEG quality estimate', () => {
  it('recovers the quality libjpeg was given', async () => {
    const img = sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 90, g: 120, b: 200 } } });
    for (const q of [30, 60, 75, 85, 95]) {
      const jpeg = await img.clone().jpeg({ quality: q, mozjpeg: false }).toBuffer();
      expect(Math.abs((estimateJpegQuality(jpeg) as number) - q)).toBeLessThanOrEqual(1);
      expect(effectiveQuality(jpeg, 90, false)).toBe(Math.min(90, estimateJpegQuality(jpeg) as number));
      expect(effectiveQuality(jpeg, 90, true)).toBe(90);
    }
  });

  it('is undefined for other data', async () => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: 'red' } }).png().toBuffer();
    expect(estimateJpegQuality(png)).toBeUndefined();
    expect(estimateJpegQuality(Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0x00]))).toBeUndefined();
    expect(estimateJpegQuality(Buffer.alloc(0))).toBeUndefined();
    expect(effectiveQuality(png, 80, false)).toBe(80);
  });
});
