/**
 * Animated images (GIF and WebP with more than one frame) in the image fops (docs/development/kodo-protocol.md §10.2–§10.5).
 *
 * - **Sources.** sharp reads the header of an animated GIF/WebP as one frame (`width` × `height`) plus `pages`,
 *   `loop` and per-frame `delay` (ms). A source with more than `limits.maxFrames` frames (GRANARY_FOP_MAX_FRAMES),
 *   or whose frames together have more than `limits.maxPixels` pixels (width × frame height × frames,
 *   GRANARY_FOP_MAX_PIXELS), is refused with 400 from the header, before any pixel is decoded — whatever the
 *   output, so a GIF bomb (tiny frames on a large logical screen, or thousands of frames) never decodes. Other
 *   multi-page formats (TIFF, HEIF) are not animations: only their first page is decoded, and only it counts.
 * - **Outputs.** When the output format is GIF or WebP, every frame is processed and the result is animated with
 *   the source's `loop` and `delay`; for JPEG, PNG, AVIF and TIFF outputs only the first frame is used, as it is
 *   by imageAve and nrop. Sizes are computed on one frame. An animated output must fit the output limits per
 *   frame, and all its frames together at most `limits.maxPixels` pixels (400 otherwise). Animated GIF output is
 *   quantised with a lower effort (image-output.ts `ANIMATED_GIF_EFFORT`), since every frame is quantised.
 * - **Per-frame operations.** libvips holds an animation as one tall image (frames stacked, `pageHeight` each);
 *   sharp's resize and extract work per frame on it, but rotate is refused and blur/composite would cross frame
 *   borders. Those run frame by frame on raw pixels (`perFrame`), which holds all frames in memory: such outputs
 *   must have fewer than OUTPUT_MAX_PIXELS pixels over all frames (400 otherwise; thumbnail first). Watermarks are
 *   composited on every frame with one frame-sized overlay tiled down the stack (`frameOverlay`).
 * - EXIF orientation is not applied to animations (browsers do not apply it either).
 */
import type { Metadata, OverlayOptions, Sharp } from 'sharp';
import { Errors } from '../errors.js';
import { checkOutputSize, OUTPUT_MAX_PIXELS, type OutFormat } from './image-output.js';
import type { FopLimits } from './types.js';
import { loadSharp } from './sharp.js';

/** Source formats whose frames are decoded and written as animations. */
const ANIMATED_FORMATS: ReadonlySet<string> = new Set(['gif', 'webp']);

/** The frames of an animated source, from its header. */
export interface Animation {
  /** Number of frames (≥ 2). */
  frames: number;
  /** Size of one frame, pixels. */
  width: number;
  height: number;
  /** Loop count (0 = forever), as in the source. */
  loop: number;
  /** Per-frame delay, ms (absent when the source gives none). */
  delay?: number[];
}

/** Frames stored in `meta` (1 for a still image or a non-animated format). */
export function frameCount(meta: Metadata): number {
  return ANIMATED_FORMATS.has(meta.format) ? Math.max(1, meta.pages ?? 1) : 1;
}

/** The animation of a source header (read without `animated`), or undefined for a single frame. */
export function animationOf(meta: Metadata): Animation | undefined {
  const frames = frameCount(meta);
  if (frames < 2 || !meta.width || !meta.height) return undefined;
  const a: Animation = { frames, width: meta.width, height: meta.pageHeight ?? meta.height, loop: meta.loop ?? 0 };
  if (meta.delay && meta.delay.length === frames) a.delay = meta.delay;
  return a;
}

/**
 * 400 (`Errors.imageTooLarge`) naming `cmd` when an animated source has too many frames or too many pixels over
 * all its frames (see the module comment). Called by `readHeader` before anything is decoded.
 */
export function checkFrames(cmd: string, meta: Metadata, limits: FopLimits): void {
  const frames = frameCount(meta);
  if (frames < 2) return;
  if (frames > limits.maxFrames) {
    throw Errors.imageTooLarge(`${cmd}: source has ${frames} frames, the limit is ${limits.maxFrames} (GRANARY_FOP_MAX_FRAMES)`);
  }
  const w = meta.width ?? 0;
  const h = meta.pageHeight ?? meta.height ?? 0;
  if (w * h * frames > limits.maxPixels) {
    throw Errors.imageTooLarge(
      `${cmd}: source has ${frames} frames of ${w}x${h}, ${w * h * frames} pixels in all; the limit is ${limits.maxPixels} pixels`,
    );
  }
}

/** The animation to keep when writing `format` (GIF, WebP), else undefined (the first frame is used). */
export function keptAnimation(meta: Metadata, format: OutFormat): Animation | undefined {
  return format === 'gif' || format === 'webp' ? animationOf(meta) : undefined;
}

/**
 * 400 naming `cmd` unless every `width`×`height` frame fits the output limits and all `frames` together have at
 * most `maxPixels` pixels (`OUTPUT_MAX_PIXELS` − 1 when the frames are held as raw pixels, `perFrame`).
 */
export function checkAnimatedOutput(cmd: string, width: number, height: number, frames: number, maxPixels: number): void {
  checkOutputSize(cmd, width, height);
  if (width * height * frames > maxPixels) {
    throw Errors.imageTooLarge(
      `${cmd}: the output would be ${frames} frames of ${width}x${height}; an animated output has at most ${maxPixels} pixels over all frames`,
    );
  }
}

/** Largest output of `perFrame` over all frames, pixels (its raw frames are held in memory). */
export const PER_FRAME_MAX_PIXELS = OUTPUT_MAX_PIXELS - 1;

/** A pipeline over every frame of a checked animated source (one tall image, `pageHeight` per frame). */
export function openAnimated(input: Buffer | string, limits: FopLimits): Sharp {
  return loadSharp()(input, { animated: true, limitInputPixels: limits.maxPixels, failOn: 'error', sequentialRead: true }).timeout({
    seconds: limits.timeoutSeconds,
  });
}

/**
 * Runs `step` on each frame of the animation `img` (decoded to raw pixels) and stacks the results again as an
 * animation of the first result's size (every frame must come out the same size). Returns a raw-input pipeline
 * whose `pageHeight` marks the frames; encode it with the animation's loop and delay (`encode` `animation`).
 * Stops with 400 `<cmd>: processing timed out` once `signal` aborts (the run's time limit).
 */
export async function perFrame(
  cmd: string,
  img: Sharp,
  frames: number,
  step: (frame: Sharp) => Sharp,
  opts: { timeoutSeconds: number; signal: AbortSignal },
): Promise<Sharp> {
  const { timeoutSeconds, signal } = opts;
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  const frameHeight = info.height / frames;
  if (!Number.isInteger(frameHeight)) throw Errors.fopFailed(`${cmd}: ${info.height} rows do not split into ${frames} frames`);
  const frameBytes = info.width * frameHeight * info.channels;
  const out: Buffer[] = [];
  let size: { width: number; height: number; channels: 1 | 2 | 3 | 4 } | undefined;
  for (let i = 0; i < frames; i++) {
    if (signal.aborted) throw Errors.fopFailed(`${cmd}: processing timed out`);
    const frame = loadSharp()(data.subarray(i * frameBytes, (i + 1) * frameBytes), {
      raw: { width: info.width, height: frameHeight, channels: info.channels },
    }).timeout({ seconds: timeoutSeconds });
    const r = await step(frame).raw().toBuffer({ resolveWithObject: true });
    size ??= { width: r.info.width, height: r.info.height, channels: r.info.channels };
    if (r.info.width !== size.width || r.info.height !== size.height || r.info.channels !== size.channels) {
      throw Errors.fopFailed(`${cmd}: frames came out in different sizes`);
    }
    out.push(r.data);
  }
  const s = size as NonNullable<typeof size>;
  return loadSharp()(Buffer.concat(out), {
    raw: { width: s.width, height: s.height * frames, channels: s.channels, pageHeight: s.height },
  }).timeout({ seconds: timeoutSeconds });
}

/**
 * One composite overlay drawing `overlays` (placed on a `width`×`height` frame) on every frame of an animation:
 * the marks are drawn on a transparent frame-sized canvas which is tiled down the stack of frames.
 */
export async function frameOverlay(overlays: OverlayOptions[], width: number, height: number, timeoutSeconds: number): Promise<OverlayOptions> {
  const canvas = await loadSharp()({ create: { width, height, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
    .timeout({ seconds: timeoutSeconds })
    .composite(overlays)
    .raw()
    .toBuffer();
  return { input: canvas, raw: { width, height, channels: 4 }, tile: true, left: 0, top: 0 };
}
