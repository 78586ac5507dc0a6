/**
 * Opening an image for a fop: the header is read first (sharp metadata, no decoding) so decompression bombs and
 * non-images are refused before any pixel is decoded; then a sharp pipeline with `limitInputPixels`, `failOn`
 * and a timeout. libvips errors become 4xx Kodo errors, never a crash.
 *
 * `loadImage(cmd, source, ctx)` is the entry point for commands that decode pixels: it also decodes HEIC
 * (which libvips cannot) through heif-convert (heif.ts) into a PNG, so every image command accepts iPhone photos.
 */
import type { Metadata, Sharp } from 'sharp';
import { Errors, isKodoError } from '../errors.js';
import { checkFrames } from './animation.js';
import { heifToPng } from './heif.js';
import type { FopContext, FopLimits, FopSource } from './types.js';
import { loadSharp } from './sharp.js';

/** Formats sharp decodes fully (HEIF here is HEIC and cannot be decoded by the prebuilt libvips). */
const DECODABLE = new Set(['jpeg', 'png', 'webp', 'gif', 'avif', 'tiff']);

/** The checked header of a source image. */
export async function readHeader(cmd: string, input: Buffer | string, limits: FopLimits): Promise<Metadata> {
  let meta: Metadata;
  try {
    meta = await loadSharp()(input, { limitInputPixels: false }).metadata();
  } catch {
    throw Errors.unsupportedImage(`${cmd}: the source is not a supported image`);
  }
  const { width, height } = meta;
  if (!width || !height) throw Errors.unsupportedImage(`${cmd}: the source has no image dimensions`);
  if (width > limits.maxSide || height > limits.maxSide || width * height > limits.maxPixels) {
    throw Errors.imageTooLarge(
      `${cmd}: source is ${width}x${height}, limits are ${limits.maxSide} px per side and ${limits.maxPixels} pixels`,
    );
  }
  checkFrames(cmd, meta, limits);
  return meta;
}

/** Whether sharp can decode the pixels of an image with this header. */
export function decodable(meta: Metadata): boolean {
  return DECODABLE.has(meta.format) || (meta.format === 'heif' && meta.compression === 'av1');
}

/** Whether the header is of a HEIC image (HEIF with HEVC), which heif-convert decodes instead of libvips. */
export function isHeic(meta: Metadata): boolean {
  return meta.format === 'heif' && meta.compression === 'hevc';
}

/** The format name Kodo uses for an image with this header: `heic`/`avif` for the two kinds of HEIF. */
export function formatName(meta: Metadata): string {
  if (meta.format === 'heif') return meta.compression === 'av1' ? 'avif' : meta.compression === 'hevc' ? 'heic' : 'heif';
  return meta.format;
}

/** A checked source image ready to decode with `openImage(cmd, input, meta, limits)`. */
export interface LoadedImage {
  /** The bytes of the source, or a local file (the PNG a HEIC source was converted to). */
  input: Buffer | string;
  /** The header of `input` (a PNG header for a converted HEIC). */
  meta: Metadata;
  /** The header of the source as stored (format `heif` for a HEIC source). */
  original: Metadata;
}

/**
 * Reads and checks a source image (limits from the header, before decoding); a HEIC source is converted to a
 * PNG by heif-convert (415 naming GRANARY_HEIF_CONVERT when it is not installed). Other formats are returned as
 * they are: `openImage` answers 415 for those it cannot decode.
 */
export async function loadImage(cmd: string, source: FopSource, ctx: FopContext): Promise<LoadedImage> {
  const bytes = await source.bytes();
  const original = await readHeader(cmd, bytes, ctx.limits);
  if (!isHeic(original)) return { input: bytes, meta: original, original };
  const png = await heifToPng(cmd, source, ctx);
  return { input: png, meta: await readHeader(cmd, png, ctx.limits), original };
}

/** A decoding pipeline over a checked source; throws 415 when its pixels cannot be decoded. */
export function openImage(cmd: string, input: Buffer | string, meta: Metadata, limits: FopLimits): Sharp {
  if (!decodable(meta)) throw Errors.unsupportedImage(`${cmd}: cannot decode ${meta.format} images`);
  return loadSharp()(input, { limitInputPixels: limits.maxPixels, failOn: 'error', sequentialRead: true }).timeout({
    seconds: limits.timeoutSeconds,
  });
}

/** Runs one libvips step, mapping its failures to 400 (corrupt data, timeouts) instead of 5xx. */
export async function vips<T>(cmd: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (isKodoError(err)) throw err;
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    if (/timeout/i.test(msg ?? '')) throw Errors.fopFailed(`${cmd}: processing timed out`);
    throw Errors.fopFailed(`${cmd}: ${msg ?? 'cannot decode the image'}`);
  }
}
