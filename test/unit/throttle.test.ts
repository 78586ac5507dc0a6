import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pacer, ThrottleStream } from '../../src/objects/throttle.js';
import { RateLimiter } from '../../src/transfer/throttle.js';

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

describe('Pacer (the one byte-rate limiter)', () => {
  afterEach(() => vi.useRealTimers());

  it('without a burst limit keeps the average since its creation (trafficLimit, the scrubber)', () => {
    vi.useFakeTimers();
    const p = new Pacer(1000); // bytes/s
    expect(p.delayMs(500)).toBe(500);
    vi.advanceTimersByTime(10_000);
    expect(p.delayMs(9000)).toBe(0); // the pause earned its credit
    expect(p.delayMs(1000)).toBe(500);
  });

  it('with a burst (--bwlimit: one second, at least 64 KiB) gathers at most that much credit in a pause', async () => {
    vi.useFakeTimers();
    const l = new RateLimiter(10 * 1024);
    expect(l.delayMs(64 * 1024)).toBe(0);
    expect(l.delayMs(10 * 1024)).toBe(1000);
    vi.advanceTimersByTime(100_000);
    expect(l.delayMs(64 * 1024)).toBe(0);
    expect(l.delayMs(10 * 1024)).toBe(1000);
    // A chunk above the burst waits for a burst's worth only; the rest is owed by what follows.
    vi.advanceTimersByTime(100_000);
    expect(l.delayMs(128 * 1024)).toBe(0);
    expect(l.delayMs(1024)).toBe(6500);
    let passed = false;
    const taken = l.take(1).then(() => (passed = true));
    await vi.advanceTimersByTimeAsync(6000);
    expect(passed).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    await taken;
    expect(passed).toBe(true);
  });
});
