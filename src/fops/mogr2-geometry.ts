/**
 * imageMogr2 geometries (docs/development/kodo-protocol.md §10.3): parsing `thumbnail/<geom>` and `crop/<geom>`, and the pure size
 * arithmetic (thumbnail size, crop rectangle, rotated bounding box). Sizes round to the nearest pixel, at least 1.
 *
 * Thumbnail forms (W, H 1..9999; P 1..999 percent; Area 1..24,999,999):
 *
 * | form | result |
 * |---|---|
 * | `!<P>p` | both sides × P% |
 * | `!<P>px` | width × P%, height unchanged |
 * | `!x<P>p` | height × P%, width unchanged |
 * | `<W>x` / `x<H>` | that side exactly, the other in proportion (may enlarge) |
 * | `<W>x<H>` | largest proportional size inside W×H (may enlarge) |
 * | `!<W>x<H>r` | smallest proportional size covering W×H (may enlarge) |
 * | `<W>x<H>!` | exactly W×H (distorts) |
 * | `<W>x<H>>` (also `<W>x>`, `x<H>>`) | like `<W>x<H>`, only when the image is larger than a bound; else unchanged |
 * | `<W>x<H><` (also `<W>x<`, `x<H><`) | like `<W>x<H>`, only when the image is smaller than every bound; else unchanged |
 * | `<Area>@` | largest proportional size with width × height ≤ Area (may enlarge; sides rounded down) |
 *
 * Crop forms: `<W>x`, `x<H>`, `<W>x<H>` (a missing side is the whole side) optionally preceded by `!` and
 * followed by offsets `a<dx>a<dy>` where `a` adds and `-` subtracts (W, H 1..10000; offsets 0..99999). The box is
 * placed at the gravity anchor (default NorthWest), moved right by dx and down by dy (negative: left/up), then
 * clipped to the image: `!400x400-30a100` with NorthWest is 370×400 at (0,100). A box entirely outside is a 400.
 */
import { Errors } from '../errors.js';
import { anchorBox, type Gravity } from './gravity.js';

export type Thumbnail =
  | { kind: 'percent'; pw: number; ph: number }
  | { kind: 'fit'; w?: number; h?: number; only?: 'shrink' | 'enlarge' }
  | { kind: 'cover'; w: number; h: number }
  | { kind: 'exact'; w: number; h: number }
  | { kind: 'area'; area: number };

export interface Crop {
  w?: number;
  h?: number;
  dx: number;
  dy: number;
}

export interface Rect {
  left: number;
  top: number;
  width: number;
  height: number;
}

const bad = (what: string): never => {
  throw Errors.badRequest(`imageMogr2: ${what}`);
};

function int(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) bad(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(text)}`);
  return n;
}

/** Parses a thumbnail geometry; 400 `imageMogr2: thumbnail …` naming the bad value. */
export function parseThumbnail(v: string): Thumbnail {
  const name = 'thumbnail';
  let m: RegExpExecArray | null;
  if ((m = /^!(\d+)p$/.exec(v))) {
    const p = int(`${name} percent`, m[1] as string, 1, 999);
    return { kind: 'percent', pw: p, ph: p };
  }
  if ((m = /^!(\d+)px$/.exec(v))) return { kind: 'percent', pw: int(`${name} percent`, m[1] as string, 1, 999), ph: 100 };
  if ((m = /^!x(\d+)p$/.exec(v))) return { kind: 'percent', pw: 100, ph: int(`${name} percent`, m[1] as string, 1, 999) };
  if ((m = /^(\d+)@$/.exec(v))) return { kind: 'area', area: int(`${name} area`, m[1] as string, 1, 24_999_999) };
  if ((m = /^!(\d+)x(\d+)r$/.exec(v))) {
    return { kind: 'cover', w: int(`${name} width`, m[1] as string, 1, 9999), h: int(`${name} height`, m[2] as string, 1, 9999) };
  }
  if ((m = /^(\d*)x(\d*)([!<>]?)$/.exec(v)) && (m[1] !== '' || m[2] !== '')) {
    const w = m[1] === '' ? undefined : int(`${name} width`, m[1] as string, 1, 9999);
    const h = m[2] === '' ? undefined : int(`${name} height`, m[2] as string, 1, 9999);
    const flag = m[3];
    if (flag === '!') {
      if (w === undefined || h === undefined) bad(`thumbnail ${JSON.stringify(v)}: ! needs both width and height`);
      return { kind: 'exact', w: w as number, h: h as number };
    }
    const t: Thumbnail = { kind: 'fit' };
    if (w !== undefined) t.w = w;
    if (h !== undefined) t.h = h;
    if (flag === '>') t.only = 'shrink';
    if (flag === '<') t.only = 'enlarge';
    return t;
  }
  return bad(`bad thumbnail geometry ${JSON.stringify(v)}`);
}

/** Parses a crop geometry; 400 `imageMogr2: …` naming the bad value. */
export function parseCrop(v: string): Crop {
  const m = /^(!?)(\d*)x(\d*)(?:([a-])(\d+)([a-])(\d+))?$/.exec(v);
  if (!m || (m[2] === '' && m[3] === '')) return bad(`bad crop geometry ${JSON.stringify(v)}`);
  const c: Crop = { dx: 0, dy: 0 };
  if (m[2] !== '') c.w = int('crop width', m[2] as string, 1, 10000);
  if (m[3] !== '') c.h = int('crop height', m[3] as string, 1, 10000);
  if (m[4] !== undefined) {
    c.dx = int('crop x offset', m[5] as string, 0, 99999) * (m[4] === '-' ? -1 : 1);
    c.dy = int('crop y offset', m[7] as string, 0, 99999) * (m[6] === '-' ? -1 : 1);
  }
  return c;
}

const side = (v: number): number => Math.max(1, Math.round(v));

/** Size of a `sw`×`sh` image after `t`. */
export function thumbnailSize(t: Thumbnail, sw: number, sh: number): { width: number; height: number } {
  switch (t.kind) {
    case 'percent':
      return { width: side((sw * t.pw) / 100), height: side((sh * t.ph) / 100) };
    case 'exact':
      return { width: t.w, height: t.h };
    case 'cover': {
      const s = Math.max(t.w / sw, t.h / sh);
      return { width: side(sw * s), height: side(sh * s) };
    }
    case 'area': {
      const s = Math.sqrt(t.area / (sw * sh));
      let width = Math.max(1, Math.floor(sw * s));
      let height = Math.max(1, Math.floor(sh * s));
      // Floating-point slack: never above the area (unless a side is already 1).
      while (width * height > t.area && width > 1 && height > 1) {
        if (width / sw > height / sh) width--;
        else height--;
      }
      return { width, height };
    }
    case 'fit': {
      const larger = (t.w !== undefined && sw > t.w) || (t.h !== undefined && sh > t.h);
      const smaller = (t.w === undefined || sw < t.w) && (t.h === undefined || sh < t.h);
      if ((t.only === 'shrink' && !larger) || (t.only === 'enlarge' && !smaller)) return { width: sw, height: sh };
      if (t.w !== undefined && t.h === undefined) return { width: t.w, height: side((sh * t.w) / sw) };
      if (t.h !== undefined && t.w === undefined) return { width: side((sw * t.h) / sh), height: t.h };
      const s = Math.min((t.w as number) / sw, (t.h as number) / sh);
      return { width: side(sw * s), height: side(sh * s) };
    }
  }
}

/** The region `c` selects in a `W`×`H` image at gravity `g` (clipped to the image; 400 when nothing is left). */
export function cropRect(c: Crop, g: Gravity, W: number, H: number): Rect {
  const w = Math.min(c.w ?? W, W);
  const h = Math.min(c.h ?? H, H);
  const a = anchorBox(g, W, H, w, h);
  const x0 = a.left + c.dx;
  const y0 = a.top + c.dy;
  const left = Math.max(0, x0);
  const top = Math.max(0, y0);
  const right = Math.min(W, x0 + w);
  const bottom = Math.min(H, y0 + h);
  if (right <= left || bottom <= top) bad(`the crop region lies outside the ${W}x${H} image`);
  return { left, top, width: right - left, height: bottom - top };
}

/** Bounding box of a `w`×`h` image rotated clockwise by `angle` degrees (1..360). */
export function rotatedSize(w: number, h: number, angle: number): { width: number; height: number } {
  const a = angle % 360;
  if (a === 0 || a === 180) return { width: w, height: h };
  if (a === 90 || a === 270) return { width: h, height: w };
  const r = (a * Math.PI) / 180;
  const c = Math.abs(Math.cos(r));
  const s = Math.abs(Math.sin(r));
  return { width: Math.ceil(w * c + h * s), height: Math.ceil(w * s + h * c) };
}
