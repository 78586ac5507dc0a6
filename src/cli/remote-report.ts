/**
 * Output of the remote entry commands (`stat`, `rm`, `cp`, `mv`, `chgm`, `chtype`, `fetch` on a remote), one
 * result per key, in two modes:
 * - text: a line per success on stdout (`deleted qiniu:photos/a.jpg`, the entry as a JSON object for stat, like the offline stat …), a line per
 *   failure on stderr (`failed: <key>: <reason> (<code>)`); after a batch (`--from`), a summary on stderr.
 * - `--json`: JSON lines on stdout, `{"event":"result","op","bucket","key","code"[,"error"][,"to"][,"entry"]}` per
 *   key and `{"event":"summary","op","total","ok","failed"}` at the end (docs/reference/cli.md).
 * Exit status 1 when any key failed.
 */
import type { OpResult } from '../transfer/batch.js';

/** What a result is about: an EntryOp, or a fetch/prefetch of one key. */
export interface ReportedOp {
  op: string;
  bucket: string;
  key: string;
  to?: { bucket: string; key: string };
  value?: string;
}

/** The text line of one success. */
function okLine(o: ReportedOp, r: OpResult, remote: string): string {
  const at = `${remote}:${o.bucket}/${o.key}`;
  switch (o.op) {
    case 'stat':
      return JSON.stringify({ key: o.key, ...r.data });
    case 'rm':
      return `deleted ${at}`;
    case 'cp':
    case 'mv':
      return `${at} -> ${remote}:${o.to!.bucket}/${o.to!.key}`;
    case 'chgm':
      return `${at}: MIME type ${o.value ?? ''}`;
    case 'chtype':
      return `${at}: storage class ${o.value ?? ''}`;
    case 'fetch':
      return `${at}\t${String(r.data?.fsize)}\t${String(r.data?.hash)}`;
    default:
      return `${o.op} ${at}`;
  }
}

export class OpReport {
  total = 0;
  ok = 0;
  failed = 0;

  constructor(
    readonly op: string,
    readonly remote: string,
    readonly json: boolean,
    /** Print a summary at the end in text mode (batches). */
    readonly summarise = false,
  ) {}

  private out(obj: Record<string, unknown>): void {
    process.stdout.write(`${JSON.stringify(obj)}\n`);
  }

  /** One key's result. */
  result(o: ReportedOp, r: OpResult): void {
    this.total += 1;
    if (r.code === 200) this.ok += 1;
    else this.failed += 1;
    if (this.json) {
      this.out({
        event: 'result',
        op: o.op,
        bucket: o.bucket,
        key: o.key,
        code: r.code,
        ...(r.code !== 200 ? { error: r.error ?? 'failed' } : {}),
        ...(o.to ? { to: { bucket: o.to.bucket, key: o.to.key } } : {}),
        ...((o.op === 'stat' || o.op === 'fetch') && r.code === 200 ? { entry: { key: o.key, ...r.data } } : {}),
      });
      return;
    }
    if (r.code === 200) process.stdout.write(`${okLine(o, r, this.remote)}\n`);
    else process.stderr.write(`failed: ${o.key}: ${r.error ?? 'failed'} (${r.code})\n`);
  }

  /** The summary (JSON mode, or text mode for batches); exit status 1 when anything failed. */
  finish(): void {
    if (this.json) this.out({ event: 'summary', op: this.op, total: this.total, ok: this.ok, failed: this.failed });
    else if (this.summarise) process.stderr.write(`${this.op}: ${this.ok} ok, ${this.failed} failed of ${this.total}\n`);
    if (this.failed > 0) process.exitCode = 1;
  }
}
