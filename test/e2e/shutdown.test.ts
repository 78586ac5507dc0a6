/**
 * Graceful stop. With keep-alive clients: after downloads over kept-alive connections, stopping the server ends
 * those idle connections at once (Node 20 alone would wait for the 72 s keep-alive timeout), so `stop()` returns.
 * With a handler whose client left: the stop waits for it before closing the database (src/handlers-in-flight.ts).
 * A stop by process group (`granary serve` with 2 workers, SIGTERM to the whole group, as systemd's
 * KillMode=control-group does), then again while it drains: each worker gets the signal itself and forwarded by
 * the primary, every process ignores the later ones, every upload in flight is answered, and the group exits 0.
 */
import { once } from 'node:events';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import qiniu from 'qiniu';
import { expect, it } from 'vitest';
import { startOrigin } from '../helpers/fetch-origin.js';
import { signedFetch } from '../helpers/http.js';
import { upToken } from '../helpers/resumable.js';
import { AK, SK, sdk, startTestServer } from '../helpers/server.js';
import { freePort, sdkAt, spawnServer } from '../helpers/subprocess.js';
import { multipart, uploadParts } from '../helpers/upload.js';

it('ends idle keep-alive connections when stopping', async () => {
  const s = await startTestServer();
  expect((await sdk(s.bucketManager().createBucket('shutdown', { regionId: 'z0' }))).status).toBe(200);
  const data = Buffer.alloc(3 * 1024 * 1024, 7);
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  expect((await sdk(up.put(s.uploadToken({ scope: 'shutdown' }), 'big', data, new qiniu.form_up.PutExtra()))).status).toBe(200);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let socket: Socket | undefined;
  for (let i = 0; i < 2; i++) {
    const size = await new Promise<number>((resolve, reject) => {
      http
        .get(`${s.url}/shutdown/big`, { agent }, (res) => {
          socket = res.socket;
          let n = 0;
          res.on('data', (c: Buffer) => (n += c.length));
          res.on('end', () => resolve(n));
        })
        .on('error', reject);
    });
    expect(size).toBe(data.length);
  }
  expect(socket?.destroyed).toBe(false);
  const clientSocketClosed = once(socket as Socket, 'close');
  await s.stop();
  await clientSocketClosed;
  agent.destroy();
}, 20_000);

it('waits for a handler whose client left (a fetch still reading its origin) before closing the database', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'granary-stop-'));
  const origin = await startOrigin();
  // Every log line, parsed; `closingWait` resolves when the stop says it waits for running handlers.
  const lines: Array<{ level: number; msg: string }> = [];
  let sawWait: () => void = () => undefined;
  const closingWait = new Promise<void>((resolve) => (sawWait = resolve));
  const sink = {
    write(text: string): void {
      const line = JSON.parse(text) as { level: number; msg: string };
      lines.push(line);
      if (/waiting for handlers still running/.test(line.msg)) sawWait();
    },
  };
  const env = { GRANARY_DATA_DIR: dataDir, GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_CONSOLE_PORT: '0' };
  const s = await startTestServer(env, pino({ level: 'info' }, sink));
  try {
    expect((await sdk(s.bucketManager().createBucket('stop', { regionId: 'z0' }))).status).toBe(200);
    // The origin sends half of the body, then holds the rest until released.
    const content = Buffer.alloc(256 * 1024, 5);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let requested: () => void = () => undefined;
    const originRequested = new Promise<void>((resolve) => (requested = resolve));
    origin.route('/held', (_req, res) => {
      res.writeHead(200, { 'Content-Length': String(content.length), 'Content-Type': 'application/octet-stream' });
      res.write(content.subarray(0, content.length / 2));
      requested();
      void released.then(() => res.end(content.subarray(content.length / 2)));
    });
    const leave = new AbortController();
    const path = `/fetch/${qiniu.util.urlsafeBase64Encode(`${origin.base}/held`)}/to/${qiniu.util.urlsafeBase64Encode('stop:held.bin')}`;
    const answer = signedFetch(s, { path, scheme: 'QBox', signal: leave.signal }).catch((err: Error) => err.name);
    await originRequested;
    leave.abort(); // the client leaves; its handler goes on reading the origin
    expect(await answer).toBe('AbortError');

    const stopped = s.running.close().then(() => 'stopped' as const);
    // Without the wait, the stop closed the database under the handler and ended first.
    expect(await Promise.race([stopped, closingWait.then(() => 'waiting' as const)])).toBe('waiting');
    release();
    expect(await stopped).toBe('stopped');
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  } finally {
    await s.running.close();
    await origin.close();
  }
  // The fetch was committed before the database closed: the next start serves it.
  const again = await startTestServer({ GRANARY_DATA_DIR: dataDir, GRANARY_CONSOLE_PORT: '0' });
  try {
    const stat = await sdk<{ fsize: number }>(again.bucketManager().stat('stop', 'held.bin'));
    expect(stat).toEqual({ status: 200, data: expect.objectContaining({ fsize: 256 * 1024 }) });
  } finally {
    await again.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 30_000);

/** Resolves once `count` lines of `stream` (JSON log lines) have `msg` equal to `msg`; counts lines already seen too. */
function logged(stream: Readable, seen: () => string, msg: string, count: number): Promise<void> {
  const n = (): number => seen().split('\n').filter((l) => l.includes(`"msg":${JSON.stringify(msg)}`)).length;
  return new Promise((resolve) => {
    const check = (): void => {
      if (n() < count) return;
      stream.off('data', check);
      resolve();
    };
    stream.on('data', check);
    check();
  });
}

/** A form upload sent in two halves: `sendRest()` sends the second; `answer` is the status and body. */
interface HalfSent {
  sendRest(): void;
  answer: Promise<{ status: number; body: string }>;
}

/**
 * Starts a form upload with `Expect: 100-continue` and resolves once a worker took the request (its HTTP server
 * answered 100 Continue) and the first half of the body was sent.
 */
function startUpload(port: number, key: string, content: Buffer): Promise<HalfSent> {
  const { body, contentType } = multipart(uploadParts(upToken({ scope: `group:${key}` }), key, content));
  const half = Math.floor(body.length / 2);
  return new Promise((resolveStarted, rejectStarted) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/',
      agent: false,
      headers: { 'content-type': contentType, 'content-length': String(body.length), expect: '100-continue' },
    });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    answer.catch(rejectStarted);
    req.once('continue', () => {
      req.write(body.subarray(0, half), () => resolveStarted({ sendRest: () => req.end(body.subarray(half)), answer }));
    });
    req.flushHeaders();
  });
}

it('stops gracefully on SIGTERM to the whole process group (primary and 2 workers) with uploads in flight', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'granary-group-'));
  const port = await freePort();
  const env = { GRANARY_DATA_DIR: dataDir, GRANARY_WORKERS: '2', GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_LOG_LEVEL: 'info' };
  const server = await spawnServer(env, port, [], { detached: true });
  const pid = server.child.pid as number;
  const stdout = server.child.stdout as Readable;
  try {
    // Both workers up (a worker still importing its modules has no signal handler yet).
    await logged(stdout, server.stdout, 'granary listening', 2);
    expect((await sdk(sdkAt(port).bm.createBucket('group', { regionId: 'z0' }))).status).toBe(200);
    const contents = [0, 1, 2, 3].map((i) => Buffer.alloc(512 * 1024 + i, i + 1));
    const uploads = await Promise.all(contents.map((c, i) => startUpload(port, `up-${i}`, c)));
    process.kill(-pid, 'SIGTERM');
    // Both workers began their stop, and the primary forwarded the signal to them. The forwarded SIGTERM may merge
    // with the group's in the kernel (a pending signal is not queued twice), so the test signals the group again:
    // primary and workers alike must ignore it while they drain.
    await Promise.all([
      logged(stdout, server.stdout, 'shutting down: finishing in-flight requests', 2),
      logged(stdout, server.stdout, 'shutting down: stopping the workers', 1),
    ]);
    process.kill(-pid, 'SIGTERM');
    // A worker killed by a signal instead resets its uploads: their answers reject (ECONNRESET) and fail the test.
    await Promise.race([logged(stdout, server.stdout, 'already stopping: signal ignored', 3), Promise.all(uploads.map((u) => u.answer))]);
    for (const u of uploads) u.sendRest();
    const answers = await Promise.all(uploads.map((u) => u.answer));
    expect(answers.map((a) => a.status), JSON.stringify(answers)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => (JSON.parse(a.body) as { key: string }).key)).toEqual(['up-0', 'up-1', 'up-2', 'up-3']);
    expect(await server.exited).toBe(0);
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) process.kill(-pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);
