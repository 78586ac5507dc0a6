/**
 * `imageInfo` (docs/development/kodo-protocol.md §10.4): `{format, width, height, colorModel, size, orientation?, frameNumber?}`, from
 * the header only (no decoding, so HEIC needs no heif-convert here; it reports `heic`, AVIF `avif`).
 */
import type { Metadata } from 'sharp';
import { Errors } from '../errors.js';
import { formatName, readHeader } from './image-source.js';
import type { FopCommand } from './types.js';

/** EXIF orientation values as Kodo names them. */
const ORIENTATIONS = ['', 'Top-left', 'Top-right', 'Bottom-right', 'Bottom-left', 'Left-top', 'Right-top', 'Right-bottom', 'Left-bottom'];

/** Go `image/color` model names, as Kodo reports them. */
function colorModel(m: Metadata): string {
  const deep = m.depth === 'ushort';
  if (m.space === 'cmyk') return 'cmyk';
  if (m.format === 'gif' || m.isPalette === true) return 'paletted';
  const gray = m.space === 'b-w' || m.space === 'grey16' || m.channels === 1 || (m.channels === 2 && m.hasAlpha);
  if (m.format === 'jpeg' || (m.format === 'heif' && !m.hasAlpha)) return gray ? 'gray' : 'ycbcr';
  if (gray && !m.hasAlpha) return deep ? 'gray16' : 'gray';
  if (m.hasAlpha) return deep ? 'nrgba64' : 'nrgba';
  return deep ? 'rgba64' : 'rgba';
}

export const imageInfo: FopCommand<Record<string, never>> = {
  name: 'imageInfo',
  parse(args) {
    if (args.length > 0) throw Errors.badRequest('imageInfo: takes no parameters');
    return {};
  },
  async run(source, _params, { limits }) {
    const input = await source.bytes();
    const m = await readHeader('imageInfo', input, limits);
    const info: Record<string, string | number> = {
      format: formatName(m),
      width: m.width,
      height: m.height,
      colorModel: colorModel(m),
      size: input.length,
    };
    if (m.orientation !== undefined && m.orientation >= 1 && m.orientation <= 8) {
      info.orientation = ORIENTATIONS[m.orientation] as string;
    }
    if (m.format === 'gif' || (m.pages !== undefined && m.pages > 1)) info.frameNumber = m.pages ?? 1;
    return { json: info };
  },
};
