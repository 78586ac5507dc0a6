/**
 * The one back-off formula (src/backoff.ts): doubling from the first delay, capped, jittered only when asked; the
 * sequences each caller documents.
 */
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/backoff.js';

const seq = (b: Parameters<typeof backoffMs>[0], n: number): number[] => Array.from({ length: n }, (_, i) => backoffMs(b, i + 1));

describe('backoffMs', () => {
  it('doubles from the first delay, without a cap when none is given (fetch, notify)', () => {
    expect(seq({ firstMs: 1000 }, 4)).toEqual([1000, 2000, 4000, 8000]);
  });

  it('stops at the cap (event deliveries: an hour; worker restarts: 30 s; the commit batch: 8 ms)', () => {
    expect(backoffMs({ firstMs: 1000, maxMs: 3_600_000 }, 20)).toBe(3_600_000);
    expect(seq({ firstMs: 250, maxMs: 30_000 }, 9)).toEqual([250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(seq({ firstMs: 1, maxMs: 8 }, 6)).toEqual([1, 2, 4, 8, 8, 8]);
  });

  it('spreads by the jitter each way around the capped delay', () => {
    const b = { firstMs: 100, maxMs: 5000, jitter: 0.25 };
    expect(backoffMs(b, 1, () => 0)).toBe(75);
    expect(backoffMs(b, 1, () => 0.5)).toBe(100);
    expect(backoffMs(b, 1, () => 0.999)).toBeLessThan(125);
    expect(backoffMs(b, 10, () => 0)).toBe(3750);
  });

  it('stays finite for huge retry numbers and treats n < 1 as the first retry', () => {
    expect(Number.isFinite(backoffMs({ firstMs: 1 }, 10_000))).toBe(true);
    expect(backoffMs({ firstMs: 7 }, 0)).toBe(7);
  });
});
