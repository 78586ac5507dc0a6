/**
 * `?exif` (docs/development/kodo-protocol.md §10.4): a small, bounds-checked EXIF reader for JPEG. Finds the first APP1 `Exif\0\0`
 * segment, walks IFD0, the Exif IFD, the GPS IFD and the Interoperability IFD (IFD1, the thumbnail, is skipped),
 * in either byte order, and formats every known tag the way libexif's `exif_entry_get_value` does (what
 * `exif -m` prints), with the TIFF type number of the entry as `type`.
 *
 * Broken data policy: the reader never throws anything but `Errors.noExif()`. No Exif segment, a bad TIFF header,
 * or nothing readable → `Errors.noExif()`. Damage after a readable start (an IFD pointing outside the segment, an
 * entry whose data runs past the end, an IFD loop) drops only the damaged part and returns what was read.
 * Work is bounded: at most MAX_IFDS directories, MAX_ENTRIES entries each, each visited once.
 */
import { Errors } from '../errors.js';
import {
  ENUM_VALUES, EXIF_IFD_POINTER, EXIF_TAGS, GPS_IFD_POINTER, GPS_TAGS, IFD0_TAGS, INTEROP_IFD_POINTER,
  INTEROP_TAGS,
} from './exif-tags.js';

/** One tag of the `?exif` answer. */
export interface ExifValue {
  /** The value as libexif prints it. */
  val: string;
  /** TIFF field type number (1 BYTE, 2 ASCII, 3 SHORT, 4 LONG, 5 RATIONAL, 7 UNDEFINED, 10 SRATIONAL, ...). */
  type: number;
}

const MAX_IFDS = 8;
const MAX_ENTRIES = 1000;
/** Cap on one formatted value, like libexif's fixed-size value buffer (exif(1) uses 1024). */
const MAX_VAL = 1023;

/** Byte size of one component of each TIFF type (index = type number). */
const TYPE_SIZE = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8];

type IfdKind = 'ifd0' | 'exif' | 'gps' | 'interop';

const TABLES: Record<IfdKind, ReadonlyMap<number, string>> = {
  ifd0: IFD0_TAGS, exif: EXIF_TAGS, gps: GPS_TAGS, interop: INTEROP_TAGS,
};

/** The TIFF block inside the APP1 segment and its byte order. */
class Tiff {
  constructor(readonly buf: Buffer, readonly le: boolean) {}

  has(off: number, len: number): boolean {
    return Number.isInteger(off) && off >= 0 && len >= 0 && off + len <= this.buf.length;
  }
  u16(off: number): number {
    return this.le ? this.buf.readUInt16LE(off) : this.buf.readUInt16BE(off);
  }
  u32(off: number): number {
    return this.le ? this.buf.readUInt32LE(off) : this.buf.readUInt32BE(off);
  }
  i16(off: number): number {
    return this.le ? this.buf.readInt16LE(off) : this.buf.readInt16BE(off);
  }
  i32(off: number): number {
    return this.le ? this.buf.readInt32LE(off) : this.buf.readInt32BE(off);
  }
}

/** A raw IFD entry with its data bytes already bounds-checked. */
interface Entry {
  tag: number;
  type: number;
  count: number;
  data: Buffer;
  tiff: Tiff;
}

/** Reads the EXIF tags of a JPEG. Throws `Errors.noExif()` when there is no readable EXIF. */
export function readExif(jpeg: Buffer): Record<string, ExifValue> {
  const segment = findExifSegment(jpeg);
  if (!segment) throw Errors.noExif();
  const tiff = parseTiffHeader(segment);
  if (!tiff) throw Errors.noExif();

  const out: Record<string, ExifValue> = {};
  const visited = new Set<number>();
  const queue: Array<{ off: number; kind: IfdKind }> = [{ off: tiff.u32(4), kind: 'ifd0' }];
  while (queue.length > 0 && visited.size < MAX_IFDS) {
    const { off, kind } = queue.shift() as { off: number; kind: IfdKind };
    if (visited.has(off) || !tiff.has(off, 2)) continue;
    visited.add(off);
    for (const e of readIfd(tiff, off)) {
      if (kind === 'ifd0' && e.tag === EXIF_IFD_POINTER) queue.push({ off: pointer(e), kind: 'exif' });
      else if (kind === 'ifd0' && e.tag === GPS_IFD_POINTER) queue.push({ off: pointer(e), kind: 'gps' });
      else if (kind === 'exif' && e.tag === INTEROP_IFD_POINTER) queue.push({ off: pointer(e), kind: 'interop' });
      else {
        const name = TABLES[kind].get(e.tag);
        if (name === undefined || name in out) continue;
        out[name] = { val: formatValue(e, kind).slice(0, MAX_VAL), type: e.type };
      }
    }
  }
  if (Object.keys(out).length === 0) throw Errors.noExif();
  return out;
}

/** The payload (TIFF block) of the first APP1 segment that starts with `Exif\0\0`, or undefined. */
function findExifSegment(jpeg: Buffer): Buffer | undefined {
  if (jpeg.length < 4 || jpeg[0] !== 0xff || jpeg[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 4 <= jpeg.length) {
    if (jpeg[i] !== 0xff) return undefined;
    const marker = jpeg[i + 1] ?? 0;
    if (marker === 0xff) { i += 1; continue; } // fill byte
    if (marker === 0xd9 || marker === 0xda) return undefined; // EOI / start of scan: no more metadata
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { i += 2; continue; } // no length
    const len = jpeg.readUInt16BE(i + 2);
    if (len < 2) return undefined;
    const start = i + 4;
    const end = Math.min(i + 2 + len, jpeg.length);
    if (marker === 0xe1 && end - start >= 6 && jpeg.toString('latin1', start, start + 6) === 'Exif\0\0') {
      return jpeg.subarray(start + 6, end);
    }
    i += 2 + len;
  }
  return undefined;
}

function parseTiffHeader(buf: Buffer): Tiff | undefined {
  if (buf.length < 8) return undefined;
  const order = buf.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return undefined;
  const tiff = new Tiff(buf, order === 'II');
  return tiff.u16(2) === 42 ? tiff : undefined;
}

/** The entries of one IFD whose type is known and whose data lies inside the block. */
function readIfd(tiff: Tiff, off: number): Entry[] {
  const n = Math.min(tiff.u16(off), MAX_ENTRIES);
  const entries: Entry[] = [];
  for (let k = 0; k < n; k++) {
    const p = off + 2 + 12 * k;
    if (!tiff.has(p, 12)) break;
    const type = tiff.u16(p + 2);
    const count = tiff.u32(p + 4);
    const unit = TYPE_SIZE[type];
    if (unit === undefined || unit === 0 || count === 0) continue;
    const size = unit * count;
    if (size > tiff.buf.length) continue;
    const dataOff = size <= 4 ? p + 8 : tiff.u32(p + 8);
    if (!tiff.has(dataOff, size)) continue;
    entries.push({ tag: tiff.u16(p), type, count, data: tiff.buf.subarray(dataOff, dataOff + size), tiff });
  }
  return entries;
}

function pointer(e: Entry): number {
  return (e.type === 4 || e.type === 13) && e.count >= 1 ? num(e, 0) : -1;
}

/** Component i of a numeric entry as a JS number (rationals as the quotient, NaN for x/0). */
function num(e: Entry, i: number): number {
  const t = new Tiff(e.data, e.tiff.le);
  switch (e.type) {
    case 1: case 7: return e.data[i] ?? 0;
    case 6: return e.data.readInt8(i);
    case 3: return t.u16(i * 2);
    case 8: return t.i16(i * 2);
    case 4: case 13: return t.u32(i * 4);
    case 9: return t.i32(i * 4);
    case 5: return t.u32(i * 8) / t.u32(i * 8 + 4);
    case 10: return t.i32(i * 8) / t.i32(i * 8 + 4);
    case 11: return e.tiff.le ? e.data.readFloatLE(i * 4) : e.data.readFloatBE(i * 4);
    case 12: return e.tiff.le ? e.data.readDoubleLE(i * 8) : e.data.readDoubleBE(i * 8);
    default: return 0;
  }
}

/** Numerator/denominator of rational component i. */
function ratio(e: Entry, i: number): [number, number] {
  const t = new Tiff(e.data, e.tiff.le);
  return e.type === 10 ? [t.i32(i * 8), t.i32(i * 8 + 4)] : [t.u32(i * 8), t.u32(i * 8 + 4)];
}

const isRational = (e: Entry): boolean => e.type === 5 || e.type === 10;

/** The ASCII content up to the first NUL (like strncpy); bytes decoded as UTF-8, as exif(1) prints them raw. */
function cString(data: Buffer): string {
  const nul = data.indexOf(0);
  return data.toString('utf8', 0, nul < 0 ? data.length : nul);
}

/** Formats an entry as libexif's `exif_entry_get_value` does. */
function formatValue(e: Entry, kind: IfdKind): string {
  if (kind === 'gps') return formatGps(e);
  if (kind === 'interop') {
    if (e.tag === 0x0002 && e.type === 7) return cString(e.data);
    return formatGeneric(e);
  }
  const enumTable = ENUM_VALUES.get(e.tag);
  if (enumTable && (e.type === 3 || e.type === 4)) {
    const v = num(e, 0);
    return enumTable[v] ?? `Unknown value ${v}`;
  }
  switch (e.tag) {
    case 0x9000: return exifVersion(e.data);
    case 0xa000: return flashPixVersion(e.data);
    case 0x8298: return copyright(e.data);
    case 0x829d: // FNumber
      return isRational(e) ? `f/${cfixed(num(e, 0), 1)}` : formatGeneric(e);
    case 0x9202: case 0x9205: { // ApertureValue, MaxApertureValue
      if (!isRational(e)) return formatGeneric(e);
      const d = num(e, 0);
      return `${cfixed(d, 2)} EV (f/${cfixed(Math.pow(2, d / 2), 1)})`;
    }
    case 0x920a: return isRational(e) ? `${cfixed(num(e, 0), 1)} mm` : formatGeneric(e);
    case 0x9206: return isRational(e) ? `${cfixed(num(e, 0), 1)} m` : formatGeneric(e);
    case 0x829a: { // ExposureTime
      if (!isRational(e)) return formatGeneric(e);
      const d = num(e, 0);
      return `${d < 1 && d !== 0 ? `1/${cfixed(1 / d, 0)}` : cfixed(d, 0)} sec.`;
    }
    case 0x9201: { // ShutterSpeedValue
      if (!isRational(e)) return formatGeneric(e);
      const d = num(e, 0);
      const t = 1 / Math.pow(2, d);
      return `${cfixed(d, 2)} EV` + (t < 1 && t !== 0 ? ` (1/${cfixed(1 / t, 0)} sec.)` : ` (${cfixed(t, 0)} sec.)`);
    }
    case 0x9203: { // BrightnessValue
      if (!isRational(e)) return formatGeneric(e);
      const d = num(e, 0);
      return `${cfixed(d, 2)} EV (${cfixed((1 / (Math.PI * 0.3048 * 0.3048)) * Math.pow(2, d), 2)} cd/m^2)`;
    }
    case 0x9204: return isRational(e) ? `${cfixed(num(e, 0), 2)} EV` : formatGeneric(e);
    case 0x9101: { // ComponentsConfiguration
      const names = ['-', 'Y', 'Cb', 'Cr', 'R', 'G', 'B'];
      return [...e.data].map((b) => names[b] ?? 'Reserved').join(' ');
    }
    case 0xa300: return e.data[0] === 3 ? 'DSC' : `Internal error (unknown value ${e.data[0] ?? 0})`;
    case 0xa301: return e.data[0] === 1 ? 'Directly photographed' : `Internal error (unknown value ${e.data[0] ?? 0})`;
    case 0x9286: return userComment(e.data);
    case 0x0212: { // YCbCrSubSampling
      if (e.type !== 3 || e.count !== 2) return formatGeneric(e);
      const [a, b] = [num(e, 0), num(e, 1)];
      if (a === 2 && b === 1) return 'YCbCr4:2:2';
      if (a === 2 && b === 2) return 'YCbCr4:2:0';
      return `${a}, ${b}`;
    }
    case 0x9214: { // SubjectArea
      if (e.type !== 3) return formatGeneric(e);
      const v = Array.from({ length: e.count }, (_, i) => num(e, i));
      if (v.length === 2) return `(x,y) = (${v[0]},${v[1]})`;
      if (v.length === 3) return `Within distance ${v[2]} of (x,y) = (${v[0]},${v[1]})`;
      if (v.length === 4) return `Within rectangle (width ${v[2]}, height ${v[3]}) around (x,y) = (${v[0]},${v[1]})`;
      return formatGeneric(e);
    }
    case 0x9c9b: case 0x9c9c: case 0x9c9d: case 0x9c9e: case 0x9c9f: { // XP* (UCS-2 little endian)
      if (e.type !== 1) return formatGeneric(e);
      const s = e.data.subarray(0, e.data.length & ~1).toString('utf16le');
      const nul = s.indexOf('\0');
      return nul < 0 ? s : s.slice(0, nul);
    }
    default: return formatGeneric(e);
  }
}

function formatGps(e: Entry): string {
  switch (e.tag) {
    case 0x00: // GPSVersionID
      return e.type === 1 ? [...e.data].join('.') : formatGeneric(e);
    case 0x05: // GPSAltitudeRef
      if (e.type !== 1) return formatGeneric(e);
      return e.data[0] === 0 ? 'Sea level' : e.data[0] === 1 ? 'Sea level reference' : `Internal error (unknown value ${e.data[0]})`;
    case 0x07: { // GPSTimeStamp
      if (e.type !== 5 || e.count !== 3) return formatGeneric(e);
      const [hn, hd] = ratio(e, 0);
      const [mn, md] = ratio(e, 1);
      const s = num(e, 2);
      const h = hd ? Math.trunc(hn / hd) : 0;
      const m = md ? Math.trunc(mn / md) : 0;
      return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${cfixed(s, 2).padStart(5, '0')}`;
    }
    default: return formatGeneric(e);
  }
}

/** libexif's generic formatting by TIFF type (`exif_entry_format_value`). */
function formatGeneric(e: Entry): string {
  const n = Math.min(e.count, 4096);
  const all = (f: (i: number) => string): string => Array.from({ length: n }, (_, i) => f(i)).join(', ');
  switch (e.type) {
    case 2: return cString(e.data);
    case 7: return `${e.data.length} bytes undefined data`;
    case 1: case 6: return all((i) => `0x${(e.data[i] ?? 0).toString(16).padStart(2, '0')}`);
    case 3: case 4: case 8: case 9: case 13: return all((i) => String(num(e, i)));
    case 5: case 10: return all((i) => {
      const [nu, de] = ratio(e, i);
      if (de === 0) return `${nu}/${de}`;
      const decimals = Math.max(0, Math.trunc(Math.log10(Math.abs(de)) - 0.08 + 1.0));
      return cfixed(nu / de, decimals).padStart(2, ' ');
    });
    case 11: case 12: return all((i) => cfixed(num(e, i), 6));
    default: return '';
  }
}

function exifVersion(data: Buffer): string {
  const known: Record<string, string> = {
    '0110': '1.1', '0120': '1.2', '0200': '2.0', '0210': '2.1', '0220': '2.2', '0221': '2.21', '0230': '2.3',
    '0231': '2.31', '0232': '2.32',
  };
  const v = known[data.toString('latin1', 0, 4)];
  return v ? `Exif Version ${v}` : 'Unknown Exif Version';
}

function flashPixVersion(data: Buffer): string {
  const v = data.toString('latin1', 0, 4);
  if (v === '0100') return 'FlashPix Version 1.0';
  if (v === '0101') return 'FlashPix Version 1.01';
  return 'Unknown FlashPix Version';
}

function copyright(data: Buffer): string {
  const nul = data.indexOf(0);
  const photographer = cString(data);
  const editor = nul >= 0 ? cString(data.subarray(nul + 1)) : '';
  return `${photographer.trim() ? photographer : '[None]'} (Photographer) - ${editor.trim() ? editor : '[None]'} (Editor)`;
}

function userComment(data: Buffer): string {
  const head = data.toString('latin1', 0, Math.min(8, data.length));
  if (data.length >= 8 && head === 'ASCII\0\0\0') return cString(data.subarray(8));
  if (data.length >= 8 && head === 'UNICODE\0') return 'Unsupported UNICODE string';
  if (data.length >= 8 && head === 'JIS\0\0\0\0\0') return 'Unsupported JIS string';
  if (data.every((b) => b === 0 || b === 0x20)) return '';
  return [...data].filter((b) => b !== 0).map((b) => String.fromCharCode(b)).join('');
}

/**
 * C's `printf("%.*f")` for a double: exact decimal expansion with round-half-to-even on exact ties
 * (glibc), which `Number.prototype.toFixed` does not do (it rounds ties up).
 */
export function cfixed(x: number, digits: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  const neg = x < 0 || Object.is(x, -0);
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const expBits = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp: number;
  if (expBits === 0) exp = -1074;
  else { mant |= 1n << 52n; exp = expBits - 1075; }
  const scale = 10n ** BigInt(digits);
  let q: bigint;
  if (exp >= 0) q = (mant << BigInt(exp)) * scale;
  else {
    const den = 1n << BigInt(-exp);
    const numr = mant * scale;
    q = numr / den;
    const r2 = (numr % den) * 2n;
    if (r2 > den || (r2 === den && q % 2n === 1n)) q += 1n;
  }
  let s = q.toString();
  if (digits > 0) {
    s = s.padStart(digits + 1, '0');
    s = `${s.slice(0, -digits)}.${s.slice(-digits)}`;
  }
  return neg ? `-${s}` : s;
}
