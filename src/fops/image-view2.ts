/**
 * `imageView2/<mode>/w/<W>/h/<H>/format/<fmt>/interlace/<0|1>/q/<1..100>[!]` (docs/development/kodo-protocol.md §10.2). EXIF
 * orientation is applied first; sizes are computed on the upright image; images are never enlarged. The output
 * must fit the output limits of image-output.ts (400 otherwise). An animated GIF/WebP stays animated when the
 * output is GIF or WebP, every frame resized and cropped alike (sizes computed on one frame); other outputs take
 * the first frame (animation.ts).
 */
import { Errors } from '../errors.js';
import { checkAnimatedOutput, keptAnimation, openAnimated } from './animation.js';
import {
  checkOutputSize,
  CONTENT_TYPES,
  encode,
  OUTPUT_MAX_PIXELS as MAX_AREA,
  OUTPUT_MAX_SIDE as MAX_EDGE,
  outputFormatFor,
  parseFormat,
  uprightSize,
  type OutFormat,
} from './image-output.js';
import { loadImage, openImage, vips } from './image-source.js';
import { effectiveQuality } from './jpeg-quality.js';
import type { FopCommand } from './types.js';

export interface ImageView2Params {
  mode: 0 | 1 | 2 | 3 | 4 | 5;
  w?: number;
  h?: number;
  format?: OutFormat;
  interlace: boolean;
  quality: number;
  /** `q/<n>!`: use the quality as given; without `!`, at most the source JPEG's own (jpeg-quality.ts). */
  forceQuality: boolean;
}

/** Resize to `width`×`height`, then (modes 1 and 5) centre-crop to `crop`. */
export interface Geometry {
  width: number;
  height: number;
  crop?: { width: number; height: number };
}

const bad = (what: string): never => {
  throw Errors.badRequest(`imageView2: ${what}`);
};

function edge(name: string, v: string): number {
  if (!/^\d+$/.test(v)) bad(`${name} must be an integer, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < 1 || n > MAX_EDGE) bad(`${name} must be between 1 and ${MAX_EDGE}, got ${v}`);
  return n;
}

export function parseImageView2(args: string[]): ImageView2Params {
  const modeText = args[0];
  if (modeText === undefined || !/^[0-5]$/.test(modeText)) bad(`mode must be 0..5, got ${JSON.stringify(modeText ?? '')}`);
  const p: ImageView2Params = { mode: Number(modeText) as ImageView2Params['mode'], interlace: false, quality: 75, forceQuality: false };
  const rest = args.slice(1);
  if (rest.length % 2 !== 0) bad(`parameter ${rest[rest.length - 1]} has no value`);
  const seen = new Set<string>();
  for (let i = 0; i < rest.length; i += 2) {
    const k = rest[i] as string;
    const v = rest[i + 1] as string;
    if (seen.has(k)) bad(`parameter ${k} given twice`);
    seen.add(k);
    if (k === 'w') p.w = edge('w', v);
    else if (k === 'h') p.h = edge('h', v);
    else if (k === 'format') p.format = parseFormat('imageView2', v);
    else if (k === 'interlace') {
      if (v !== '0' && v !== '1') bad(`interlace must be 0 or 1, got ${JSON.stringify(v)}`);
      p.interlace = v === '1';
    } else if (k === 'q') {
      const m = /^(\d{1,3})(!?)$/.exec(v);
      const q = m ? Number(m[1]) : NaN;
      if (!m || q < 1 || q > 100) bad(`q must be 1..100 (optionally followed by !), got ${JSON.stringify(v)}`);
      p.quality = q;
      p.forceQuality = m?.[2] === '!';
    } else bad(`unknown parameter ${JSON.stringify(k)}`);
  }
  if (p.w === undefined && p.h === undefined) bad('w or h is required');
  const area = (p.w ?? p.h ?? 0) * (p.h ?? p.w ?? 0);
  if (area >= MAX_AREA) bad(`w×h must be below ${MAX_AREA}`);
  return p;
}

const minOf = (...xs: (number | undefined)[]): number => Math.min(...xs.filter((x): x is number => x !== undefined));
const maxOf = (...xs: (number | undefined)[]): number => Math.max(...xs.filter((x): x is number => x !== undefined));
const ratio = (bound: number | undefined, side: number): number | undefined => (bound === undefined ? undefined : bound / side);

/** Output geometry of imageView2 for an upright `sw`×`sh` source. */
export function imageView2Geometry(p: Pick<ImageView2Params, 'mode' | 'w' | 'h'>, sw: number, sh: number): Geometry {
  const long = Math.max(sw, sh);
  const short = Math.min(sw, sh);
  let scale: number;
  let crop: { width: number; height: number } | undefined;
  switch (p.mode) {
    case 0:
      scale = minOf(ratio(p.w, long), ratio(p.h, short));
      break;
    case 2:
      scale = minOf(ratio(p.w, sw), ratio(p.h, sh));
      break;
    case 3:
      scale = maxOf(ratio(p.w, sw), ratio(p.h, sh));
      break;
    case 4:
      scale = maxOf(ratio(p.w, long), ratio(p.h, short));
      break;
    case 1: {
      const W = (p.w ?? p.h) as number;
      const H = (p.h ?? p.w) as number;
      scale = Math.max(W / sw, H / sh);
      crop = { width: W, height: H };
      break;
    }
    case 5: {
      const L = (p.w ?? p.h) as number;
      const S = (p.h ?? p.w) as number;
      scale = Math.max(L / long, S / short);
      crop = sw >= sh ? { width: L, height: S } : { width: S, height: L };
      break;
    }
  }
  scale = Math.min(1, scale);
  const width = Math.max(1, Math.round(sw * scale));
  const height = Math.max(1, Math.round(sh * scale));
  if (!crop) return { width, height };
  return { width, height, crop: { width: Math.min(crop.width, width), height: Math.min(crop.height, height) } };
}

export const imageView2: FopCommand<ImageView2Params> = {
  name: 'imageView2',
  parse: parseImageView2,
  async run(source, p, ctx) {
    const { limits } = ctx;
    const { input, meta, original } = await loadImage('imageView2', source, ctx);
    // The stored format decides the default output (HEIC → JPEG, not the PNG it was decoded through).
    const format = outputFormatFor(original, p.format);
    const anim = keptAnimation(meta, format);
    const { width: sw, height: sh } = anim ?? uprightSize(meta);
    const g = imageView2Geometry(p, sw, sh);
    const out = g.crop ?? g;
    if (anim) checkAnimatedOutput('imageView2', out.width, out.height, anim.frames, limits.maxPixels);
    else checkOutputSize('imageView2', out.width, out.height);
    const body = await vips('imageView2', () => {
      let img = anim ? openAnimated(input, limits) : openImage('imageView2', input, meta, limits).rotate();
      img = img.resize(g.width, g.height, { fit: 'fill' });
      if (g.crop) {
        const left = Math.floor((g.width - g.crop.width) / 2);
        const top = Math.floor((g.height - g.crop.height) / 2);
        img = img.extract({ left, top, width: g.crop.width, height: g.crop.height });
      }
      const quality = typeof input === 'string' ? p.quality : effectiveQuality(input, p.quality, p.forceQuality);
      return encode(img, format, { quality, interlace: p.interlace, ...(anim ? { animation: anim } : {}) }).toBuffer();
    });
    return { body, contentType: CONTENT_TYPES[format] };
  },
};
