/**
 * `imageslim` (docs/development/kodo-protocol.md §10.9): a smaller JPEG or PNG with no visible change — on
 * download URLs and as a persistent command; takes no parameters.
 *
 * - JPEG: re-encoded with mozjpeg (trellis quantisation, optimised Huffman tables and scans, progressive) with
 *   the standard (Annex K) quantisation tables — mozjpeg's own tables lose more luma detail — at the smaller
 *   of the source's own quality and `JPEG_QUALITY`, the source's chroma subsampling kept (4:4:4, else 4:2:0).
 * - PNG: an 8-bit palette (libimagequant, dithered) and a lossless re-compression; the smaller one wins.
 * - Metadata (EXIF, XMP, comments) is dropped; the ICC profile is kept; an EXIF orientation is applied to the
 *   pixels so the picture looks the same.
 * - The format never changes, and the answer is never larger than the source: when slimming does not make it
 *   smaller, the source's own bytes are answered.
 * Errors: 415 for other formats (and undecodable images), 400 for images beyond the fop limits.
 */
import { Errors } from '../../errors.js';
import { loadImage, openImage, vips } from '../image-source.js';
import { estimateJpegQuality } from '../jpeg-quality.js';
import type { FopCommand } from '../types.js';

/** The highest quality a slimmed JPEG is written at (a source saved lower keeps its own). */
export const JPEG_QUALITY = 85;

export const imageslim: FopCommand<Record<string, never>> = {
  name: 'imageslim',
  parse(args) {
    if (args.length > 0) throw Errors.badRequest('imageslim: takes no parameters');
    return {};
  },
  async run(source, _params, ctx) {
    const original = await source.bytes();
    const { input, meta } = await loadImage('imageslim', source, ctx);
    if (meta.format !== 'jpeg' && meta.format !== 'png') {
      throw Errors.unsupportedImage(`imageslim: only JPEG and PNG images can be slimmed, not ${meta.format}`);
    }
    if ((meta.pages ?? 1) > 1) throw Errors.unsupportedImage('imageslim: animated images cannot be slimmed');
    const open = () => openImage('imageslim', input, meta, ctx.limits).rotate().keepIccProfile();
    const candidates: Buffer[] = [];
    if (meta.format === 'jpeg') {
      const quality = Math.min(estimateJpegQuality(original) ?? JPEG_QUALITY, JPEG_QUALITY);
      candidates.push(
        await vips('imageslim', () => open().jpeg({ quality, mozjpeg: true, quantisationTable: 0, chromaSubsampling: meta.chromaSubsampling === '4:4:4' ? '4:4:4' : '4:2:0' }).toBuffer()),
      );
    } else {
      candidates.push(
        await vips('imageslim', () => open().png({ palette: true, quality: 95, dither: 1, effort: 10, compressionLevel: 9 }).toBuffer()),
        await vips('imageslim', () => open().png({ compressionLevel: 9, adaptiveFiltering: true, effort: 10 }).toBuffer()),
      );
    }
    const best = candidates.reduce((a, b) => (b.length < a.length ? b : a));
    const contentType = meta.format === 'jpeg' ? 'image/jpeg' : 'image/png';
    return { body: best.length < original.length ? best : original, contentType };
  },
};
