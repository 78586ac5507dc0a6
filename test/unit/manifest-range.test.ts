/** Mapping a byte range of an assembled object onto its pieces (objects/verified-read.ts `piecesInRange`). */
import { describe, expect, it } from 'vitest';
import { piecesInRange } from '../../src/objects/verified-read.js';

describe('piecesInRange', () => {
  const sizes = [10, 5, 0, 20];

  it('without a range: every non-empty piece whole', () => {
    expect(piecesInRange(sizes)).toEqual([
      { index: 0, start: 0, end: 9 },
      { index: 1, start: 0, end: 4 },
      { index: 3, start: 0, end: 19 },
    ]);
  });

  it('a range inside one piece', () => {
    expect(piecesInRange(sizes, { start: 2, end: 7 })).toEqual([{ index: 0, start: 2, end: 7 }]);
    expect(piecesInRange(sizes, { start: 16, end: 16 })).toEqual([{ index: 3, start: 1, end: 1 }]);
  });

  it('a range across boundaries, starting and ending inside pieces, skipping an empty piece', () => {
    expect(piecesInRange(sizes, { start: 8, end: 17 })).toEqual([
      { index: 0, start: 8, end: 9 },
      { index: 1, start: 0, end: 4 },
      { index: 3, start: 0, end: 2 },
    ]);
  });

  it('the last byte of a piece and the first of the next', () => {
    expect(piecesInRange(sizes, { start: 9, end: 10 })).toEqual([
      { index: 0, start: 9, end: 9 },
      { index: 1, start: 0, end: 0 },
    ]);
    expect(piecesInRange(sizes, { start: 14, end: 15 })).toEqual([
      { index: 1, start: 4, end: 4 },
      { index: 3, start: 0, end: 0 },
    ]);
  });

  it('exactly one piece, and a suffix clipped to the end', () => {
    expect(piecesInRange(sizes, { start: 10, end: 14 })).toEqual([{ index: 1, start: 0, end: 4 }]);
    expect(piecesInRange(sizes, { start: 30, end: 99 })).toEqual([{ index: 3, start: 15, end: 19 }]);
  });

  it('no pieces, or a range past the end: nothing', () => {
    expect(piecesInRange([])).toEqual([]);
    expect(piecesInRange([], { start: 0, end: 0 })).toEqual([]);
    expect(piecesInRange(sizes, { start: 35, end: 40 })).toEqual([]);
  });

  it('the slices of any range add up to its length (every range of a small layout)', () => {
    const layout = [3, 1, 0, 4, 2];
    const total = layout.reduce((a, b) => a + b, 0);
    for (let start = 0; start < total; start++) {
      for (let end = start; end < total; end++) {
        const slices = piecesInRange(layout, { start, end });
        expect(slices.reduce((n, s) => n + s.end - s.start + 1, 0)).toBe(end - start + 1);
        for (const s of slices) expect(s.end).toBeLessThan(layout[s.index] as number);
      }
    }
  });
});
