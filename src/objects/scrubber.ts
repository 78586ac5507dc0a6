/**
 * The background scrubber: runs a scrub pass (scrub.ts) over everything stored every
 * GRANARY_SCRUB_INTERVAL_DAYS days (from the start of one pass to the start of the next), reading at most
 * GRANARY_SCRUB_BYTES_PER_SEC, so data nobody reads is checked too. Its state (settings `scrub`, JSON) survives
 * restarts: an interrupted pass resumes at its cursor, and the first start on a data dir begins a pass at once
 * (which also records checksums for blobs stored before checksums existed).
 *
 * Time comes from the Clock port (tests move it); the loop wakes at least hourly to look, or at `wake()`.
 * With several worker processes the loop runs in the one holding the `scrubber` lease (workers/singletons.ts):
 * `start` and `stop` may alternate as the lease comes and goes; the saved cursor carries the pass across.
 */
import type { Granary } from '../context.js';
import type { ScrubStatus, ScrubStatusSource } from '../ports/scrub-status.js';
import { scrubPass, type ScrubCursor, type ScrubProgress, type ScrubResult } from './scrub.js';

const SETTING = 'scrub';
const DAY_MS = 86_400_000;
/** Longest real wait between two looks at whether a pass is due, ms. */
const MAX_NAP_MS = 3_600_000;
/** Pause after a failed pass, ms. */
const RETRY_MS = 60_000;

/** What is saved between runs. Times in ms since the epoch (Clock). */
interface SavedState {
  /** Start of the pass in progress, if any, with its cursor and counts. */
  current?: { startedMs: number; cursor: ScrubCursor; progress: ScrubProgress };
  /** The last complete pass. */
  last?: { startedMs: number; finishedMs: number; blobs: number; bytes: number; upgraded: number; corrupt: number };
}

export class Scrubber implements ScrubStatusSource {
  private saved: SavedState = {};
  private running = false;
  private stopped = false;
  private abort = new AbortController();
  private nap: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  private loop: Promise<void> | undefined;
  private passWaiters: Array<(r: ScrubResult) => void> = [];

  /** `bytesPerSecond` 0 disables the scrubber (start() does nothing). */
  constructor(
    private readonly g: Granary,
    private readonly opts: { bytesPerSecond: number; intervalDays: number },
  ) {}

  /** Reads the saved state (for `status` in a process that does not run the loop). */
  async load(): Promise<void> {
    const text = await this.g.meta.getSetting(SETTING);
    if (text) {
      try {
        this.saved = JSON.parse(text) as SavedState;
      } catch {
        this.saved = {};
      }
    }
  }

  /** Loads the saved state and starts the loop in the background (again after a `stop`). */
  async start(): Promise<void> {
    await this.loop;
    this.stopped = false;
    this.abort = new AbortController();
    await this.load();
    if (this.opts.bytesPerSecond <= 0) return;
    this.loop = this.run().catch((err: unknown) => this.g.log.error({ err }, 'the scrubber stopped'));
  }

  /** Stops the loop; a pass in progress keeps its cursor for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.wake();
    await this.loop;
  }

  /** Looks again now whether a pass is due (after the clock moved, in tests). */
  wake(): void {
    if (!this.nap) return;
    clearTimeout(this.nap.timer);
    this.nap.resolve();
  }

  /** Resolves with the result of the next pass that completes. */
  nextPass(): Promise<ScrubResult> {
    return new Promise((resolve) => this.passWaiters.push(resolve));
  }

  /** The current state (for /health/ready). */
  status(): ScrubStatus {
    const iso = (ms: number): string => new Date(ms).toISOString();
    const out: ScrubStatus = {
      enabled: this.opts.bytesPerSecond > 0,
      running: this.running,
      bytesPerSecond: this.opts.bytesPerSecond,
      intervalDays: this.opts.intervalDays,
    };
    const { current, last } = this.saved;
    if (current) out.current = { startedAt: iso(current.startedMs), blobs: current.progress.blobs, bytes: current.progress.bytes };
    if (last) {
      const { startedMs, finishedMs, ...counts } = last;
      out.lastPass = { startedAt: iso(startedMs), finishedAt: iso(finishedMs), ...counts };
      if (out.enabled && !current) out.nextPassAt = iso(startedMs + this.opts.intervalDays * DAY_MS);
    }
    return out;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const now = this.g.clock.nowMs();
      const dueMs = this.saved.current || !this.saved.last ? now : this.saved.last.startedMs + this.opts.intervalDays * DAY_MS;
      if (dueMs <= now) {
        try {
          await this.pass();
          continue;
        } catch (err) {
          // A failing store (disk, database): logged, retried after a pause.
          this.g.log.error({ err }, 'a scrub pass failed; retrying in a minute');
          await this.sleep(RETRY_MS);
          continue;
        }
      }
      await this.sleep(Math.min(dueMs - now, MAX_NAP_MS));
    }
  }

  /** Waits `ms` (real time) or until `wake()`. */
  private async sleep(ms: number): Promise<void> {
    if (this.stopped) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.nap = { timer, resolve };
    });
    this.nap = undefined;
  }

  private async save(): Promise<void> {
    await this.g.meta.setSetting(SETTING, JSON.stringify(this.saved));
  }

  private async pass(): Promise<void> {
    this.saved.current ??= { startedMs: this.g.clock.nowMs(), cursor: { phase: 'legacy' }, progress: { blobs: 0, bytes: 0, upgraded: 0 } };
    const current = this.saved.current;
    this.running = true;
    let result: ScrubResult;
    try {
      result = await scrubPass(this.g, {
        bytesPerSecond: this.opts.bytesPerSecond,
        signal: this.abort.signal,
        cursor: current.cursor,
        progress: current.progress,
        onCheckpoint: async (cursor, progress) => {
          current.cursor = cursor;
          current.progress = { ...progress };
          await this.save();
        },
      });
    } finally {
      this.running = false;
    }
    current.cursor = result.cursor;
    current.progress = { blobs: result.blobs, bytes: result.bytes, upgraded: result.upgraded };
    if (result.complete) {
      const { blobs, bytes, upgraded } = result;
      this.saved = { last: { startedMs: current.startedMs, finishedMs: this.g.clock.nowMs(), blobs, bytes, upgraded, corrupt: result.corrupt.length } };
      // A clean pass is routine (debug; the console and /metrics show the last pass); corruption is an error.
      const log = result.corrupt.length > 0 ? this.g.log.error.bind(this.g.log) : this.g.log.debug.bind(this.g.log);
      log({ blobs, bytes, upgraded, corrupt: result.corrupt.slice(0, 100) }, `scrub pass finished: ${result.corrupt.length} corrupt entries`);
    }
    await this.save();
    if (result.complete) for (const w of this.passWaiters.splice(0)) w(result);
  }
}
