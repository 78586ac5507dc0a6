/**
 * `watermark/<1|2|3>/...` (docs/development/kodo-protocol.md §10.5): draws image and text marks onto the source. Parameters:
 * watermark-params.ts; text rendering and fonts: watermark-text.ts; placement: gravity.ts `insetBox`.
 *
 * - The base is auto-oriented (marks land where a viewer sees the corner); metadata is not kept. The output
 *   has the source's format (JPEG when that cannot be written) at quality 90, and must fit the output limits.
 * - An image mark is fetched with `ctx.fetchResource` (same-bucket URLs from storage, others through the
 *   outbound guard: 403 for private addresses unless GRANARY_OUTBOUND_ALLOW admits them), at most
 *   GRANARY_FOP_MAX_RESOURCE bytes (400 beyond), checked like a source (source pixel limits, decodable format),
 *   auto-oriented, scaled by `ws`.
 * - `dissolve` multiplies the mark's alpha by dissolve/100.
 * - A mark larger than the base (either side) is a 400; a mark partly outside (large dx/dy) is clipped. The
 *   marks of one request together have fewer than 25,000,000 pixels (400 otherwise), bounding memory.
 * - An animated GIF/WebP source gets the marks on every frame, placed on one frame's size, and stays animated
 *   with its loop and delays (animation.ts `frameOverlay`); its frames together must stay within
 *   GRANARY_FOP_MAX_PIXELS.
 */
import type { OverlayOptions } from 'sharp';
import { Errors, isKodoError } from '../errors.js';
import { checkAnimatedOutput, frameOverlay, keptAnimation, openAnimated } from './animation.js';
import { insetBox } from './gravity.js';
import { checkOutputSize, CONTENT_TYPES, encode, OUTPUT_MAX_PIXELS, outputFormatFor, uprightSize } from './image-output.js';
import { loadImage, openImage, readHeader, vips } from './image-source.js';
import type { FopCommand, FopContext } from './types.js';
import { parseWatermark, type ImageMark, type Mark, type WatermarkParams } from './watermark-params.js';
import { renderText, type RgbaImage } from './watermark-text.js';

const CMD = 'watermark';
const QUALITY = 90;

/** Size of an image mark of `w`×`h` after `ws`/`wst` on a `W`×`H` base. */
export function scaledMarkSize(m: Pick<ImageMark, 'ws' | 'wst'>, w: number, h: number, W: number, H: number): { width: number; height: number } {
  if (m.ws <= 0) return { width: w, height: h };
  const [base, own] =
    m.wst === 0 ? [Math.min(W, H), Math.min(w, h)] : m.wst === 1 ? [Math.max(W, H), Math.max(w, h)] : m.wst === 2 ? [W, w] : [H, h];
  const s = (base * m.ws) / own;
  return { width: Math.max(1, Math.round(w * s)), height: Math.max(1, Math.round(h * s)) };
}

const tooLarge = (what: string, w: number, h: number, W: number, H: number): never => {
  throw Errors.badRequest(`${CMD}: the ${what} (${w}x${h}) is larger than the ${W}x${H} image`);
};

/** The fetched, checked, scaled image mark as RGBA pixels. */
async function imageMark(m: ImageMark, W: number, H: number, budget: number, ctx: FopContext): Promise<RgbaImage> {
  let buf: Buffer;
  try {
    buf = await ctx.fetchResource(m.url, ctx.limits.maxResourceBytes);
  } catch (err) {
    if (isKodoError(err, 'originTooLarge')) {
      throw Errors.imageTooLarge(`${CMD}: the watermark image is larger than ${ctx.limits.maxResourceBytes} bytes (GRANARY_FOP_MAX_RESOURCE)`);
    }
    throw err;
  }
  const meta = await readHeader(`${CMD} image`, buf, ctx.limits);
  const own = uprightSize(meta);
  const size = scaledMarkSize(m, own.width, own.height, W, H);
  if (size.width > W || size.height > H) tooLarge('watermark image', size.width, size.height, W, H);
  if (size.width * size.height > budget) overBudget();
  const { data, info } = await vips(CMD, () =>
    openImage(`${CMD} image`, buf, meta, ctx.limits)
      .autoOrient()
      .resize(size.width, size.height, { fit: 'fill' })
      .toColourspace('srgb')
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true }),
  );
  if (info.channels !== 4) throw Errors.fopFailed(`${CMD}: the watermark image did not decode as RGBA`);
  return { data, width: info.width, height: info.height };
}

const overBudget = (): never => {
  throw Errors.badRequest(`${CMD}: the marks together exceed ${OUTPUT_MAX_PIXELS} pixels`);
};

/** The pixels of one mark; `budget` is how many mark pixels the request may still decode. */
async function markPixels(m: Mark, W: number, H: number, budget: number, ctx: FopContext): Promise<RgbaImage> {
  if (m.kind === 'image') return imageMark(m, W, H, budget, ctx);
  const img = await vips(CMD, () => renderText(m.text, m.font, m.fontSize, m.fill, W, H, ctx.limits.timeoutSeconds));
  if (img.width > W || img.height > H) tooLarge('watermark text', img.width, img.height, W, H);
  if (img.width * img.height > budget) overBudget();
  return img;
}

/** Multiplies the alpha of straight RGBA pixels by `percent`/100, in place. */
function dissolve(img: RgbaImage, percent: number): void {
  if (percent >= 100) return;
  const f = percent / 100;
  for (let i = 3; i < img.data.length; i += 4) img.data[i] = Math.round((img.data[i] as number) * f);
}

export const watermark: FopCommand<WatermarkParams> = {
  name: CMD,
  parse: parseWatermark,
  async run(source, p, ctx) {
    const { input, meta, original } = await loadImage(CMD, source, ctx);
    const format = outputFormatFor(original, undefined);
    const anim = keptAnimation(meta, format);
    const { width: W, height: H } = anim ?? uprightSize(meta);
    if (anim) checkAnimatedOutput(CMD, W, H, anim.frames, ctx.limits.maxPixels);
    else checkOutputSize(CMD, W, H);
    const overlays: OverlayOptions[] = [];
    let budget = OUTPUT_MAX_PIXELS;
    for (const m of p.marks) {
      const img = await markPixels(m, W, H, budget, ctx);
      budget -= img.width * img.height;
      dissolve(img, m.dissolve);
      const { left, top } = insetBox(m.gravity, W, H, img.width, img.height, m.dx, m.dy);
      overlays.push({ input: img.data, raw: { width: img.width, height: img.height, channels: 4 }, left, top });
    }
    const body = await vips(CMD, async () => {
      if (!anim) {
        const img = openImage(CMD, input, meta, ctx.limits).autoOrient().composite(overlays);
        return encode(img, format, { quality: QUALITY, interlace: false }).toBuffer();
      }
      const img = openAnimated(input, ctx.limits).composite([await frameOverlay(overlays, W, H, ctx.limits.timeoutSeconds)]);
      return encode(img, format, { quality: QUALITY, interlace: false, animation: anim }).toBuffer();
    });
    return { body, contentType: CONTENT_TYPES[format] };
  },
};
