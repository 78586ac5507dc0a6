/**
 * The Clock port: every time-dependent rule (token deadlines, X-Qiniu-Date window, putTime, deleteAfterDays)
 * asks this, so tests can move time without sleeping.
 */
export interface Clock {
  /** Current time in milliseconds since the Unix epoch. */
  nowMs(): number;
}

/** The real wall clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock tests can move: starts at the wall clock, shifted by `offsetMs`. */
export class AdjustableClock implements Clock {
  offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
  /** Moves time forward by `seconds`. */
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}

/** Unix seconds of `clock`. */
export function nowSeconds(clock: Clock): number {
  return Math.floor(clock.nowMs() / 1000);
}
