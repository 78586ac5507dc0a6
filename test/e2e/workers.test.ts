/**
 * Worker processes (GRANARY_WORKERS=2, docs/operations/workers.md): `granary serve` as a primary with two workers sharing
 * the port and the data dir. Requests land on both workers; each singleton (reaper, blob sweep, expiry sweeper,
 * scrubber) starts exactly once; a key pair created by another process is accepted by both workers within a
 * bound; a worker SIGKILLed mid-upload is restarted while the other keeps serving, no acknowledged object is lost,
 * the cut upload leaves nothing half-written and its staging file is removed; a pfop job running on a killed worker
 * is finished by the other worker exactly once (one notification, outputs done before the kill not redone);
 * each worker runs with V8's old-space size of GRANARY_WORKER_OLD_SPACE_MB; SIGTERM stops everything gracefully (no lease left); workers of a killed primary stop by themselves.
 *
 * Each request goes through an http.Agent holding one keep-alive connection, so the test knows which worker
 * answers it (the primary hands each new connection to the worker holding the fewest: workers/balancer.ts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { saveas, startNotifyReceiver, type NotifyReceiver, type Record as PrefopRecord } from '../helpers/pfop.js';
import { AK, SK, sdk, staticZoneConfig } from '../helpers/server.js';
import { freePort, spawnServer, type ChildServer } from '../helpers/subprocess.js';
import { multipart, uploadParts, waitUntil } from '../helpers/upload.js';

const B = 'workers';
const SINGLETONS = ['reaper', 'blob-sweep', 'expiry-sweeper', 'scrubber'];

interface Answer {
  status: number;
  body: Buffer;
  json: () => unknown;
}

/** One request over `agent` (undefined: a fresh connection); rejects when no answer comes within 10 s. */
function send(
  base: string,
  agent: http.Agent | undefined,
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders = {},
  body?: Buffer | string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, body: buf, json: () => JSON.parse(buf.toString('utf8')) as unknown });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    // A connection the primary handed to a worker that was killed at that moment is never answered.
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${method} ${path}`)));
    req.end(body);
  });
}

interface WorkerConn {
  agent: http.Agent;
  pid: number;
  slot: number;
}

describe('worker processes (GRANARY_WORKERS=2)', () => {
  let dataDir = '';
  let server: ChildServer;
  let base = '';
  let receiver: NotifyReceiver;
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  const token = (scope: string): string => new qiniu.rs.PutPolicy({ scope } as qiniu.rs.PutPolicyOptions).uploadToken(mac);
  const agents: http.Agent[] = [];

  /**
   * A keep-alive connection to each worker (new connections until both workers answered: both listen). The
   * connections of earlier calls are closed first: the primary hands a new connection to the worker holding the
   * fewest, so connections still held on one worker would steer every new one to the other.
   */
  async function connections(): Promise<WorkerConn[]> {
    for (const agent of agents.splice(0)) agent.destroy();
    const bySlot = new Map<number, WorkerConn>();
    await waitUntil(
      async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const live = (await send(base, agent, 'GET', '/health/live')).json() as { pid: number; worker: number };
        if (!bySlot.has(live.worker)) bySlot.set(live.worker, { agent, pid: live.pid, slot: live.worker });
        else agent.destroy();
        return bySlot.size === 2;
      },
      'connections reach both workers',
      60_000,
    );
    return [...bySlot.values()].sort((a, b) => a.slot - b.slot);
  }

  /** Reads the database as the test's own (read-only) connection. */
  function query<T>(sql: string, ...params: unknown[]): T[] {
    const db = new Database(join(dataDir, 'meta.db'), { readonly: true });
    try {
      return db.prepare(sql).all(...params) as T[];
    } finally {
      db.close();
    }
  }

  /** Waits until slot `slot` answers with a pid other than `oldPid` (the primary restarted it). */
  async function restarted(slot: number, oldPid: number): Promise<void> {
    await waitUntil(
      async () => {
        const seen = new Set<string>();
        for (let i = 0; i < 4; i++) {
          const live = (await send(base, undefined, 'GET', '/health/live').catch(() => undefined))?.json() as
            | { pid: number; worker: number }
            | undefined;
          if (live) seen.add(`${live.worker}:${live.pid}`);
        }
        return [...seen].some((w) => w.startsWith(`${slot}:`) && w !== `${slot}:${oldPid}`);
      },
      `worker ${slot} is restarted`,
      60_000,
    );
  }

  async function upload(conn: WorkerConn, key: string, content: Buffer): Promise<Answer> {
    const { body, contentType } = multipart(uploadParts(token(`${B}:${key}`), key, content));
    return send(base, conn.agent, 'POST', '/', { 'content-type': contentType, 'content-length': body.length }, body);
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-workers-'));
    receiver = await startNotifyReceiver();
    const port = await freePort();
    server = await spawnServer(
      {
        GRANARY_DATA_DIR: dataDir,
        GRANARY_ACCESS_KEY: AK,
        GRANARY_SECRET_KEY: SK,
        GRANARY_WORKERS: '2',
        GRANARY_LEASE_SECONDS: '2',
        // Singleton starts are logged at debug.
        GRANARY_LOG_LEVEL: 'debug',
        GRANARY_FOP_CONCURRENCY: '1',
        GRANARY_OUTBOUND_ALLOW: '127.0.0.1',
      },
      port,
    );
    base = server.url;
    const bm = new qiniu.rs.BucketManager(mac, staticZoneConfig(`127.0.0.1:${port}`));
    expect((await sdk(bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    for (const a of agents) a.destroy();
    await receiver?.close();
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('requests land on both workers; each singleton starts exactly once', async () => {
    const conns = await connections();
    expect(conns.map((c) => c.slot)).toEqual([0, 1]);
    expect(conns[0]?.pid).not.toBe(conns[1]?.pid);
    // Each worker runs with the old-space size of GRANARY_WORKER_OLD_SPACE_MB (default 256 MiB).
    for (const c of conns) expect(readFileSync(`/proc/${c.pid}/cmdline`, 'utf8').split('\0')).toContain('--initial-old-space-size=256');
    const started = (name: string): number =>
      server.stdout().split('\n').filter((l) => l.includes('singleton started here') && l.includes(`"singleton":"${name}"`)).length;
    await waitUntil(async () => SINGLETONS.every((n) => started(n) >= 1), 'every singleton started', 30_000);
    // Let both workers look at the leases several times (each look renews its process lease) before counting.
    const renewals = (): Map<string, number> =>
      new Map(query<{ owner: string; e: number }>("SELECT owner, expires_ms AS e FROM leases WHERE name LIKE 'process:%'").map((r) => [r.owner, r.e]));
    const first = renewals();
    expect(first.size).toBe(2);
    for (let k = 0; k < 3; k++) {
      const before = renewals();
      await waitUntil(async () => [...renewals()].every(([o, e]) => e > (before.get(o) ?? Infinity)), 'both workers renew their leases', 10_000);
    }
    for (const name of SINGLETONS) expect(started(name), name).toBe(1);
    const holders = query<{ name: string; owner: string }>("SELECT name, owner FROM leases WHERE name NOT LIKE 'process:%'");
    expect(holders.map((h) => h.name).sort()).toEqual([...SINGLETONS].sort());
    for (const h of holders) expect(first.has(h.owner)).toBe(true);
  }, 60_000);

  it('keep-alive connections opened at once are split evenly between the workers (least connections)', async () => {
    await connections();
    const bursts: http.Agent[][] = [];
    for (let burst = 0; burst < 2; burst++) {
      const held = Array.from({ length: 16 }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
      const answers = await Promise.all(held.map((agent) => send(base, agent, 'GET', '/health/live')));
      const perWorker = new Map<number, number>();
      for (const a of answers) {
        const { worker } = a.json() as { worker: number };
        perWorker.set(worker, (perWorker.get(worker) ?? 0) + 1);
      }
      // The connections open before a burst are as many on each worker (one each, then 9 each): the 16 new ones
      // split 8/8, or 7/9 or 6/10 while the close of a connection connections() dropped is still being reported.
      expect([...perWorker.values()], `burst ${burst}`).toHaveLength(2);
      for (const n of perWorker.values()) expect(n, `burst ${burst}: ${JSON.stringify([...perWorker])}`).toBeGreaterThanOrEqual(6);
      bursts.push(held);
    }
    for (const agent of bursts.flat()) agent.destroy();
  }, 60_000);

  it('a key pair created by another process (the CLI) is accepted by both workers within a bound', async () => {
    const conns = await connections();
    const r = spawnSync(process.execPath, [BIN, 'keys', 'create'], {
      env: { ...process.env, GRANARY_DATA_DIR: dataDir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const ak = /AccessKey: (\S+)/.exec(r.stdout)?.[1] ?? '';
    const sk = /SecretKey: (\S+)/.exec(r.stdout)?.[1] ?? '';
    const account = new qiniu.auth.digest.Mac(ak, sk);
    for (const c of conns) {
      await waitUntil(
        async () => {
          const url = `${base}/buckets`;
          const a = await send(base, c.agent, 'GET', '/buckets', { authorization: qiniu.util.generateAccessToken(account, url) });
          return a.status === 200;
        },
        `worker ${c.slot} accepts the new key`,
        5000,
      );
    }
  }, 90_000);

  it('SIGKILL of a worker mid-upload: the other keeps serving, acknowledged objects intact, the cut upload absent or whole, its staging removed', async () => {
    const conns = await connections();
    const [victim, other] = conns as [WorkerConn, WorkerConn];
    const acknowledged = new Map<string, Buffer>();
    for (const [i, c] of conns.entries()) {
      const content = Buffer.from(`before the kill ${i}`);
      expect((await upload(c, `before-${i}`, content)).status).toBe(200);
      acknowledged.set(`before-${i}`, content);
    }
    // A 32 MiB form upload on the victim: half of it sent, then the worker is killed.
    const big = Buffer.alloc(32 * 1024 * 1024, 7);
    const { body, contentType } = multipart(uploadParts(token(`${B}:cut`), 'cut', big));
    const req = http.request(`${base}/`, {
      method: 'POST',
      agent: victim.agent,
      headers: { 'content-type': contentType, 'content-length': body.length },
    });
    const settled = new Promise<number>((resolve) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(-1));
      });
      req.on('error', () => resolve(-1));
    });
    req.write(body.subarray(0, body.length / 2));
    const victimStaging = async (): Promise<string[]> =>
      (await readdir(join(dataDir, 'tmp'))).filter((n) => n.startsWith(`${victim.pid}-`));
    await waitUntil(async () => (await victimStaging()).length > 0, 'the victim stages the upload', 10_000);
    process.kill(victim.pid, 'SIGKILL');
    expect(await settled).toBe(-1);

    // The other worker serves while the victim is down and restarted.
    for (let i = 0; i < 3; i++) {
      const content = Buffer.from(`during the restart ${i}`);
      expect((await upload(other, `during-${i}`, content)).status).toBe(200);
      acknowledged.set(`during-${i}`, content);
    }
    await restarted(victim.slot, victim.pid);
    await waitUntil(async () => (await victimStaging()).length === 0, 'the dead worker’s staging file is removed', 10_000);
    const after = await connections();
    for (const c of after) {
      for (const [key, content] of acknowledged) {
        const got = await send(base, c.agent, 'GET', `/${B}/${key}`);
        expect(got.status, key).toBe(200);
        expect(got.body.equals(content), key).toBe(true);
      }
      const cut = await send(base, c.agent, 'GET', `/${B}/cut`);
      expect([404, 200]).toContain(cut.status);
      if (cut.status === 200) expect(cut.body.equals(big)).toBe(true);
    }
  }, 120_000);

  it('a pfop job running on a killed worker is finished by the other, exactly once', async () => {
    const conns = await connections();
    const photo = await sharp({
      create: { width: 2400, height: 1800, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } },
    })
      .jpeg({ quality: 90 })
      .toBuffer();
    const up = await upload(conns[0] as WorkerConn, 'big.jpg', photo);
    expect(up.status, up.body.toString()).toBe(200);
    const N = 12;
    const fops = Array.from({ length: N }, (_, i) => `imageView2/2/w/${2000 - i}|${saveas(B, `out-${i}.jpg`)}`).join(';');
    const form = new URLSearchParams({ bucket: B, key: 'big.jpg', fops, notifyURL: receiver.url }).toString();
    const url = `${base}/pfop/`;
    const submitted = await send(
      base,
      conns[1]?.agent,
      'POST',
      '/pfop/',
      { authorization: qiniu.util.generateAccessToken(mac, url, form), 'content-type': 'application/x-www-form-urlencoded' },
      form,
    );
    expect(submitted.status, submitted.body.toString()).toBe(200);
    const id = (submitted.json() as { persistentId: string }).persistentId;
    const prefop = async (): Promise<PrefopRecord> =>
      (await send(base, undefined, 'GET', `/status/get/prefop?id=${encodeURIComponent(id)}`)).json() as PrefopRecord;

    // Wait until some commands are done and others not, then kill the worker running the job.
    let doneBefore: number[] = [];
    await waitUntil(
      async () => {
        const r = await prefop();
        if (r.code !== 1 && r.code !== 2) throw new Error(`job ended before the kill: ${JSON.stringify(r)}`);
        doneBefore = r.items.flatMap((it, i) => (it.code === 0 ? [i] : []));
        return doneBefore.length >= 2;
      },
      'the job makes progress',
      60_000,
    );
    const [row] = query<{ owner: string }>('SELECT owner FROM tasks WHERE id = ?', id);
    const pid = Number(/:(\d+):[0-9a-f]+$/.exec(row?.owner ?? '')?.[1]);
    const victim = conns.find((c) => c.pid === pid);
    expect(victim, `job owner ${row?.owner}`).toBeDefined();
    const putTimes = new Map<number, string>();
    for (const i of doneBefore) {
      const [o] = query<{ t: string }>('SELECT CAST(put_time AS TEXT) AS t FROM objects WHERE bucket = ? AND key = ?', B, `out-${i}.jpg`);
      putTimes.set(i, o?.t ?? 'missing');
    }
    process.kill(pid, 'SIGKILL');

    // The notification of the finished job is answered (and counted).
    const notified = receiver.next().then((n) => {
      n.answer(200);
      return n;
    });
    let final: PrefopRecord | undefined;
    await waitUntil(
      async () => {
        const r = await prefop().catch(() => undefined);
        if (r && r.code !== 1 && r.code !== 2) final = r;
        return final !== undefined;
      },
      'the job ends',
      120_000,
    );
    expect(final?.code).toBe(0);
    for (const [i, item] of (final?.items ?? []).entries()) expect(item).toMatchObject({ code: 0, key: `out-${i}.jpg` });
    expect(JSON.parse((await notified).body)).toMatchObject({ id, code: 0 });
    const [job] = query<{ attempts: number; owner: string; state: string }>('SELECT attempts, owner, state FROM tasks WHERE id = ?', id);
    // Two runs: the killed one and the one that finished it (no third, no parallel duplicate).
    expect(job).toMatchObject({ attempts: 2, state: 'done' });
    expect(job?.owner).not.toBe(row?.owner);
    for (const [i, t] of putTimes) {
      const [o] = query<{ t: string }>('SELECT CAST(put_time AS TEXT) AS t FROM objects WHERE bucket = ? AND key = ?', B, `out-${i}.jpg`);
      expect(o?.t, `out-${i}.jpg was redone`).toBe(t);
    }
    // Nothing more arrives for this job: wait until the other worker is idle (no running job), then count.
    await waitUntil(async () => query("SELECT 1 FROM tasks WHERE kind = 'job' AND state IN ('running', 'notifying')").length === 0, 'no job runs', 10_000);
    expect(receiver.count()).toBe(1);
    await restarted(victim?.slot ?? -1, pid);
  }, 240_000);

  it('SIGTERM stops the primary and its workers gracefully', async () => {
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(query('SELECT name FROM leases')).toEqual([]);
  }, 30_000);

  it('workers stop by themselves when the primary is killed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'granary-workers-orphan-'));
    const port = await freePort();
    const env = { GRANARY_DATA_DIR: dir, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_WORKERS: '2' };
    const primary = await spawnServer(env, port);
    try {
      base = primary.url;
      const pids = (await connections()).map((c) => c.pid);
      primary.child.kill('SIGKILL');
      await primary.exited;
      const alive = (pid: number): boolean => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await waitUntil(async () => pids.every((pid) => !alive(pid)), 'both workers exit', 20_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
