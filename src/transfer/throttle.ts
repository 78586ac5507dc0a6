/**
 * `--bwlimit`: one limiter shared by every transfer of a command (the one byte-rate Pacer of objects/throttle.ts,
 * with a burst of one second's worth, at least 64 KiB, so one read chunk always fits), and a pass-through stream
 * paced by it. Rates in bytes per second.
 */
import { PassThrough, type Transform } from 'node:stream';
import { Pacer, ThrottleStream } from '../objects/throttle.js';

/** The limiter of one command: `bytesPerSecond` > 0. */
export class RateLimiter extends Pacer {
  constructor(bytesPerSecond: number) {
    super(bytesPerSecond, Math.max(bytesPerSecond, 64 * 1024));
  }
}

/** A pass-through stream paced by `limiter` (no limiter: no pacing). */
export function throttled(limiter: RateLimiter | undefined): Transform {
  return limiter ? new ThrottleStream(limiter) : new PassThrough();
}

/** Parses `--bwlimit`: bytes per second with an optional K/M/G suffix (powers of 1024), e.g. `10M`. */
export function parseRate(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?(?:\/s)?$/i.exec(text.trim());
  if (!m) throw new Error(`--bwlimit: expected bytes per second like 500K or 10M, got ${JSON.stringify(text)}`);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  const n = Math.floor(Number(m[1]) * mult);
  if (n <= 0) throw new Error('--bwlimit must be above 0');
  return n;
}
