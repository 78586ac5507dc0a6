/**
 * The quality a JPEG was saved with, estimated from its luminance quantization table (the IJG scaling of the
 * standard table, as libjpeg's `quality` setting produces it), and the quality rule of imageView2 `q/<n>` and
 * imageMogr2 `quality/<n>` (docs/development/kodo-protocol.md §10.2, §10.3): without `!` the output quality is the smaller of the
 * requested (or default) quality and the source's own; with `!` it is the requested one.
 */

/** The IJG standard luminance table (JPEG Annex K), in natural (row-major) order. */
const STD_LUMA = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22,
  37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/** Natural-order index of the k-th coefficient in zigzag (file) order. */
const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50,
  43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

/** The zigzag-ordered table 0 of the first DQT segment that defines it, read before the first scan. */
function lumaTable(jpeg: Buffer): number[] | undefined {
  if (jpeg.length < 4 || jpeg[0] !== 0xff || jpeg[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 4 <= jpeg.length) {
    if (jpeg[i] !== 0xff) return undefined;
    const marker = jpeg[i + 1] as number;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return undefined; // start of scan / end of image
    const len = jpeg.readUInt16BE(i + 2);
    const end = i + 2 + len;
    if (len < 2 || end > jpeg.length) return undefined;
    if (marker === 0xdb) {
      let j = i + 4;
      while (j < end) {
        const pq = (jpeg[j] as number) >> 4;
        const id = (jpeg[j] as number) & 15;
        const size = pq === 0 ? 64 : 128;
        if (j + 1 + size > end) return undefined;
        if (id === 0) {
          return Array.from({ length: 64 }, (_, k) => (pq === 0 ? (jpeg[j + 1 + k] as number) : jpeg.readUInt16BE(j + 1 + 2 * k)));
        }
        j += 1 + size;
      }
    }
    i = end;
  }
  return undefined;
}

/** The estimated quality (1..100) of a JPEG, or undefined when it is not a JPEG or has no luminance table. */
export function estimateJpegQuality(jpeg: Buffer): number | undefined {
  const table = lumaTable(jpeg);
  if (!table) return undefined;
  let sum = 0;
  table.forEach((q, k) => {
    sum += (q * 100) / (STD_LUMA[ZIGZAG[k] as number] as number);
  });
  const scale = sum / 64;
  if (!(scale > 0)) return undefined;
  const quality = scale <= 100 ? (200 - scale) / 2 : 5000 / scale;
  return Math.min(100, Math.max(1, Math.round(quality)));
}

/** The output quality: `requested` with `force`, else the smaller of `requested` and the source JPEG's own. */
export function effectiveQuality(source: Buffer, requested: number, force: boolean): number {
  if (force) return requested;
  const own = estimateJpegQuality(source);
  return own === undefined ? requested : Math.min(requested, own);
}
