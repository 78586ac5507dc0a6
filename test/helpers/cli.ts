/**
 * Helpers for testing the `granary` command as a subprocess (bin/granary.js → dist/cli.js, built by
 * test/global-setup.ts when older than src/).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import { setUcHost } from './server.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/granary.js', import.meta.url));

/** The test process environment without any GRANARY_* setting (so keys get generated). */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GRANARY_')) env[k] = v;
  return { ...env, ...extra };
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/granary.js <args>` to completion. */
export function runCli(args: string[], env: Record<string, string> = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, env: cleanEnv(env), encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs a program to completion without blocking this process (a server the program calls may run in it): its exit
 * status and output.
 */
export async function runAsync(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliResult> {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const address = srv.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  srv.close();
  await once(srv, 'close');
  return port;
}

/** A `granary serve` subprocess whose stdout is collected and can be awaited for a pattern. */
export class ServeProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  private waiters: Array<{ re: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /**
   * `options.env`: GRANARY_* settings added to the child's environment (e.g. a fixed key pair, limits);
   * `options.nodeArgs`: node flags before the entry (e.g. `--initial-old-space-size=256`).
   * One process (GRANARY_WORKERS=1) unless `options.env` asks for workers (test/e2e/workers.test.ts covers them).
   */
  constructor(
    readonly dataDir: string,
    readonly port: number,
    options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
  ) {
    this.child = spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, 'serve', '--data-dir', dataDir, '--port', String(port), '--host', '127.0.0.1'], {
      cwd: REPO_ROOT,
      env: cleanEnv({ GRANARY_LOG_LEVEL: 'info', GRANARY_CONSOLE_PORT: '0', GRANARY_S3_PORT: '0', GRANARY_WORKERS: '1', ...options.env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      this.check();
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
  }

  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  get url(): string {
    return `http://${this.host}`;
  }

  /** Resolves with the first match of `re` in stdout (already printed or still to come); rejects on exit. */
  waitFor(re: RegExp): Promise<RegExpMatchArray> {
    const m = this.stdout.match(re);
    if (m) return Promise.resolve(m);
    return new Promise((resolve, reject) => {
      this.waiters.push({ re, resolve });
      void this.exited.then(({ code }) =>
        reject(new Error(`granary serve exited (${code}) before printing ${re}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)),
      );
    });
  }

  /** Resolves once the server listens. */
  ready(): Promise<RegExpMatchArray> {
    return this.waitFor(/"msg":"granary listening"/);
  }

  private check(): void {
    this.waiters = this.waiters.filter((w) => {
      const m = this.stdout.match(w.re);
      if (m) w.resolve(m);
      return !m;
    });
  }

  /** Sends SIGKILL if still running (cleanup after a failed test). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** SDK objects for a server at `host` (static Zone configuration) with the given key pair. */
export function sdkFor(host: string, accessKey: string, secretKey: string) {
  setUcHost(host);
  const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
  const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
  const mac = new qiniu.auth.digest.Mac(accessKey, secretKey);
  return {
    mac,
    config,
    bucketManager: new qiniu.rs.BucketManager(mac, config),
    uploadToken: (scope: string) => new qiniu.rs.PutPolicy({ scope }).uploadToken(mac),
  };
}
