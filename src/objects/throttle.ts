/**
 * Per-connection upload throttle for the put policy's `trafficLimit` (bits per second, 819200–838860800;
 * protocol.md §3.1). A pass-through Transform that delays chunks so the average rate stays at the limit.
 */
import { Transform, type TransformCallback } from 'node:stream';

export class ThrottleStream extends Transform {
  private readonly bytesPerSecond: number;
  private readonly startMs = Date.now();
  private sent = 0;

  /** `bitsPerSecond`: the rate limit (trafficLimit). */
  constructor(bitsPerSecond: number) {
    super();
    this.bytesPerSecond = bitsPerSecond / 8;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.sent += chunk.length;
    const dueMs = this.startMs + (this.sent / this.bytesPerSecond) * 1000;
    const waitMs = dueMs - Date.now();
    if (waitMs <= 1) {
      cb(null, chunk);
      return;
    }
    setTimeout(() => cb(null, chunk), waitMs);
  }
}
