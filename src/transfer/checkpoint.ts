/**
 * The checkpoint of `granary migrate`: an append-only JSON-lines file, one line per step, so a run killed at any
 * moment (even SIGKILL: appended lines are in the kernel's page cache) resumes where it stopped.
 *
 * Lines: `{"v":1,"src","dst"}` (header, first line); `{"k":key,"s":"task","id":id}` an async fetch was submitted
 * (a resumed run polls that task instead of submitting again); `{"k":key,"s":"done","h":hash,"via":…}` the
 * destination holds the key with that etag; `{"k":key,"s":"failed","e":message}` (retried by the next run).
 * Default file: `<config dir>/migrate/<sha1 of src and dst>.jsonl`.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TransferError } from './errors.js';

/** The state of one key as the checkpoint knows it. */
export interface KeyState {
  /** Etag at the destination once done. */
  done?: string;
  /** Async-fetch task id, when one was submitted. */
  task?: string;
}

/** The default checkpoint file of a migration. */
export function defaultCheckpoint(configDir: string, src: string, dst: string): string {
  return join(configDir, 'migrate', `${createHash('sha1').update(`${src}\n${dst}`).digest('hex').slice(0, 16)}.jsonl`);
}

export class Checkpoint {
  private readonly keys = new Map<string, KeyState>();
  /** Lines read from an earlier run. */
  resumed = 0;

  private constructor(readonly file: string) {}

  /**
   * Opens (or creates) the checkpoint of `src` → `dst` at `file`. An existing file of another migration throws;
   * `fresh` starts over.
   */
  static open(file: string, src: string, dst: string, fresh: boolean): Checkpoint {
    const cp = new Checkpoint(file);
    let text = '';
    if (!fresh) {
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new TransferError(`cannot read checkpoint ${file}: ${(err as Error).message}`);
      }
    }
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    if (lines.length > 0) {
      let header: { src?: string; dst?: string };
      try {
        header = JSON.parse(lines[0]!) as { src?: string; dst?: string };
      } catch {
        throw new TransferError(`checkpoint ${file} is not a migrate checkpoint (use --fresh to start over)`);
      }
      if (header.src !== src || header.dst !== dst) {
        throw new TransferError(`checkpoint ${file} belongs to ${header.src} → ${header.dst} (use --fresh or another --checkpoint)`);
      }
      for (const line of lines.slice(1)) {
        let rec: { k?: string; s?: string; id?: string; h?: string };
        try {
          rec = JSON.parse(line) as typeof rec;
        } catch {
          continue; // a line cut by the kill: ignored
        }
        if (typeof rec.k !== 'string') continue;
        const st = cp.keys.get(rec.k) ?? {};
        if (rec.s === 'task' && rec.id) st.task = rec.id;
        else if (rec.s === 'done') st.done = rec.h ?? '';
        else if (rec.s === 'failed') {
          delete st.done;
          delete st.task;
        }
        cp.keys.set(rec.k, st);
        cp.resumed++;
      }
    } else {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      writeFileSync(file, `${JSON.stringify({ v: 1, src, dst, started: new Date().toISOString() })}\n`, { mode: 0o600 });
    }
    return cp;
  }

  /** What the checkpoint knows of `key` (an empty state when nothing). */
  state(key: string): KeyState {
    return this.keys.get(key) ?? {};
  }

  private append(rec: Record<string, unknown>): void {
    appendFileSync(this.file, `${JSON.stringify(rec)}\n`);
  }

  task(key: string, id: string): void {
    this.keys.set(key, { ...this.state(key), task: id });
    this.append({ k: key, s: 'task', id });
  }

  done(key: string, hash: string, via: string): void {
    this.keys.set(key, { done: hash });
    this.append({ k: key, s: 'done', h: hash, via });
  }

  failed(key: string, error: string): void {
    this.keys.set(key, {});
    this.append({ k: key, s: 'failed', e: error });
  }
}
