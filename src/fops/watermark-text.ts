/**
 * Text watermarks (docs/development/kodo-protocol.md §10.5): fonts, colours, and rendering with sharp's text input (pango), using the
 * DejaVu fonts that ship with the project (npm `dejavu-fonts-ttf`).
 *
 * Fonts: `font/<b64 name>` picks a DejaVu face by family name, matched ignoring case, spaces, `-` and `_`:
 * `DejaVu Sans` (also `sans`, `sans-serif`), `DejaVu Sans Bold`, `DejaVu Serif` (also `serif`),
 * `DejaVu Serif Bold`, `DejaVu Sans Mono` (also `mono`, `monospace`), `DejaVu Sans Mono Bold`. Any other name
 * (Qiniu's 宋体, 黑体, 微软雅黑 …) uses the default, DejaVu Sans. Glyphs DejaVu lacks (CJK) come from whatever
 * fonts fontconfig finds on the machine, else they render as boxes.
 *
 * Sizes: twips / 20 = points, drawn at 72 dpi, so 1 pt = 1 px. Before rendering, a text is refused (400) when it
 * certainly cannot fit the base image (each character is at least 0.2 em wide, each line 1 em high) or when its
 * rendering could exceed 25,000,000 pixels (1.5 em per character and per line), so rendering stays bounded.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Errors } from '../errors.js';
import { OUTPUT_MAX_PIXELS } from './image-output.js';
import { loadSharp } from './sharp.js';

/** A DejaVu face: its pango family/style description and its file. */
export interface FontFace {
  name: string;
  file: string;
}

const FONT_DIR = join(dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');

const face = (name: string, file: string): FontFace => ({ name, file: join(FONT_DIR, file) });
const SANS = face('DejaVu Sans', 'DejaVuSans.ttf');
const SERIF = face('DejaVu Serif', 'DejaVuSerif.ttf');
const MONO = face('DejaVu Sans Mono', 'DejaVuSansMono.ttf');
const FACES = new Map<string, FontFace>([
  ['dejavusans', SANS],
  ['sans', SANS],
  ['sansserif', SANS],
  ['dejavusansbold', face('DejaVu Sans Bold', 'DejaVuSans-Bold.ttf')],
  ['dejavuserif', SERIF],
  ['serif', SERIF],
  ['dejavuserifbold', face('DejaVu Serif Bold', 'DejaVuSerif-Bold.ttf')],
  ['dejavusansmono', MONO],
  ['mono', MONO],
  ['monospace', MONO],
  ['dejavusansmonobold', face('DejaVu Sans Mono Bold', 'DejaVuSansMono-Bold.ttf')],
]);

/** The face for a requested family name (undefined or unknown → DejaVu Sans). */
export function fontFace(name: string | undefined): FontFace {
  return (name && FACES.get(name.toLowerCase().replace(/[\s_-]+/g, ''))) || SANS;
}

/** Colour names (the ones Qiniu documents, plus the CSS basic colours); values are CSS ones. */
export const COLOURS: Record<string, string> = {
  black: '#000000',
  white: '#ffffff',
  red: '#ff0000',
  orange: '#ffa500',
  yellow: '#ffff00',
  green: '#008000',
  blue: '#0000ff',
  purple: '#800080',
  gray: '#808080',
  grey: '#808080',
  pink: '#ffc0cb',
  silver: '#c0c0c0',
  maroon: '#800000',
  olive: '#808000',
  lime: '#00ff00',
  aqua: '#00ffff',
  cyan: '#00ffff',
  teal: '#008080',
  navy: '#000080',
  fuchsia: '#ff00ff',
  magenta: '#ff00ff',
  brown: '#a52a2a',
  gold: '#ffd700',
};

/** `#rrggbb` for `#RRGGBB`, `#RGB` or a colour name (case-insensitive); undefined otherwise. */
export function parseColour(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  if (/^#[0-9a-f]{6}$/.test(t)) return t;
  if (/^#[0-9a-f]{3}$/.test(t)) return `#${[...t.slice(1)].map((c) => c + c).join('')}`;
  return COLOURS[t];
}

const escapeMarkup = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** A rendered mark: straight (not premultiplied) RGBA pixels. */
export interface RgbaImage {
  data: Buffer;
  width: number;
  height: number;
}

/**
 * Renders `text` in `font` at `fontSize` twips in colour `fill` on a transparent background, for a base image
 * of `W`×`H` (400 when it certainly cannot fit or could be too large to render, see the module comment).
 */
export async function renderText(text: string, font: FontFace, fontSize: number, fill: string, W: number, H: number, timeoutSeconds: number): Promise<RgbaImage> {
  const px = fontSize / 20;
  const lines = text.split('\n');
  const longest = Math.max(...lines.map((l) => [...l].length));
  if (longest * px * 0.2 > W || lines.length * px > H) {
    throw Errors.badRequest(`watermark: the text at ${px} pt cannot fit the ${W}x${H} image`);
  }
  if (longest * px * 1.5 * (lines.length * px * 1.5) > OUTPUT_MAX_PIXELS) {
    throw Errors.badRequest(`watermark: the text at ${px} pt is too large to render`);
  }
  const { data, info } = await loadSharp()({
    text: { text: `<span foreground="${fill}">${escapeMarkup(text)}</span>`, font: `${font.name} ${px}`, fontfile: font.file, rgba: true, dpi: 72 },
  })
    .timeout({ seconds: timeoutSeconds })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 4) throw Errors.fopFailed('watermark: the text did not render as RGBA');
  return { data, width: info.width, height: info.height };
}
