/**
 * `imageMogr2/...` (docs/development/kodo-protocol.md §10.3): advanced image processing. Parameters: mogr2-params.ts; geometries:
 * mogr2-geometry.ts.
 *
 * Operations always apply in this order, whatever the order of the parameters in the URL (qiniu-js emits them
 * in this order too):
 *
 * 1. `auto-orient`: apply the EXIF orientation (sizes below are then computed on the upright image; without it
 *    the stored pixel grid is used and the orientation tag is kept unless `strip`);
 * 2. `thumbnail`;
 * 3. `gravity` + `crop` (on the thumbnail);
 * 4. `rotate` (clockwise; uncovered corners are white for JPEG output, transparent otherwise);
 * 5. `blur` (Gaussian; libvips sizes the kernel from sigma, the radius is validated but not used);
 * 6. `strip` (drop EXIF, XMP and ICC; without it the source's metadata is kept), then encoding with `format`,
 *    `quality` (without `!`, at most the source JPEG's own estimated quality: jpeg-quality.ts), `interlace`;
 * 7. `size-limit/<n>[k|m][!]`: when the result is larger than n bytes and the format is lossy (JPEG, WebP,
 *    AVIF), it is re-encoded at the highest quality below `quality` that fits (a binary search, at most 7
 *    encodes; when even quality 1 does not fit, the quality-1 result is answered). Re-encoded results carry no
 *    metadata. PNG, GIF and TIFF are never re-encoded. With `!`, a result larger than the source is replaced by
 *    the source itself (its bytes and content type).
 *
 * The thumbnail and the final image must each fit the output limits (image-output.ts): 400 otherwise, checked
 * before any pixel is decoded.
 *
 * An animated GIF/WebP stays animated when the output is GIF or WebP (animation.ts): sizes are computed on one
 * frame, every frame is thumbnailed, cropped, rotated and blurred alike (rotate and blur run frame by frame on raw
 * pixels, so their output must have fewer than 25,000,000 pixels over all frames), loop and delays are kept, and
 * `auto-orient` does nothing. Other outputs take the first frame.
 */
import type { Metadata, Sharp } from 'sharp';
import { checkAnimatedOutput, keptAnimation, openAnimated, perFrame, PER_FRAME_MAX_PIXELS, type Animation } from './animation.js';
import { checkOutputSize, CONTENT_TYPES, encode, LOSSY, outputFormatFor, uprightSize, type OutFormat } from './image-output.js';
import { loadImage, openImage, vips } from './image-source.js';
import { effectiveQuality } from './jpeg-quality.js';
import { cropRect, rotatedSize, thumbnailSize, type Rect } from './mogr2-geometry.js';
import { parseImageMogr2, type Mogr2Params } from './mogr2-params.js';
import type { FopCommand, FopLimits } from './types.js';
import { loadSharp } from './sharp.js';

const CMD = 'imageMogr2';

/** The sizes of each step for a source, computed before decoding. */
export interface Mogr2Plan {
  resize?: { width: number; height: number };
  crop?: Rect;
  out: { width: number; height: number };
}

/**
 * Sizes of each step of `p` on a source with header `meta`, or on each frame of `anim` when the output keeps the
 * animation; 400 when the thumbnail or the output is too large (`maxPixels`, GRANARY_FOP_MAX_PIXELS, bounds all
 * frames together; fewer than 25,000,000 when they are rotated or blurred frame by frame).
 */
export function planMogr2(p: Mogr2Params, meta: Metadata, anim?: Animation, maxPixels = PER_FRAME_MAX_PIXELS): Mogr2Plan {
  let cur = anim ? { width: anim.width, height: anim.height } : uprightSize(meta, p.autoOrient);
  const plan: Mogr2Plan = { out: cur };
  if (p.thumbnail) {
    cur = thumbnailSize(p.thumbnail, cur.width, cur.height);
    if (anim) checkAnimatedOutput(CMD, cur.width, cur.height, anim.frames, maxPixels);
    else checkOutputSize(CMD, cur.width, cur.height);
    plan.resize = cur;
  }
  if (p.crop) {
    plan.crop = cropRect(p.crop, p.gravity, cur.width, cur.height);
    cur = { width: plan.crop.width, height: plan.crop.height };
  }
  if (p.rotate !== undefined) cur = rotatedSize(cur.width, cur.height, p.rotate);
  if (anim) {
    const rawFrames = p.rotate !== undefined || (p.blur !== undefined && p.blur.sigma > 0);
    checkAnimatedOutput(CMD, cur.width, cur.height, anim.frames, rawFrames ? Math.min(PER_FRAME_MAX_PIXELS, maxPixels) : maxPixels);
  } else checkOutputSize(CMD, cur.width, cur.height);
  plan.out = cur;
  return plan;
}

/** Steps 1–3: orientation, thumbnail, crop (on every frame of `anim`). */
function geometry(input: Buffer | string, meta: Metadata, p: Mogr2Params, plan: Mogr2Plan, limits: FopLimits, anim?: Animation): Sharp {
  let img = anim ? openAnimated(input, limits) : openImage(CMD, input, meta, limits);
  if (p.autoOrient && !anim) img = img.autoOrient();
  if (plan.resize) img = img.resize(plan.resize.width, plan.resize.height, { fit: 'fill' });
  if (plan.crop) img = img.extract(plan.crop);
  return img;
}

/**
 * The whole pipeline up to encoding. sharp rotates before a post-resize extract, so a crop followed by a
 * rotation runs as two pipelines joined by the (cropped, hence bounded) raw pixels.
 */
async function pixels(
  input: Buffer | string,
  meta: Metadata,
  p: Mogr2Params,
  plan: Mogr2Plan,
  format: OutFormat,
  limits: FopLimits,
  signal: AbortSignal,
  anim?: Animation,
): Promise<Sharp> {
  let img = geometry(input, meta, p, plan, limits, anim);
  const background = format === 'jpeg' ? { r: 255, g: 255, b: 255, alpha: 1 } : { r: 255, g: 255, b: 255, alpha: 0 };
  const blur = p.blur && p.blur.sigma > 0 ? Math.max(0.3, p.blur.sigma) : undefined;
  if (anim) {
    if (p.rotate === undefined && blur === undefined) return p.strip ? img : img.keepMetadata();
    return perFrame(
      CMD,
      img,
      anim.frames,
      (frame) => {
        let f = p.rotate === undefined ? frame : frame.rotate(p.rotate, { background });
        if (blur !== undefined) f = f.blur(blur);
        return f;
      },
      { timeoutSeconds: limits.timeoutSeconds, signal },
    );
  }
  if (plan.crop && p.rotate !== undefined) {
    const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
    img = loadSharp()(data, { raw: { width: info.width, height: info.height, channels: info.channels } }).timeout({ seconds: limits.timeoutSeconds });
  }
  if (p.rotate !== undefined) img = img.rotate(p.rotate, { background });
  if (blur !== undefined) img = img.blur(blur);
  if (!p.strip) img = img.keepMetadata();
  return img;
}

/** Step 7: re-encodes `body` smaller when it exceeds the size limit (see the module comment). */
async function limitSize(
  body: Buffer,
  p: Mogr2Params,
  quality: number,
  format: OutFormat,
  build: () => Promise<Sharp>,
  timeoutSeconds: number,
  anim?: Animation,
): Promise<Buffer> {
  const limit = p.sizeLimit?.bytes;
  if (limit === undefined || body.length <= limit || !LOSSY.has(format) || quality <= 1) return body;
  const { data, info } = await (await build()).raw().toBuffer({ resolveWithObject: true });
  const raw = { width: info.width, height: info.height, channels: info.channels, ...(anim ? { pageHeight: info.height / anim.frames } : {}) };
  const at = (quality: number): Promise<Buffer> =>
    encode(loadSharp()(data, { raw }).timeout({ seconds: timeoutSeconds }), format, {
      quality,
      interlace: p.interlace,
      ...(anim ? { animation: anim } : {}),
    }).toBuffer();
  let lo = 1;
  let hi = quality - 1;
  let best: Buffer | undefined;
  let smallest: Buffer | undefined;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    const out = await at(mid);
    if (mid === 1) smallest = out;
    if (out.length <= limit) {
      best = out;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best ?? smallest ?? (await at(1));
}

export const imageMogr2: FopCommand<Mogr2Params> = {
  name: CMD,
  parse: parseImageMogr2,
  async run(source, p, ctx) {
    const { limits, signal } = ctx;
    const { input, meta, original } = await loadImage(CMD, source, ctx);
    const format = outputFormatFor(original, p.format);
    const anim = keptAnimation(meta, format);
    const plan = planMogr2(p, meta, anim, limits.maxPixels);
    const quality = typeof input === 'string' ? p.quality : effectiveQuality(input, p.quality, p.forceQuality);
    const build = (): Promise<Sharp> => pixels(input, meta, p, plan, format, limits, signal, anim);
    const body = await vips(CMD, async () => {
      const first = await encode(await build(), format, { quality, interlace: p.interlace, ...(anim ? { animation: anim } : {}) }).toBuffer();
      return limitSize(first, p, quality, format, build, limits.timeoutSeconds, anim);
    });
    if (p.sizeLimit?.orSource && body.length > source.size) return { body: await source.bytes(), contentType: source.contentType };
    return { body, contentType: CONTENT_TYPES[format] };
  },
};
