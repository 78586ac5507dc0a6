/**
 * An in-memory view of store data that synchronous code reads (request routing, signature checks): loaded at
 * start, reloaded after a change made by this process, and every `refreshSeconds` so changes made by another
 * process (the CLI on the same data dir) arrive within that time.
 */
export abstract class ReloadingView {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly refreshSeconds: number) {}

  /** Reads the data from the store and swaps the in-memory view. */
  abstract reload(): Promise<void>;

  /** Loads once, then refreshes every `refreshSeconds` (the timer never keeps the process alive). */
  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => void this.reload().catch(() => undefined), this.refreshSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
