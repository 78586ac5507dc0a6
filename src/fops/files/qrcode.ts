/**
 * `qrcode[/<mode>][/level/<L|M|Q|H>]` (docs/development/kodo-protocol.md §10.9): a PNG QR code (`image/png`) —
 * on download URLs and as a persistent command.
 *
 * - mode 0 (Kodo's default): the QR code holds the resource's download URL — here its unsigned URL as
 *   `BucketUrls.urlOf` builds it (the bucket's first bound domain, else GRANARY_PUBLIC_URL path style).
 * - mode 1: the QR code holds the resource's content, byte for byte (at most `QR_MAX_BYTES[level]` bytes).
 * - level: the error correction, L (7 %, the default), M (15 %), Q (25 %), H (30 %); a higher level gives a
 *   larger image for the same content. `mode/<n>` is accepted as a spelling of the positional mode.
 * The image: 4 pixels per module, a 4-module quiet zone, black on white (the `qrcode` package's defaults).
 * Errors: 400 for bad parameters and for content too long for a QR code at that level.
 */
import { Errors } from '../../errors.js';
import type { FopCommand } from '../types.js';

export type QrLevel = 'L' | 'M' | 'Q' | 'H';

export interface QrcodeParams {
  /** 0 = the resource's URL, 1 = the resource's content. */
  mode: 0 | 1;
  level: QrLevel;
}

/** Most bytes a QR code (version 40, byte mode) holds at each level. */
export const QR_MAX_BYTES: Record<QrLevel, number> = { L: 2953, M: 2331, Q: 1663, H: 1273 };

const bad = (what: string): never => {
  throw Errors.badRequest(`qrcode: ${what}`);
};

/** Parses `[<mode>][/level/<L|M|Q|H>]`. */
export function parseQrcode(args: string[]): QrcodeParams {
  const rest = [...args];
  let mode: 0 | 1 = 0;
  let level: QrLevel = 'L';
  const modeOf = (v: string | undefined): 0 | 1 => (v === '0' || v === '1' ? (Number(v) as 0 | 1) : bad(`mode must be 0 or 1, got ${JSON.stringify(v ?? '')}`));
  if (rest[0] !== undefined && rest[0] !== 'level' && rest[0] !== 'mode') mode = modeOf(rest.shift());
  const seen = new Set<string>();
  while (rest.length > 0) {
    const k = rest.shift()!;
    const v = rest.shift();
    if (seen.has(k)) bad(`${k} given twice`);
    seen.add(k);
    if (k === 'mode') mode = modeOf(v);
    else if (k === 'level') {
      if (v !== 'L' && v !== 'M' && v !== 'Q' && v !== 'H') bad(`level must be L, M, Q or H, got ${JSON.stringify(v ?? '')}`);
      level = v as QrLevel;
    } else bad(`unknown parameter ${JSON.stringify(k)}`);
  }
  return { mode, level };
}

export const qrcode: FopCommand<QrcodeParams> = {
  name: 'qrcode',
  parse: parseQrcode,
  async run(source, { mode, level }, ctx) {
    let data: Buffer;
    if (mode === 0) {
      if (!ctx.urls) throw Errors.badRequest('qrcode: mode 0 needs the server (the resource URL is unknown here)');
      data = Buffer.from(await ctx.urls.urlOf(ctx.bucket.name, ctx.key), 'utf8');
    } else {
      if (source.size > QR_MAX_BYTES[level]) {
        throw Errors.badRequest(`qrcode: the content (${source.size} bytes) does not fit a QR code at level ${level} (at most ${QR_MAX_BYTES[level]} bytes)`);
      }
      data = await source.bytes();
    }
    if (data.length > QR_MAX_BYTES[level]) bad(`the URL (${data.length} bytes) does not fit a QR code at level ${level}`);
    if (data.length === 0) bad('the content is empty');
    // Loaded at the first use, not at every start of the server and the CLI.
    const { default: QRCode } = await import('qrcode');
    const png = await QRCode.toBuffer([{ data, mode: 'byte' }], { type: 'png', errorCorrectionLevel: level, margin: 4, scale: 4 });
    return { body: png, contentType: 'image/png' };
  },
};
