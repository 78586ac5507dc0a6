/**
 * The one byte-rate limiter: the put policy's `trafficLimit` on an upload (bits per second, 819200–838860800;
 * docs/development/kodo-protocol.md §3.1), the scrubber's GRANARY_SCRUB_BYTES_PER_SEC, and the remote CLI's
 * `--bwlimit` (transfer/throttle.ts: one limiter shared by every transfer of a command).
 *
 * A `Pacer` is a token bucket kept as the time its reserved bytes are due (bytes per second; the credit an idle
 * pacer gathers is at most `burstBytes`): `delayMs(bytes)` reserves `bytes` at once and answers how long to hold
 * them, so callers are served in the order they asked. With no burst limit (the default: trafficLimit, the
 * scrubber) it keeps the average rate of everything counted through it since its creation; with one (`--bwlimit`:
 * one second's worth, at least 64 KiB) a pause gathers at most that much credit. `ThrottleStream` is a
 * pass-through Transform that holds chunks back by a pacer.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';

/** Paces a flow of bytes to `bytesPerSecond` (> 0); see the module comment. */
export class Pacer {
  /** When every byte reserved so far has passed, Unix ms (fractional). */
  private dueMs: number;
  private readonly burstMs: number;

  /** `burstBytes`: the most credit a pause gathers (default: unbounded, the average since creation). */
  constructor(
    readonly bytesPerSecond: number,
    burstBytes = Number.POSITIVE_INFINITY,
  ) {
    this.burstMs = (burstBytes / bytesPerSecond) * 1000;
    // A bounded pacer starts with a full burst of credit; an unbounded one with none (the average from now on).
    this.dueMs = Date.now() - (Number.isFinite(this.burstMs) ? this.burstMs : 0);
  }

  /**
   * Reserves `bytes` and answers how many milliseconds to wait before passing them on (0 when on time). A chunk
   * larger than the burst waits only for a burst's worth of credit (the rest is owed by the chunks after it).
   */
  delayMs(bytes: number): number {
    const now = Date.now();
    const floor = now - this.burstMs;
    if (this.dueMs < floor) this.dueMs = floor;
    const ms = (n: number): number => (n / this.bytesPerSecond) * 1000;
    const wait = this.dueMs + Math.min(ms(bytes), this.burstMs) - now;
    this.dueMs += ms(bytes);
    return Math.max(0, wait);
  }

  /** Resolves when `bytes` may pass (`delayMs`, awaited; callers are served in the order they asked). */
  async take(bytes: number): Promise<void> {
    const waitMs = this.delayMs(bytes);
    if (waitMs > 0) await delay(waitMs);
  }
}

export class ThrottleStream extends Transform {
  private readonly pacer: Pacer;

  /** `rate`: bits per second (trafficLimit), or a Pacer shared with other streams. */
  constructor(rate: number | Pacer) {
    super();
    this.pacer = typeof rate === 'number' ? new Pacer(rate / 8) : rate;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const waitMs = this.pacer.delayMs(chunk.length);
    if (waitMs <= 1) {
      cb(null, chunk);
      return;
    }
    setTimeout(() => cb(null, chunk), waitMs);
  }
}
