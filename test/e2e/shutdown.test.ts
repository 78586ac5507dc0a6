/**
 * Graceful stop with keep-alive clients: after downloads over kept-alive connections, stopping the server ends
 * those idle connections at once (Node 20 alone would wait for the 72 s keep-alive timeout), so `stop()` returns.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';
import qiniu from 'qiniu';
import { expect, it } from 'vitest';
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
