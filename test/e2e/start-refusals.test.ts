/**
 * Starts that must fail, and fail clearly (`granary serve` as a subprocess, bin/granary.js):
 * - a busy API port or console port, with GRANARY_WORKERS=1 and =2: exit 1, the listener and the address in the
 *   error, no key pair printed, no credentials.json written (src/listen-error.ts, main.ts, workers/primary.ts);
 * - a meta.db that is not a database, a credentials.json cut short or without keys: exit 1 naming the file and the
 *   reason; the credentials file is left as it was (auth/keys.ts, store/open.ts);
 * - a second server on a data dir in use, single process or workers: exit 1 naming the data dir and the pid holding
 *   it, the first server's fop-cache temp files untouched; the CLI's offline commands still work beside it; once
 *   the holder is SIGKILLed a new server starts (workers/data-dir-lock.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { AK, SK } from '../helpers/server.js';
import { freePort, spawnServer } from '../helpers/subprocess.js';
import { waitUntil } from '../helpers/upload.js';

interface Run {
  code: number | string;
  output: string;
}

/** Runs `granary <args>` to its end (at most 60 s) with `env` over the test's environment (no GRANARY_* of its own). */
function granary(args: string[], env: Record<string, string>): Promise<Run> {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GRANARY_')) base[k] = v;
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...base, GRANARY_HOST: '127.0.0.1', GRANARY_LOG_LEVEL: 'warn', GRANARY_S3_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, output });
    }),
  );
}

/** GET over a connection of its own (the primary hands each new connection to the least busy worker). */
function getFresh(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** A TCP listener holding 127.0.0.1:`port` (what makes it busy). */
async function occupy(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

// Every case has its own data dir and ports (the busy one is shared on purpose): they run concurrently, as they
// mostly wait on subprocesses starting and stopping.
describe.concurrent('start refusals', () => {
  let root = '';
  let busy: { port: number; close: () => Promise<void> };
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'granary-refusals-'));
    busy = await occupy();
  });
  afterAll(async () => {
    await busy?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  describe.each(['1', '2'])('GRANARY_WORKERS=%s', (workers) => {
    it.each([
      ['API', 'GRANARY_PORT', 'the Kodo API listener (GRANARY_PORT)'],
      ['console', 'GRANARY_CONSOLE_PORT', 'the console listener (GRANARY_CONSOLE_PORT)'],
      ['S3', 'GRANARY_S3_PORT', 'the S3 listener (GRANARY_S3_PORT)'],
    ])('a busy %s port: exit 1 with the address, no key pair printed or kept', async (_what, variable, listener) => {
      const dataDir = join(root, `busy-${variable}-${workers}`);
      const env = { GRANARY_DATA_DIR: dataDir, GRANARY_WORKERS: workers, GRANARY_PORT: String(await freePort()), GRANARY_CONSOLE_PORT: String(await freePort()), GRANARY_S3_PORT: String(await freePort()) };
      const r = await granary(['serve'], { ...env, [variable]: String(busy.port) });
      expect(r.code, r.output).toBe(1);
      expect(r.output).toContain(`granary: ${listener} cannot listen on 127.0.0.1:${busy.port}: address already in use (EADDRINUSE)`);
      expect(r.output).not.toMatch(/AccessKey|SecretKey|key pair/i);
      expect(existsSync(join(dataDir, 'credentials.json'))).toBe(false);
      // The next start on free ports generates the pair, prints it once and keeps it.
      const ok = await spawnServer({ ...env, GRANARY_LOG_LEVEL: 'warn' }, Number(env.GRANARY_PORT));
      try {
        // It answers before the start has finished; the pair is kept, then printed, once everything is up.
        await waitUntil(async () => ok.stdout().includes('SecretKey:'), 'the pair is printed', 30_000);
        const kept = JSON.parse(await readFile(join(dataDir, 'credentials.json'), 'utf8')) as { accessKey: string };
        expect(ok.stdout()).toContain(`AccessKey: ${kept.accessKey}`);
      } finally {
        ok.child.kill('SIGTERM');
        expect(await ok.exited).toBe(0);
      }
    }, 120_000);
  });

  it.each([
    ['meta.db', 'not a database at all, only text that is long enough to fill the header of one', /cannot open the metadata database \S+\/meta\.db: file is not a database/],
    ['credentials.json', '{"accessKey": "AK",', /\S+\/credentials\.json is not valid JSON \(.+\)/],
    ['credentials.json', '', /\S+\/credentials\.json is not valid JSON \(Unexpected end of JSON input\)/],
    ['credentials.json', '{"accessKey": "AK"}', /\S+\/credentials\.json holds no root key pair \("accessKey" and "secretKey" strings\)/],
  ])('a %s holding %j: exit 1 naming the file and the reason, the file left alone', async (file, content, message) => {
    const dataDir = await mkdtemp(join(root, 'bad-file-'));
    await writeFile(join(dataDir, file), content);
    for (const workers of ['1', '2']) {
      const r = await granary(['serve'], { GRANARY_DATA_DIR: dataDir, GRANARY_WORKERS: workers, GRANARY_PORT: '0', GRANARY_CONSOLE_PORT: '0' });
      expect(r.code, r.output).toBe(1);
      expect(r.output).toMatch(message);
      expect(r.output).toContain(join(dataDir, file));
      expect(r.output).not.toMatch(/AccessKey:/);
      expect(await readFile(join(dataDir, file), 'utf8')).toBe(content);
    }
  }, 120_000);

  it.each(['1', '2'])('a second server on a data dir in use (holder GRANARY_WORKERS=%s) is refused; the CLI still works', async (workers) => {
    const dataDir = await mkdtemp(join(root, 'shared-'));
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
    const first = await spawnServer({ ...env, GRANARY_WORKERS: workers }, await freePort());
    try {
      // Every worker of the first server has started (each empties its own fop-cache temp dir at its start).
      const seen = new Set<number>();
      await waitUntil(
        async () => {
          const live = JSON.parse(await getFresh(`${first.url}/health/live`)) as { worker?: number };
          seen.add(live.worker ?? 0);
          return seen.size === Number(workers);
        },
        'every worker of the first server answers',
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message} (workers seen: ${[...seen].join(', ') || 'none'}); its output:\n${first.stdout()}`);
      });
      // A fop result being written by the first server (its temp file) must survive the second's attempt.
      await mkdir(join(dataDir, 'fop-cache', 'tmp'), { recursive: true });
      await writeFile(join(dataDir, 'fop-cache', 'tmp', 'in-flight.tmp'), 'half a thumbnail');
      for (const second of ['1', '2']) {
        const r = await granary(['serve'], { ...env, GRANARY_WORKERS: second, GRANARY_PORT: '0', GRANARY_CONSOLE_PORT: '0' });
        expect(r.code, r.output).toBe(1);
        expect(r.output).toContain(`granary: the data dir ${dataDir} is in use by granary serve pid ${first.child.pid} on `);
      }
      expect(await readdir(join(dataDir, 'fop-cache', 'tmp'))).toContain('in-flight.tmp');
      // Offline commands share the data dir by design.
      const made = await granary(['bucket', 'create', 'beside'], env);
      expect(made.code, made.output).toBe(0);
      expect((await granary(['bucket', 'list'], env)).output).toContain('beside');
      first.child.kill('SIGKILL');
      await first.exited;
      // The kernel released the lock with the process: a new server starts at once.
      const next = await spawnServer({ ...env, GRANARY_WORKERS: workers }, await freePort());
      next.child.kill('SIGTERM');
      expect(await next.exited).toBe(0);
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
    }
  }, 180_000);
});
