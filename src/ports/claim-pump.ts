/**
 * The claim loop of a durable queue's worker (async fetch tasks, event deliveries): claims due items while fewer
 * than `concurrency` run, runs each, and sleeps on one timer armed for the earliest item not due yet (retries with
 * back-off, on the Clock). No polling: the owner calls `wake()` when something may have become due (a new item, a
 * finished one); a finished run wakes it by itself, and so does a jump of the Clock (`Clock.onJump`: a test moved
 * it), so retries whose back-off the new time has passed run at once and tests never wait for a back-off. Re-entrant wakes make the loop run once more instead of racing
 * for claims. An item claimed while stopping is handed back untouched.
 */
import type { Clock } from './clock.js';

/** What the loop needs of a queue: claim the oldest due item, hand one back, and when the next one is due (ms). */
export interface ClaimSource<T> {
  claim(nowMs: number): Promise<T | undefined>;
  release(id: string, nowMs: number): Promise<unknown>;
  nextRunMs(): Promise<number | undefined>;
}

export interface ClaimPumpOptions<T> {
  source: ClaimSource<T>;
  clock: Clock;
  /** Items run at the same time (≥ 1). */
  concurrency: number;
  /** Runs one claimed item; its rejection goes to `onError`. */
  run: (item: T) => Promise<void>;
  /** A failed run (`id`) or a failure of the loop itself (no id). */
  onError: (err: unknown, id?: string) => void;
  /** Called when a run has ended, before the loop looks for more. */
  onSettled?: (id: string) => void;
}

/** Longest timer delay Node accepts (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class ClaimPump<T extends { id: string }> {
  /** Runs in progress by item id. */
  readonly active = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private offJump: (() => void) | undefined;
  private started = false;
  private stopping = false;
  private pumpingNow = false;
  private again = false;

  constructor(private readonly opts: ClaimPumpOptions<T>) {}

  /** Whether the loop is claiming right now. */
  get pumping(): boolean {
    return this.pumpingNow;
  }

  /** Starts taking items. */
  start(): void {
    this.started = true;
    this.offJump ??= this.opts.clock.onJump?.(() => this.wake());
    this.wake();
  }

  /** Looks for due items (call on everything that may have made one due). */
  wake(): void {
    if (!this.started || this.stopping) return;
    this.pump().catch((err: unknown) => this.opts.onError(err));
  }

  /**
   * Looks whether an item is due (a read: `nextRunMs`) and wakes only then; for wake-ups that may be spurious
   * (another process wrote something), so idle processes do not take the write lock for nothing.
   */
  poke(): void {
    if (!this.started || this.stopping || this.pumpingNow || this.active.size >= this.opts.concurrency) return;
    this.opts.source
      .nextRunMs()
      .then((next) => {
        if (next !== undefined && next <= this.opts.clock.nowMs()) this.wake();
      })
      .catch((err: unknown) => this.opts.onError(err));
  }

  /** Stops taking items and clears the timer; runs in progress go on (their owner decides what to do with them). */
  stop(): void {
    this.stopping = true;
    this.offJump?.();
    this.offJump = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async pump(): Promise<void> {
    if (this.pumpingNow) {
      this.again = true;
      return;
    }
    this.pumpingNow = true;
    try {
      do {
        this.again = false;
        while (!this.stopping && this.active.size < this.opts.concurrency) {
          const item = await this.opts.source.claim(this.opts.clock.nowMs());
          if (!item) break;
          if (this.stopping) {
            // stop() began while the claim was in flight: hand the item back untouched.
            await this.opts.source.release(item.id, this.opts.clock.nowMs()).catch(() => undefined);
            break;
          }
          this.launch(item);
        }
        if (!this.stopping) await this.armTimer();
      } while (this.again && !this.stopping);
    } finally {
      this.pumpingNow = false;
    }
  }

  /** One timer for the earliest waiting item that is not due yet (retries). */
  private async armTimer(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.active.size >= this.opts.concurrency) return; // a finishing run wakes the loop
    const next = await this.opts.source.nextRunMs();
    if (next === undefined || this.stopping) return;
    const delay = Math.min(Math.max(next - this.opts.clock.nowMs(), 1), MAX_TIMER_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.wake();
    }, delay);
    this.timer.unref();
  }

  private launch(item: T): void {
    const run = this.opts
      .run(item)
      .catch((err: unknown) => this.opts.onError(err, item.id))
      .finally(() => {
        this.active.delete(item.id);
        this.opts.onSettled?.(item.id);
        this.wake();
      });
    this.active.set(item.id, run);
  }
}
