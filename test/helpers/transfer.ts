/**
 * Helpers for the transfer CLI tests: the real `granary` command (bin/granary.js, dist/ built by
 * test/global-setup.ts) run as a subprocess with its own GRANARY_CONFIG_DIR, awaited without blocking the event loop
 * (the servers run in the test process), and local trees of files with their etags.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, cleanEnv, REPO_ROOT } from './cli.js';

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A running `granary` subprocess: output collected; `waitFor` resolves when stdout matches. */
export class CliProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly done: Promise<RunResult>;
  private waiters: Array<{ test: (out: string) => boolean; resolve: () => void }> = [];

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      this.stdout += c;
      this.waiters = this.waiters.filter((w) => {
        if (!w.test(this.stdout)) return true;
        w.resolve();
        return false;
      });
    });
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.stderr += c));
    this.done = new Promise((resolve) =>
      this.child.once('close', (status, signal) => resolve({ status, signal, stdout: this.stdout, stderr: this.stderr })),
    );
  }

  /** Resolves once `test(stdout)` holds; rejects if the process ends first. */
  waitFor(test: (out: string) => boolean): Promise<void> {
    if (test(this.stdout)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ test, resolve });
      void this.done.then((r) => reject(new Error(`CLI ended (${r.status}) before the awaited output\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr}`)));
    });
  }
}

/** The CLI bound to one configuration directory (call `TransferCli.create` in beforeAll). */
export class TransferCli {
  private constructor(readonly configDir: string) {}

  static create(configDir: string): Promise<TransferCli> {
    return Promise.resolve(new TransferCli(configDir));
  }

  env(extra: Record<string, string> = {}): Record<string, string> {
    return { GRANARY_CONFIG_DIR: this.configDir, ...extra };
  }

  start(args: string[]): CliProcess {
    return new CliProcess(args, this.env());
  }

  run(args: string[]): Promise<RunResult> {
    return this.start(args).done;
  }

  /** Runs with `--json` and answers the parsed lines (and the raw result). */
  async json(args: string[]): Promise<RunResult & { events: Array<Record<string, unknown>> }> {
    const r = await this.run([...args, '--json']);
    const events = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { ...r, events };
  }
}

/** The `summary` event of a JSON run. */
export function summaryOf(events: Array<Record<string, unknown>>): Record<string, unknown> & { copied: number; skipped: number; failed: number } {
  const s = events.find((e) => e.event === 'summary');
  if (!s) throw new Error(`no summary in ${JSON.stringify(events.slice(-3))}`);
  return s as Record<string, unknown> & { copied: number; skipped: number; failed: number };
}

/** Writes `count` small files of random bytes (`size` each) under `dir/<sub>/`, spread over 10 folders. */
export async function writeSmallFiles(dir: string, count: number, size: number): Promise<void> {
  for (let d = 0; d < 10; d++) await mkdir(join(dir, `d${d}`), { recursive: true });
  await Promise.all(Array.from({ length: count }, (_, i) => writeFile(join(dir, `d${i % 10}`, `f${String(i).padStart(4, '0')}.bin`), randomBytes(size))));
}
