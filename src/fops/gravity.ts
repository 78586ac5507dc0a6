/**
 * Gravity (docs/development/kodo-protocol.md §10.3, §10.5): which of nine anchor points of an image a box is placed at. Shared by
 * imageMogr2 (crop) and watermark. Names are matched case-insensitively (`northwest`, `NorthWest`).
 *
 * ```
 * NorthWest  North  NorthEast
 * West       Center East
 * SouthWest  South  SouthEast
 * ```
 */
import { Errors } from '../errors.js';

export type Gravity = 'NorthWest' | 'North' | 'NorthEast' | 'West' | 'Center' | 'East' | 'SouthWest' | 'South' | 'SouthEast';

const NAMES: Gravity[] = ['NorthWest', 'North', 'NorthEast', 'West', 'Center', 'East', 'SouthWest', 'South', 'SouthEast'];
const BY_LOWER = new Map(NAMES.map((g) => [g.toLowerCase(), g]));

/** Parses a gravity name; 400 `<cmd>: unknown gravity "<v>"`. */
export function parseGravity(cmd: string, v: string): Gravity {
  const g = BY_LOWER.get(v.toLowerCase());
  if (!g) throw Errors.badRequest(`${cmd}: unknown gravity ${JSON.stringify(v)} (one of ${NAMES.join(', ')})`);
  return g;
}

/** -1 west/north edge, 0 centred, +1 east/south edge, per axis. */
function sides(g: Gravity): { h: -1 | 0 | 1; v: -1 | 0 | 1 } {
  const h = g.endsWith('West') ? -1 : g.endsWith('East') ? 1 : 0;
  const v = g.startsWith('North') ? -1 : g.startsWith('South') ? 1 : 0;
  return { h, v };
}

const along = (side: -1 | 0 | 1, outer: number, inner: number): number =>
  side < 0 ? 0 : side > 0 ? outer - inner : Math.floor((outer - inner) / 2);

/** Top-left corner of a `w`×`h` box placed at gravity `g` of a `W`×`H` image (centred axes round down). */
export function anchorBox(g: Gravity, W: number, H: number, w: number, h: number): { left: number; top: number } {
  const s = sides(g);
  return { left: along(s.h, W, w), top: along(s.v, H, h) };
}

/**
 * Top-left corner of a `w`×`h` box at gravity `g`, `dx`/`dy` pixels in from the anchored edges (watermark
 * margins, GraphicsMagick `-gravity … -geometry +dx+dy`): on an East edge `dx` moves the box left, on a West edge
 * right; on a centred axis a positive offset moves it right (or down).
 */
export function insetBox(g: Gravity, W: number, H: number, w: number, h: number, dx: number, dy: number): { left: number; top: number } {
  const s = sides(g);
  const a = anchorBox(g, W, H, w, h);
  return { left: a.left + (s.h > 0 ? -dx : dx), top: a.top + (s.v > 0 ? -dy : dy) };
}
