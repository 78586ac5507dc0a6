/** Pixel helpers for image fop tests: generated images with known colours, pixel and region reads. */
import sharp from 'sharp';

export type Rgb = [number, number, number];

/** A `w`×`h` PNG of one colour (alpha optional, 0..1). */
export async function solid(w: number, h: number, [r, g, b]: Rgb, alpha = 1): Promise<Buffer> {
  return sharp({ create: { width: w, height: h, channels: 4, background: { r, g, b, alpha } } }).png().toBuffer();
}

/** A PNG of `cols`×`rows` cells of `cell` px, cell (c, r) coloured `colours[r * cols + c]`. */
export async function grid(cell: number, cols: number, rows: number, colours: Rgb[]): Promise<Buffer> {
  const parts = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      parts.push({ input: await solid(cell, cell, colours[r * cols + c] as Rgb), left: c * cell, top: r * cell });
    }
  }
  return sharp({ create: { width: cols * cell, height: rows * cell, channels: 3, background: { r: 0, g: 0, b: 0 } } })
    .composite(parts)
    .removeAlpha()
    .png()
    .toBuffer();
}

/** Decoded RGBA pixels of an image. */
export interface Pixels {
  width: number;
  height: number;
  /** [r, g, b, a] at (x, y). */
  at(x: number, y: number): [number, number, number, number];
  /** Mean [r, g, b] of the rectangle. */
  mean(left: number, top: number, width: number, height: number): Rgb;
}

export async function pixels(image: Buffer): Promise<Pixels> {
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (x: number, y: number): [number, number, number, number] => {
    const i = (y * info.width + x) * 4;
    return [data[i] as number, data[i + 1] as number, data[i + 2] as number, data[i + 3] as number];
  };
  return {
    width: info.width,
    height: info.height,
    at,
    mean(left, top, width, height) {
      const sum = [0, 0, 0];
      for (let y = top; y < top + height; y++) {
        for (let x = left; x < left + width; x++) {
          const p = at(x, y);
          for (let c = 0; c < 3; c++) sum[c]! += p[c] as number;
        }
      }
      return sum.map((v) => v / (width * height)) as Rgb;
    },
  };
}

/** Whether two colours differ by at most `tolerance` per channel. */
export function near(a: readonly number[], b: readonly number[], tolerance = 10): boolean {
  return b.every((v, i) => Math.abs((a[i] as number) - v) <= tolerance);
}
