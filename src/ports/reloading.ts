/**
 * An in-memory view of store data that synchronous code reads (request routing, signature checks): loaded at
 * start, reloaded after a change made by this process, and whenever `version()` moves: it is polled every
 * `pollMs` (default 500 ms) and is a counter the store bumps on every change of the view's rows by any process
 * (MetaStore.changeCount: another worker process, the CLI on the same data dir), so such a change is seen here
 * within about `pollMs`. Without `version`, the view is reloaded every `pollMs` instead.
 */
export abstract class ReloadingView {
  private timer: NodeJS.Timeout | undefined;
  private seen: number | undefined;
  private polling = false;
  /** When the view last knew it was current (a load, or a look at `version()` that found it unchanged), Unix ms. */
  protected syncedMs = 0;
  /** Whether `start` ran (the view polls); a view only loaded (`reload`, offline CLI contexts) never goes stale. */
  protected get polls(): boolean {
    return this.timer !== undefined;
  }

  constructor(
    private readonly version?: () => Promise<number>,
    private readonly pollMs = 500,
  ) {}

  /** Reads the data from the store and swaps the in-memory view. */
  abstract reload(): Promise<void>;

  /** Loads once, then looks every `pollMs` (the timer never keeps the process alive). */
  async start(): Promise<void> {
    this.seen = await this.version?.();
    await this.reload();
    this.syncedMs = Date.now();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const before = Date.now();
      if (this.version) {
        const v = await this.version();
        if (v !== this.seen) {
          await this.reload();
          this.seen = v;
        }
      } else {
        await this.reload();
      }
      this.syncedMs = before;
    } catch {
      // the next look retries
    } finally {
      this.polling = false;
    }
  }

  /**
   * Looks at `version()` now and reloads when it moved (a caller that must not wait for the next poll: a key
   * unknown here may have been created by another process a moment ago). True when it reloaded.
   */
  async refresh(): Promise<boolean> {
    if (!this.version) return false;
    const before = Date.now();
    const v = await this.version();
    if (v === this.seen) {
      this.syncedMs = Math.max(this.syncedMs, before);
      return false;
    }
    await this.reload();
    this.seen = v;
    this.syncedMs = before;
    return true;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
