/**
 * Byte-rate limits: the put policy's `trafficLimit` on an upload (bits per second, 819200–838860800;
 * docs/development/kodo-protocol.md §3.1) and the scrubber's GRANARY_SCRUB_BYTES_PER_SEC. A `Pacer` keeps the average rate of everything
 * counted through it at the limit; `ThrottleStream` is a pass-through Transform that delays chunks by a pacer.
 */
import { Transform, type TransformCallback } from 'node:stream';

/** Paces a flow of bytes to `bytesPerSecond` on average, from its creation on. */
export class Pacer {
  private readonly startMs = Date.now();
  private sent = 0;

  constructor(readonly bytesPerSecond: number) {}

  /** Counts `bytes` and answers how many milliseconds to wait before passing them on (0 when on time). */
  delayMs(bytes: number): number {
    this.sent += bytes;
    const dueMs = this.startMs + (this.sent / this.bytesPerSecond) * 1000;
    return Math.max(0, dueMs - Date.now());
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
