/**
 * What `granary serve` shows a person at a terminal (src/start-banner.ts, cli/serve.ts): run under a pseudo-terminal
 * (util-linux `script`), it prints one short banner — the Kodo API and console URLs, that the console asks for the
 * key pair, the data dir, the workers, Ctrl-C — and its log lines are pretty, the primary's included: no raw JSON
 * record, no internal socket name (a worker's private listener), no fastify `Server listening` line. The console
 * listener binds loopback (127.0.0.1) by default even when the Kodo API listens on every interface (read from
 * /proc/net/tcp: the listening socket's local address).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, cleanEnv, freePort, REPO_ROOT } from '../helpers/cli.js';
import { waitUntil } from '../helpers/upload.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `granary serve` under a pseudo-terminal; its output (colours stripped, \r\n → \n) and a stop. */
async function serveOnTerminal(env: Record<string, string>): Promise<{ output: () => string; port: number; consolePort: number; s3Port: number; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'granary-banner-'));
  const [port, consolePort, s3Port] = [await freePort(), await freePort(), await freePort()];
  const command = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} serve --data-dir ${JSON.stringify(dataDir)} --port ${port} --console-port ${consolePort} --s3-port ${s3Port}`;
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    cwd: REPO_ROOT,
    env: cleanEnv({ GRANARY_LOG_LEVEL: 'info', TERM: 'dumb', ...env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    // Ctrl-C on the terminal: the server stops gracefully.
    child.stdin.write('\x03');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
    await rm(dataDir, { recursive: true, force: true });
  });
  // eslint-disable-next-line no-control-regex
  const output = (): string => out.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r\n/g, '\n');
  await waitUntil(async () => /Press Ctrl-C to stop\./.test(output()) || child.exitCode !== null, 'the start banner', 60_000);
  expect(child.exitCode, output()).toBeNull();
  return { output, port, consolePort, s3Port, dataDir };
}

/** The local addresses (hex `ADDR:PORT` of /proc/net/tcp) listening on `port`. */
async function listeningOn(port: number): Promise<string[]> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const rows = (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1);
  return rows
    .map((r) => r.trim().split(/\s+/))
    .filter((f) => f[3] === '0A' && f[1]?.endsWith(`:${hexPort}`))
    .map((f) => f[1]!);
}

function expectBanner(text: string, s: { port: number; consolePort: number; s3Port: number; dataDir: string }, workers: string): void {
  expect(text).toMatch(new RegExp(`Kodo API +http://127\\.0\\.0\\.1:${s.port}\\n`));
  expect(text).toMatch(new RegExp(`S3 API +http://127\\.0\\.0\\.1:${s.s3Port} +AWS SDKs and tools`));
  expect(text).toMatch(new RegExp(`Console +http://127\\.0\\.0\\.1:${s.consolePort} +open it and sign in with the key pair`));
  expect(text).toContain(`Data dir  ${s.dataDir}`);
  expect(text).toMatch(new RegExp(`Workers +${workers}`));
  expect(text).toMatch(/AccessKey: \S+\n +SecretKey: \S+/);
  // No internal socket names, no fastify listen lines, no raw JSON records, no advice an npm user cannot act on.
  expect(text).not.toMatch(/granary-worker-/);
  expect(text).not.toMatch(/Server listening/);
  expect(text).not.toMatch(/\{"level":/);
}

describe('granary serve on a terminal', () => {
  it('one process: a banner with both URLs, pretty logs, the console on 127.0.0.1 while the API listens everywhere', async () => {
    const s = await serveOnTerminal({ GRANARY_WORKERS: '1', GRANARY_HOST: '0.0.0.0' });
    const text = s.output();
    expectBanner(text, s, '1');
    expect(text.match(/Granary is ready\./g)).toHaveLength(1);
    // Loopback by default (GRANARY_CONSOLE_HOST unset), the API on every interface.
    expect(await listeningOn(s.consolePort)).toEqual([`0100007F:${s.consolePort.toString(16).toUpperCase().padStart(4, '0')}`]);
    expect(await listeningOn(s.port)).toEqual([`00000000:${s.port.toString(16).toUpperCase().padStart(4, '0')}`]);
    expect((await fetch(`http://127.0.0.1:${s.consolePort}/api/session`)).status).toBe(200);
  });

  it('with workers: the primary logs pretty too, the banner comes once a worker accepts, and no socket name shows', async () => {
    const s = await serveOnTerminal({ GRANARY_WORKERS: '2' });
    const text = s.output();
    expectBanner(text, s, '2');
    expect(text).toMatch(/INFO.*granary primary started/);
    expect(text.match(/Granary is ready\./g)).toHaveLength(1);
    expect((await fetch(`http://127.0.0.1:${s.port}/health/live`)).status).toBe(200);
    // Every worker's S3 listener answers (an unsigned call: 403), and none named its private socket on the way.
    for (let i = 0; i < 4; i++) expect((await fetch(`http://127.0.0.1:${s.s3Port}/`, { headers: { connection: 'close' } })).status).toBe(403);
    expect(s.output()).not.toMatch(/granary-worker-|Server listening/);
  });
});
