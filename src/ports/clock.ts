/**
 * The Clock port: every time-dependent rule (token deadlines, X-Qiniu-Date window, putTime, deleteAfterDays,
 * the back-off of queue retries) asks this, so tests can move time without sleeping.
 */
export interface Clock {
  /** Current time in milliseconds since the Unix epoch. */
  nowMs(): number;
  /**
   * Calls `listener` whenever the clock jumps (a test moved it); returns an unsubscribe. Absent on clocks that
   * only run forward at real speed: timers armed from `nowMs` (queue retries, ports/claim-pump.ts) stay right
   * there, and on a movable clock they are re-armed when it jumps.
   */
  onJump?(listener: () => void): () => void;
}

/** The real wall clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock tests can move: starts at the wall clock, shifted by `offsetMs`; moving it tells `onJump` listeners. */
export class AdjustableClock implements Clock {
  private offset = 0;
  private readonly listeners = new Set<() => void>();

  /** The shift from the wall clock, ms; setting it moves the clock. */
  get offsetMs(): number {
    return this.offset;
  }
  set offsetMs(ms: number) {
    this.offset = ms;
    for (const listener of [...this.listeners]) listener();
  }

  nowMs(): number {
    return Date.now() + this.offset;
  }

  /** Moves time forward by `seconds`. */
  advance(seconds: number): void {
    this.offsetMs = this.offset + seconds * 1000;
  }

  onJump(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}

/** Unix seconds of `clock`. */
export function nowSeconds(clock: Clock): number {
  return Math.floor(clock.nowMs() / 1000);
}
