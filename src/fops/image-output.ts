/**
 * What every image-producing fop shares (docs/development/kodo-protocol.md §10.2, §10.3, §10.5): output formats and their content
 * types, encoding with a quality and interlacing, the output limits (at most 9,999 px per side and fewer than
 * 25,000,000 pixels, 400 naming the command) and the upright size of a source.
 */
import type { Metadata, Sharp } from 'sharp';
import { Errors } from '../errors.js';

/** Largest width or height of an image a fop produces, pixels. */
export const OUTPUT_MAX_SIDE = 9999;
/** An image a fop produces has fewer pixels than this. */
export const OUTPUT_MAX_PIXELS = 25_000_000;

/** Formats a fop can write. */
export type OutFormat = 'jpeg' | 'png' | 'webp' | 'gif' | 'avif' | 'tiff';

/** Format names accepted in `format/<name>` (case-insensitive; `jpg` is `jpeg`). */
const FORMAT_NAMES: Record<string, OutFormat> = {
  jpg: 'jpeg',
  jpeg: 'jpeg',
  png: 'png',
  webp: 'webp',
  gif: 'gif',
  avif: 'avif',
  tiff: 'tiff',
};

export const CONTENT_TYPES: Record<OutFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  avif: 'image/avif',
  tiff: 'image/tiff',
};

/** Formats whose size depends on a quality setting (size-limit can re-encode them smaller). */
export const LOSSY: ReadonlySet<OutFormat> = new Set(['jpeg', 'webp', 'avif']);

/** Parses `format/<v>`; 400 `<cmd>: unsupported format "<v>"`. */
export function parseFormat(cmd: string, v: string): OutFormat {
  const f = FORMAT_NAMES[v.toLowerCase()];
  if (!f) throw Errors.badRequest(`${cmd}: unsupported format ${JSON.stringify(v)} (jpg, png, webp, gif, avif or tiff)`);
  return f;
}

/** The requested format, else the source's own format when it can be written, else JPEG. */
export function outputFormatFor(meta: Metadata, requested: OutFormat | undefined): OutFormat {
  if (requested) return requested;
  const src = meta.format as string;
  return src in CONTENT_TYPES ? (src as OutFormat) : 'jpeg';
}

/**
 * libimagequant effort for animated GIF output (sharp's default is 7): every frame is quantised, and effort 3 (its
 * fast mode) is about 7× faster on a resized 72-frame 480×270 video GIF for ~6% larger files.
 */
export const ANIMATED_GIF_EFFORT = 3;

/** Encoding settings: quality 1..100 (lossy formats and TIFF), progressive/interlaced output. */
export interface EncodeOptions {
  quality: number;
  interlace: boolean;
  /** GIF and WebP: loop count (0 = forever) and per-frame delays (ms) of an animated output (animation.ts). */
  animation?: { loop: number; delay?: number[] };
}

/**
 * Sets the output format of `img` (sharp's defaults otherwise; AVIF quality is scaled to look alike). JPEG has no
 * alpha: transparent pixels are flattened onto white.
 */
export function encode(img: Sharp, format: OutFormat, { quality, interlace, animation }: EncodeOptions): Sharp {
  const anim = animation ? { loop: animation.loop, ...(animation.delay ? { delay: animation.delay } : {}) } : {};
  switch (format) {
    case 'jpeg':
      return img.flatten({ background: '#ffffff' }).jpeg({ quality, progressive: interlace, mozjpeg: false });
    case 'png':
      return img.png({ progressive: interlace });
    case 'webp':
      return img.webp({ quality, ...anim });
    case 'gif':
      return img.gif({ progressive: interlace, ...anim, ...(animation ? { effort: ANIMATED_GIF_EFFORT } : {}) });
    case 'avif':
      return img.avif({ quality: Math.max(1, Math.round(quality * 0.8)) });
    case 'tiff':
      return img.tiff({ quality });
  }
}

/** 400 (`Errors.imageTooLarge`) naming `cmd` when a `width`×`height` output exceeds the output limits. */
export function checkOutputSize(cmd: string, width: number, height: number): void {
  if (width > OUTPUT_MAX_SIDE || height > OUTPUT_MAX_SIDE || width * height >= OUTPUT_MAX_PIXELS) {
    throw Errors.imageTooLarge(
      `${cmd}: the output would be ${width}x${height}; outputs are at most ${OUTPUT_MAX_SIDE} px per side and fewer than ${OUTPUT_MAX_PIXELS} pixels`,
    );
  }
}

/** Width and height of a source once its EXIF orientation is applied (`orient`), else as stored. */
export function uprightSize(meta: Metadata, orient = true): { width: number; height: number } {
  const swap = orient && (meta.orientation ?? 1) >= 5;
  const w = meta.width as number;
  const h = meta.height as number;
  return swap ? { width: h, height: w } : { width: w, height: h };
}
