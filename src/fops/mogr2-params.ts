/**
 * Parameters of `imageMogr2` (docs/development/kodo-protocol.md §10.3): `/`-separated flags (`auto-orient`, `strip`) and `name/value`
 * pairs in any order, each at most once. Pure: no I/O. Unknown parameters and bad values are 400
 * `imageMogr2: …` naming them.
 *
 * - `thumbnail/<geom>`, `crop/<geom>`: see mogr2-geometry.ts; `gravity/<G>` (for crop, default NorthWest).
 * - `rotate/<1..360>` degrees clockwise.
 * - `format/<jpg|png|webp|gif|avif|tiff>` (default: the source format, JPEG when it cannot be written).
 * - `quality/<1..100>[!]` (default 75); without `!` the output quality is at most the source JPEG's own
 *   (estimated from its quantization table, jpeg-quality.ts); with `!` it is used as given.
 * - `blur/<radius>x<sigma>`: radius 1..50, sigma 0..50 (decimals allowed); sigma 0 is no blur.
 * - `interlace/<0|1>` progressive JPEG / interlaced PNG and GIF.
 * - `size-limit/<n>[k|m][!]` bytes (k = 1024, m = 1024²), see image-mogr2.ts.
 */
import { Errors } from '../errors.js';
import { parseGravity, type Gravity } from './gravity.js';
import { parseFormat, type OutFormat } from './image-output.js';
import { parseCrop, parseThumbnail, type Crop, type Thumbnail } from './mogr2-geometry.js';

export interface Mogr2Params {
  autoOrient: boolean;
  strip: boolean;
  thumbnail?: Thumbnail;
  gravity: Gravity;
  crop?: Crop;
  /** Degrees clockwise, 1..359 (360 is dropped: no rotation). */
  rotate?: number;
  format?: OutFormat;
  quality: number;
  forceQuality: boolean;
  blur?: { radius: number; sigma: number };
  interlace: boolean;
  /** Largest output, bytes; `orSource`: when the result is larger than the source, answer the source. */
  sizeLimit?: { bytes: number; orSource: boolean };
}

const bad = (what: string): never => {
  throw Errors.badRequest(`imageMogr2: ${what}`);
};

const FLAGS = new Set(['auto-orient', 'strip']);
const VALUED = new Set(['thumbnail', 'gravity', 'crop', 'rotate', 'format', 'quality', 'blur', 'interlace', 'size-limit']);

function parseQuality(v: string): { quality: number; force: boolean } {
  const m = /^(\d{1,3})(!?)$/.exec(v);
  const q = m ? Number(m[1]) : NaN;
  if (!m || q < 1 || q > 100) bad(`quality must be 1..100 (optionally followed by !), got ${JSON.stringify(v)}`);
  return { quality: q, force: m?.[2] === '!' };
}

function parseBlur(v: string): { radius: number; sigma: number } {
  const m = /^(\d+)x(\d+(?:\.\d+)?)$/.exec(v);
  const radius = m ? Number(m[1]) : NaN;
  const sigma = m ? Number(m[2]) : NaN;
  if (!m || radius < 1 || radius > 50 || sigma > 50) bad(`blur must be <radius 1..50>x<sigma 0..50>, got ${JSON.stringify(v)}`);
  return { radius, sigma };
}

function parseSizeLimit(v: string): { bytes: number; orSource: boolean } {
  const m = /^(\d{1,10})([km]?)(!?)$/i.exec(v);
  const unit = m?.[2]?.toLowerCase() === 'm' ? 1024 * 1024 : m?.[2]?.toLowerCase() === 'k' ? 1024 : 1;
  const bytes = m ? Number(m[1]) * unit : NaN;
  if (!m || !(bytes >= 1) || bytes > 1024 ** 3) bad(`size-limit must be <n>[k|m][!] between 1 byte and 1 GiB, got ${JSON.stringify(v)}`);
  return { bytes, orSource: m?.[3] === '!' };
}

function parseRotate(v: string): number {
  const n = Number(v);
  if (!/^\d{1,3}$/.test(v) || n < 1 || n > 360) bad(`rotate must be an integer 1..360, got ${JSON.stringify(v)}`);
  return n;
}

/** Parses the arguments after `imageMogr2`. */
export function parseImageMogr2(args: string[]): Mogr2Params {
  const p: Mogr2Params = { autoOrient: false, strip: false, gravity: 'NorthWest', quality: 75, forceQuality: false, interlace: false };
  const seen = new Set<string>();
  let i = 0;
  while (i < args.length) {
    const k = args[i] as string;
    if (seen.has(k)) bad(`parameter ${k} given twice`);
    seen.add(k);
    if (FLAGS.has(k)) {
      if (k === 'auto-orient') p.autoOrient = true;
      else p.strip = true;
      i += 1;
      continue;
    }
    if (!VALUED.has(k)) bad(`unknown parameter ${JSON.stringify(k)}`);
    const v = args[i + 1];
    if (v === undefined || v === '') bad(`parameter ${k} has no value`);
    const val = v as string;
    i += 2;
    switch (k) {
      case 'thumbnail':
        p.thumbnail = parseThumbnail(val);
        break;
      case 'gravity':
        p.gravity = parseGravity('imageMogr2', val);
        break;
      case 'crop':
        p.crop = parseCrop(val);
        break;
      case 'rotate': {
        const r = parseRotate(val);
        if (r !== 360) p.rotate = r;
        break;
      }
      case 'format':
        p.format = parseFormat('imageMogr2', val);
        break;
      case 'quality': {
        const q = parseQuality(val);
        p.quality = q.quality;
        p.forceQuality = q.force;
        break;
      }
      case 'blur':
        p.blur = parseBlur(val);
        break;
      case 'interlace':
        if (val !== '0' && val !== '1') bad(`interlace must be 0 or 1, got ${JSON.stringify(val)}`);
        p.interlace = val === '1';
        break;
      case 'size-limit':
        p.sizeLimit = parseSizeLimit(val);
        break;
    }
  }
  if (seen.size === 0) bad('no operation given');
  return p;
}
