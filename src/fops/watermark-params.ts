/**
 * Parameters of `watermark` (docs/development/kodo-protocol.md §10.5). Pure: no I/O. 400 `watermark: …` naming a bad parameter.
 *
 * - `watermark/1/image/<b64 URL>/dissolve/<1..100>/gravity/<G>/dx/<px>/dy/<px>/ws/<0..1>/wst/<0..3>`: an image
 *   (http or https URL, URL-safe base64, padded or not).
 * - `watermark/2/text/<b64>/font/<b64>/fontsize/<twips>/fill/<b64 colour>/dissolve/../gravity/../dx/../dy/..`:
 *   a text (at most 256 characters; `\n` breaks lines).
 * - `watermark/3/image/<b64>/…/text/<b64>/…`: several marks, drawn in order; each `image` or `text` parameter
 *   starts a new mark and the parameters after it belong to that mark.
 *
 * Defaults: dissolve 100 (opaque), gravity SouthEast, dx = dy = 10 (margins from the anchored edges, see
 * gravity.ts `insetBox`; -9999..9999), fontsize 0 = 240 twips (12 pt, drawn at 72 dpi: 12 px; at most 20000),
 * fill black. `ws` > 0 scales the image so that its short edge is `ws` × the base's short edge (`wst` picks the
 * edges compared: 0 short edges (default), 1 long edges, 2 widths, 3 heights); `ws` 0 or absent keeps its size.
 * Colours: `#RRGGBB`, `#RGB` or a name of watermark-text.ts `COLOURS`. Fonts: watermark-text.ts `fontFace`.
 */
import { urlsafeB64DecodeText } from '../auth/base64.js';
import { Errors } from '../errors.js';
import { parseGravity, type Gravity } from './gravity.js';
import { fontFace, parseColour, type FontFace } from './watermark-text.js';

interface Placement {
  /** Opacity in percent, 1..100. */
  dissolve: number;
  gravity: Gravity;
  dx: number;
  dy: number;
}

export interface ImageMark extends Placement {
  kind: 'image';
  url: string;
  /** Scale relative to the base image (0 = keep the watermark's own size). */
  ws: number;
  /** Which edges `ws` relates: 0 short, 1 long, 2 width, 3 height. */
  wst: 0 | 1 | 2 | 3;
}

export interface TextMark extends Placement {
  kind: 'text';
  text: string;
  font: FontFace;
  /** Font size in twips (1/20 pt). */
  fontSize: number;
  /** `#rrggbb`. */
  fill: string;
}

export type Mark = ImageMark | TextMark;

export interface WatermarkParams {
  marks: Mark[];
}

/** Twips used for `fontsize` 0 or absent: 12 pt. */
export const DEFAULT_FONT_SIZE = 240;
export const MAX_FONT_SIZE = 20000;
export const MAX_TEXT_CHARS = 256;

const bad = (what: string): never => {
  throw Errors.badRequest(`watermark: ${what}`);
};

const COMMON = new Set(['dissolve', 'gravity', 'dx', 'dy']);
const IMAGE_KEYS = new Set([...COMMON, 'image', 'ws', 'wst']);
const TEXT_KEYS = new Set([...COMMON, 'text', 'font', 'fontsize', 'fill']);

function b64(k: string, v: string): string {
  try {
    return urlsafeB64DecodeText(v);
  } catch {
    return bad(`${k} is not URL-safe base64`);
  }
}

function int(k: string, v: string, min: number, max: number): number {
  const n = Number(v);
  if (!/^-?\d{1,6}$/.test(v) || n < min || n > max) bad(`${k} must be an integer between ${min} and ${max}, got ${JSON.stringify(v)}`);
  return n;
}

function url(v: string): string {
  const text = b64('image', v);
  let u: URL | undefined;
  try {
    u = new URL(text);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || text.length > 4096) bad(`image must be an http(s) URL, got ${JSON.stringify(text.slice(0, 100))}`);
  return text;
}

/** One mark from its `name/value` pairs (the first names its kind). */
function mark(pairs: [string, string][]): Mark {
  const kind = pairs[0]?.[0] === 'image' ? 'image' : 'text';
  const allowed = kind === 'image' ? IMAGE_KEYS : TEXT_KEYS;
  const m: Record<string, unknown> = { kind, dissolve: 100, gravity: 'SouthEast', dx: 10, dy: 10 };
  if (kind === 'image') Object.assign(m, { ws: 0, wst: 0 });
  else Object.assign(m, { font: fontFace(undefined), fontSize: DEFAULT_FONT_SIZE, fill: '#000000' });
  const seen = new Set<string>();
  for (const [k, v] of pairs) {
    if (!allowed.has(k)) bad(`unknown parameter ${JSON.stringify(k)} for ${kind === 'image' ? 'an image' : 'a text'} watermark`);
    if (seen.has(k)) bad(`parameter ${k} given twice`);
    seen.add(k);
    if (v === '') bad(`parameter ${k} has no value`);
    switch (k) {
      case 'image':
        m.url = url(v);
        break;
      case 'text': {
        const t = b64('text', v);
        if (t.trim() === '' || [...t].length > MAX_TEXT_CHARS) bad(`text must have 1..${MAX_TEXT_CHARS} characters`);
        m.text = t;
        break;
      }
      case 'font':
        m.font = fontFace(b64('font', v));
        break;
      case 'fontsize': {
        const n = int('fontsize', v, 0, MAX_FONT_SIZE);
        m.fontSize = n === 0 ? DEFAULT_FONT_SIZE : n;
        break;
      }
      case 'fill': {
        const c = parseColour(b64('fill', v));
        if (!c) bad(`fill must be #RRGGBB, #RGB or a colour name`);
        m.fill = c;
        break;
      }
      case 'dissolve':
        m.dissolve = int('dissolve', v, 1, 100);
        break;
      case 'gravity':
        m.gravity = parseGravity('watermark', v);
        break;
      case 'dx':
      case 'dy':
        m[k] = int(k, v, -9999, 9999);
        break;
      case 'ws': {
        const n = Number(v);
        if (!/^\d+(\.\d+)?$/.test(v) || n > 1) bad(`ws must be a number between 0 and 1, got ${JSON.stringify(v)}`);
        m.ws = n;
        break;
      }
      case 'wst':
        m.wst = int('wst', v, 0, 3);
        break;
    }
  }
  return m as unknown as Mark;
}

/** Parses the arguments after `watermark`. */
export function parseWatermark(args: string[]): WatermarkParams {
  const mode = args[0];
  if (mode !== '1' && mode !== '2' && mode !== '3') bad(`mode must be 1 (image), 2 (text) or 3 (several), got ${JSON.stringify(mode ?? '')}`);
  const rest = args.slice(1);
  if (rest.length % 2 !== 0) bad(`parameter ${rest[rest.length - 1]} has no value`);
  const pairs: [string, string][] = [];
  for (let i = 0; i < rest.length; i += 2) pairs.push([rest[i] as string, rest[i + 1] as string]);
  if (mode !== '3') {
    const key = mode === '1' ? 'image' : 'text';
    const first = pairs.findIndex(([k]) => k === key);
    if (first < 0) bad(`mode ${mode} needs ${key}`);
    // The kind-naming parameter first, so that mark() knows the kind; the order is otherwise free.
    const ordered = [pairs[first] as [string, string], ...pairs.filter((_, i) => i !== first)];
    return { marks: [mark(ordered)] };
  }
  const groups: [string, string][][] = [];
  for (const pair of pairs) {
    if (pair[0] === 'image' || pair[0] === 'text') groups.push([pair]);
    else if (groups.length === 0) bad(`mode 3: ${pair[0]} before the first image or text`);
    else groups[groups.length - 1]?.push(pair);
  }
  if (groups.length === 0) bad('mode 3 needs at least one image or text');
  if (groups.length > 10) bad('at most 10 marks');
  return { marks: groups.map(mark) };
}
