/**
 * Graceful stop. With keep-alive clients: after downloads over kept-alive connections, stopping the server ends
 * those idle connections at once (Node 20 alone would wait for the 72 s keep-alive timeout), so `stop()` returns.
 * With a handler whose client left: the stop waits for it before closing the database (src/handlers-in-flight.ts).
 */
import { once } from 'node:events';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import qiniu from 'qiniu';
import { expect, it } from 'vitest';
import { startOrigin } from '../helpers/fetch-origin.js';
import { signedFetch } from '../helpers/http.js';
import { sdk, startTestServer } from '../helpers/server.js';

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
