/**
 * `--bwlimit`: one token bucket shared by every transfer of a command, and a Transform that paces a stream by it.
 * Rates in bytes per second; burst one second's worth (at least 64 KiB, so one read chunk always fits).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Transform, type TransformCallback } from 'node:stream';

export class RateLimiter {
  private tokens: number;
  private last = performance.now();
  private readonly burst: number;
  private queue: Promise<void> = Promise.resolve();

  /** `bytesPerSecond` > 0. */
  constructor(readonly bytesPerSecond: number) {
    this.burst = Math.max(bytesPerSecond, 64 * 1024);
    this.tokens = this.burst;
  }

  /** Resolves when `bytes` may pass (callers are served in order). */
  take(bytes: number): Promise<void> {
    const turn = this.queue.then(() => this.wait(bytes));
    this.queue = turn;
    return turn;
  }

  private async wait(bytes: number): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.bytesPerSecond);
      this.last = now;
      if (this.tokens >= Math.min(bytes, this.burst)) {
        this.tokens -= bytes;
        return;
      }
      await delay(Math.ceil(((Math.min(bytes, this.burst) - this.tokens) / this.bytesPerSecond) * 1000));
    }
  }
}

/** A pass-through stream paced by `limiter` (no limiter: no pacing). */
export function throttled(limiter: RateLimiter | undefined): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      if (!limiter) return cb(null, chunk);
      limiter.take(chunk.length).then(() => cb(null, chunk), cb);
    },
  });
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
