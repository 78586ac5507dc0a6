/**
 * Group commit under SIGKILL: 32 clients upload small objects (they share WAL fdatasyncs, and are
 * stored inline when small enough) and larger ones as fast as they can; the server is killed while commits are in
 * flight. After a restart every acknowledged object is present and byte-exact, an unacknowledged one is absent or
 * exact, and nothing is left in staging.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { afterAll, describe, expect, it } from 'vitest';
import { AK, SK } from '../helpers/server.js';
import { freePort, sdkAt, spawnServer } from '../helpers/subprocess.js';

/** Distinct, position-dependent bytes of object `i` (sizes from 1 byte to ~96 KiB). */
function content(i: number): Buffer {
  const size = 1 + ((i * 7919) % (96 * 1024));
  const buf = Buffer.alloc(size);
  for (let j = 0; j < size; j++) buf[j] = (Math.imul(j + 1, 2654435761) ^ (i * 131)) & 0xff;
  return buf;
}

describe('group commit', () => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps every acknowledged upload byte-exact across a SIGKILL among concurrent commits', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-gc-'));
    const env = { GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK };
    const port = await freePort();
    const first = await spawnServer(env, port);
    const { mac, bm } = sdkAt(port);
    expect((await bm.createBucket('gcommit', { regionId: 'z0' })).resp.statusCode).toBe(200);
    const token = new qiniu.rs.PutPolicy({ scope: 'gcommit' } as qiniu.rs.PutPolicyOptions).uploadToken(mac);

    const acknowledged = new Set<number>();
    const attempted = new Set<number>();
    let next = 0;
    let killed = false;
    let reachedTarget!: () => void;
    const target = new Promise<void>((resolve) => (reachedTarget = resolve));
    const client = async (): Promise<void> => {
      while (!killed) {
        const i = next++;
        attempted.add(i);
        const body = new FormData();
        body.set('token', token);
        body.set('key', `k${i}`);
        body.set('file', new Blob([content(i)]), 'f.bin');
        try {
          const res = await fetch(`${first.url}/`, { method: 'POST', body });
          if (res.status === 200 && !killed) acknowledged.add(i);
          await res.arrayBuffer();
        } catch {
          return; // the server is gone
        }
        if (acknowledged.size >= 300) reachedTarget();
      }
    };
    const clients = Array.from({ length: 32 }, () => client());
    await target;
    first.child.kill('SIGKILL');
    killed = true;
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(clients);

    const second = await spawnServer(env, port);
    try {
      expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
      for (const i of attempted) {
        const res = await fetch(`${second.url}/gcommit/k${i}`);
        if (acknowledged.has(i)) expect(res.status, `k${i} was acknowledged but lost`).toBe(200);
        if (res.status === 200) {
          expect(Buffer.from(await res.arrayBuffer()).equals(content(i)), `k${i} differs`).toBe(true);
        } else {
          expect(res.status).toBe(404);
          await res.arrayBuffer();
        }
      }
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
