/**
 * Opening an image for a fop: the header is read first (sharp metadata, no decoding) so decompression bombs and
 * non-images are refused before any pixel is decoded; then a sharp pipeline with `limitInputPixels`, `failOn`
 * and a timeout. libvips errors become 4xx Kodo errors, never a crash.
 */
import sharp, { type Metadata, type Sharp } from 'sharp';
import { Errors, isKodoError } from '../errors.js';
import { checkFrames } from './animation.js';
import type { FopLimits } from './types.js';

/** Formats sharp decodes fully (HEIF here is HEIC and cannot be decoded by the prebuilt libvips). */
const DECODABLE = new Set(['jpeg', 'png', 'webp', 'gif', 'avif', 'tiff']);

/** The checked header of a source image. */
export async function readHeader(cmd: string, input: Buffer, limits: FopLimits): Promise<Metadata> {
  let meta: Metadata;
  try {
    meta = await sharp(input, { limitInputPixels: false }).metadata();
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

/** A decoding pipeline over a checked source; throws 415 when its pixels cannot be decoded. */
export function openImage(cmd: string, input: Buffer, meta: Metadata, limits: FopLimits): Sharp {
  if (!decodable(meta)) throw Errors.unsupportedImage(`${cmd}: cannot decode ${meta.format} images`);
  return sharp(input, { limitInputPixels: limits.maxPixels, failOn: 'error', sequentialRead: true }).timeout({
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
