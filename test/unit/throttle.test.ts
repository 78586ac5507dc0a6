import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThrottleStream } from '../../src/objects/throttle.js';

describe('ThrottleStream (trafficLimit)', () => {
  afterEach(() => vi.useRealTimers());

  it('holds chunks back until the rate allows them', async () => {
    vi.useFakeTimers();
    const t = new ThrottleStream(819200); // 102400 bytes/s
    const seen: number[] = [];
    t.on('data', (c: Buffer) => seen.push(c.length));
    const chunk = Buffer.alloc(51200); // half a second's worth each
    t.write(chunk);
    t.write(chunk);
    t.write(chunk);
    await vi.advanceTimersByTimeAsync(0);
    const early = seen.length;
    expect(early).toBeLessThan(3);
    await vi.advanceTimersByTimeAsync(1600);
    expect(seen.length).toBe(3);
    expect(seen.reduce((a, b) => a + b, 0)).toBe(153600);
  });
});
