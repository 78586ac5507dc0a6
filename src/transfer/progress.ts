/**
 * Progress and reports of transfer commands, in three modes:
 * - `bar` (default): a cli-progress bar on stderr — bytes, percentage, files, rate, ETA — when stderr is a
 *   terminal; failures as lines on stderr; a summary line on stdout at the end.
 * - `quiet` (`--quiet`): only failures (stderr) and the summary line.
 * - `json` (`--json`): JSON lines on stdout — `{"event":"file","key","action","bytes","via"?,"error"?,"reason"?,
 *   "resumedBytes"?}` per
 *   object as it ends, `{"event":"progress",…}` once a second, `{"event":"summary",…}` at the end.
 * Byte counts in bytes, rates in bytes per second, times in seconds. Two byte counts: bytes sent or received
 * (`bytes`, the only ones in rates and the ETA) and bytes passed over — skipped files, parts of a resumed upload,
 * the partial file of a resumed download (`skippedBytes`) — which move the bar but are no work. The ETA is shown
 * only once a rate is known (after a second with bytes moving); the last frame is drawn before the summary.
 */
import cliProgress from 'cli-progress';

export type ReportMode = 'bar' | 'quiet' | 'json';

/** What happened to one object (or local file). `via`: how bytes moved (form, multipart, fetch, stream, get). */
export interface Outcome {
  key: string;
  action: 'copied' | 'skipped' | 'failed' | 'deleted' | 'would-copy' | 'would-delete';
  bytes: number;
  via?: string;
  error?: string;
  reason?: string;
  /** Bytes of a resumed multipart upload that were not sent again. */
  resumedBytes?: number;
}

/** Counts at the end. */
export interface Summary {
  command: string;
  copied: number;
  skipped: number;
  failed: number;
  deleted: number;
  planned: number;
  bytes: number;
  seconds: number;
  /** Bytes skipped or resumed (not sent again). */
  skippedBytes: number;
  /** Bytes sent or received per second over the whole run (skipped bytes not counted). */
  rate: number;
  failures: Array<{ key: string; error: string }>;
}

/** Human-readable byte count (KiB/MiB/GiB). */
export function humanBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

/** A duration as `1h02m`, `3m05s` or `42s`. */
export function humanSeconds(total: number): string {
  const t = Math.max(0, Math.round(total));
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

export class Reporter {
  private totalFiles = 0;
  private totalBytes = 0;
  private doneFiles = 0;
  /** Bytes sent or received. */
  private moved = 0;
  /** Bytes passed over (skipped, resumed). */
  private passedOver = 0;
  private readonly started = performance.now();
  private readonly counts = { copied: 0, skipped: 0, failed: 0, deleted: 0, planned: 0 };
  private readonly failures: Array<{ key: string; error: string }> = [];
  private readonly multi: cliProgress.MultiBar | undefined;
  private readonly bar: cliProgress.SingleBar | undefined;
  private readonly ticker: NodeJS.Timeout | undefined;

  constructor(
    readonly command: string,
    readonly mode: ReportMode,
  ) {
    if (mode === 'bar' && process.stderr.isTTY) {
      this.multi = new cliProgress.MultiBar(
        {
          // Short enough for an 80-column terminal (a longer line is cut at the terminal's width).
          format: `${command} {bar} {percentage}% {moved}/{size} {files}/{filesTotal} files {rate}/s ETA {eta}`,
          barsize: 20,
          stream: process.stderr,
          hideCursor: true,
          clearOnComplete: false,
          etaBuffer: 50,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar = this.multi.create(1, 0, this.payload());
    }
    if (mode === 'json') {
      this.ticker = setInterval(() => this.emit({ event: 'progress', ...this.state() }), 1000);
      this.ticker.unref();
    }
  }

  private state(): Record<string, number> {
    const seconds = (performance.now() - this.started) / 1000;
    return {
      bytes: this.moved,
      skippedBytes: this.passedOver,
      totalBytes: this.totalBytes,
      files: this.doneFiles,
      totalFiles: this.totalFiles,
      rate: seconds > 0 ? Math.round(this.moved / seconds) : 0,
    };
  }

  private payload(): Record<string, string | number> {
    const s = this.state();
    const seconds = (performance.now() - this.started) / 1000;
    const left = Math.max(0, this.totalBytes - this.moved - this.passedOver);
    const eta = left === 0 ? '0s' : seconds >= 1 && s.rate! > 0 ? humanSeconds(left / s.rate!) : '--';
    return { moved: humanBytes(s.bytes! + s.skippedBytes!), size: humanBytes(s.totalBytes!), files: s.files!, filesTotal: s.totalFiles!, rate: humanBytes(s.rate!), eta };
  }

  private redraw(): void {
    if (!this.bar) return;
    this.bar.setTotal(Math.max(1, this.totalBytes));
    this.bar.update(Math.min(this.moved + this.passedOver, Math.max(1, this.totalBytes)), this.payload());
  }

  private emit(obj: Record<string, unknown>): void {
    process.stdout.write(`${JSON.stringify(obj)}\n`);
  }

  /** Adds work found (files and bytes) to the totals. */
  addTotal(files: number, bytes: number): void {
    this.totalFiles += files;
    this.totalBytes += bytes;
    this.redraw();
  }

  /** Bytes sent or received (negative when a transfer starts over). */
  bytes(n: number): void {
    this.moved += n;
    this.redraw();
  }

  /** Bytes passed over: a skipped file, the parts of a resumed upload, a resumed download's partial file. */
  passed(n: number): void {
    this.passedOver += n;
    this.redraw();
  }

  /** A line of information (stderr in bar and quiet modes, a `note` event in JSON mode). */
  note(text: string): void {
    if (this.mode === 'json') this.emit({ event: 'note', message: text });
    else if (this.multi) this.multi.log(`${text}\n`);
    else if (this.mode === 'bar') process.stderr.write(`${text}\n`);
  }

  /** One object ended. */
  done(o: Outcome): void {
    this.doneFiles += 1;
    if (o.action === 'copied') this.counts.copied++;
    else if (o.action === 'skipped') this.counts.skipped++;
    else if (o.action === 'failed') {
      this.counts.failed++;
      this.failures.push({ key: o.key, error: o.error ?? 'failed' });
    } else if (o.action === 'deleted') this.counts.deleted++;
    else this.counts.planned++;
    if (this.mode === 'json') this.emit({ event: 'file', ...o });
    else if (o.action === 'failed') {
      const line = `failed: ${o.key}: ${o.error ?? ''}`;
      if (this.multi) this.multi.log(`${line}\n`);
      else process.stderr.write(`${line}\n`);
    } else if (o.action === 'would-copy' || o.action === 'would-delete') {
      process.stdout.write(`${o.action === 'would-copy' ? 'copy' : 'delete'}\t${o.key}${o.reason ? `\t(${o.reason})` : ''}\n`);
    }
    this.redraw();
  }

  /** Stops the bar and prints the summary (and `extra` fields in JSON mode); returns it. */
  finish(extra: Record<string, unknown> = {}): Summary {
    if (this.ticker) clearInterval(this.ticker);
    // The last frame: final counts and ETA drawn, then the bar stopped (it renders once more and ends its line).
    this.redraw();
    this.multi?.update();
    this.multi?.stop();
    const seconds = (performance.now() - this.started) / 1000;
    const summary: Summary = {
      command: this.command,
      ...this.counts,
      bytes: this.moved,
      skippedBytes: this.passedOver,
      seconds: Math.round(seconds * 1000) / 1000,
      rate: seconds > 0 ? Math.round(this.moved / seconds) : 0,
      failures: this.failures,
    };
    if (this.mode === 'json') this.emit({ event: 'summary', ...summary, ...extra });
    else {
      const parts = [`${summary.copied} copied`, `${summary.skipped} skipped`, `${summary.failed} failed`];
      if (summary.deleted) parts.push(`${summary.deleted} deleted`);
      if (summary.planned) parts.push(`${summary.planned} planned (dry run)`);
      process.stdout.write(
        `${this.command}: ${parts.join(', ')}; ${humanBytes(summary.bytes)} in ${summary.seconds.toFixed(1)} s (${humanBytes(summary.rate)}/s)` +
          `${summary.skippedBytes > 0 ? `; ${humanBytes(summary.skippedBytes)} skipped or resumed` : ''}\n`,
      );
    }
    return summary;
  }
}
