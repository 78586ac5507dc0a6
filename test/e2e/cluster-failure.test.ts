/**
 * A node of a cluster dies (docs/guides/running-a-cluster.md): two Granary nodes share PostgreSQL and radosgw (both
 * started here), with short leases (GRANARY_LEASE_SECONDS=2). Through node A: uploads from several clients at once,
 * pfop jobs with a notify URL and async fetches with a callback URL (their origin holds its answers, so fetches are
 * in flight). Once some uploads were acknowledged and A holds running work, A is SIGKILLed. Then:
 * - node B finishes every job and fetch task: each job's notify URL and each fetch's callback URL receives exactly
 *   one request (awaited at a local receiver, then counted once no work is left in the shared queues);
 * - no job ends twice (one notification; `done` in the shared table after at most the killed run and one more);
 * - every acknowledged object is intact, byte for byte, read through B; an upload cut by the kill left either
 *   nothing or the whole object.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterBackend, sdkOn, signedJson, startNode, type ClusterBackend, type ClusterNode } from '../helpers/cluster.js';
import { startOrigin, type Origin } from '../helpers/fetch-origin.js';
import { seededBytes } from '../helpers/files.js';
import { saveas } from '../helpers/pfop.js';
import { AK, SK, sdk } from '../helpers/server.js';
import { waitUntil } from '../helpers/upload.js';

const B = 'survive';
const KiB = 1024;
const JOBS = 4;
const FOPS_PER_JOB = 6;
const FETCHES = 4;
const UPLOADERS = 4;
const KEYS = { accessKey: AK, secretKey: SK };

/** One request received by the notification/callback receiver. */
interface Received {
  path: string;
  body: string;
}

/** A receiver of job notifications and fetch callbacks: answers 200 JSON at once and lets a test await arrivals. */
interface Receiver {
  base: string;
  received: Received[];
  /** Resolves once `cond` holds for the requests received (checked at each arrival); rejects after `timeoutMs`. */
  until(cond: (all: Received[]) => boolean, what: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    received,
    until: (cond, what, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!cond(received)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; received ${JSON.stringify(received.map((r) => r.path))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let backend: ClusterBackend;
let a: ClusterNode;
let b: ClusterNode;
let receiver: Receiver;
let origin: Origin;
let db: pg.Client;
/** Origin answers held until the test releases them (fetches in flight at the kill). */
const held: Array<() => void> = [];
let holding = true;

beforeAll(async () => {
  [backend, receiver, origin] = await Promise.all([startClusterBackend(), startReceiver(), startOrigin()]);
  const env = {
    ...backend.env,
    GRANARY_ACCESS_KEY: AK,
    GRANARY_SECRET_KEY: SK,
    GRANARY_LEASE_SECONDS: '2',
    GRANARY_OUTBOUND_ALLOW: '127.0.0.1',
    GRANARY_JOB_CONCURRENCY: '8',
    GRANARY_FETCH_CONCURRENCY: '4',
    GRANARY_FOP_CONCURRENCY: '1',
    GRANARY_LOG_LEVEL: 'warn',
  };
  [a, b] = await Promise.all([startNode('a', env), startNode('b', env)]);
  db = new pg.Client({ connectionString: backend.metadataUrl });
  await db.connect();
}, 120_000);

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await db?.end();
  await Promise.all([a?.stop(), b?.stop()]);
  await Promise.all([receiver?.close(), origin?.close()]);
  await backend?.stop();
});

/** Rows of the shared database (the test's own look at what the nodes did). */
async function rows<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<T[]> {
  return (await db.query<T>(sql, values)).rows;
}

/** A form upload through `node`; resolves with the HTTP status, or 0 when the connection failed (node killed). */
async function upload(node: ClusterNode, key: string, content: Buffer): Promise<number> {
  const s = sdkOn(node, KEYS);
  try {
    const r = await sdk(new qiniu.form_up.FormUploader(s.config).put(s.token({ scope: B }), key, content, new qiniu.form_up.PutExtra()));
    return r.status;
  } catch {
    return 0;
  }
}

/** The object under `key` read through `node`: status and bytes. */
async function read(node: ClusterNode, key: string): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(`${node.url}/${B}/${encodeURIComponent(key)}`);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

describe('a node killed during uploads, pfop jobs and async fetches', () => {
  it('the other node finishes every job and fetch exactly once, and every acknowledged object is intact', async () => {
    expect((await sdk(sdkOn(a, KEYS).bm.createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    const photo = await sharp({
      create: { width: 2400, height: 1800, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } },
    })
      .jpeg({ quality: 90 })
      .toBuffer();
    expect(await upload(a, 'photo.jpg', photo)).toBe(200);

    // Async fetches through A; the origin holds every answer until the kill.
    const fetchBodies = Array.from({ length: FETCHES }, (_, i) => seededBytes(`fetch-${i}`, 300 * KiB + i));
    for (const [i, body] of fetchBodies.entries()) {
      origin.route(`/f${i}.bin`, (_req, res) => {
        // The answer to a node killed meanwhile goes nowhere.
        res.on('error', () => undefined);
        const send = (): void => void res.writeHead(200, { 'content-length': String(body.length) }).end(body);
        if (holding) held.push(send);
        else send();
      });
    }
    const fetchIds: string[] = [];
    for (let i = 0; i < FETCHES; i++) {
      const r = await signedJson(a.url, sdkOn(a, KEYS).mac, 'POST', '/sisyphus/fetch', {
        url: `${origin.base}/f${i}.bin`,
        bucket: B,
        key: `fetched-${i}.bin`,
        callbackurl: `${receiver.base}/fetch/${i}`,
        callbackbody: 'key=$(key)&hash=$(etag)',
      });
      expect(r.status, JSON.stringify(r.data)).toBe(200);
      fetchIds.push(String(r.data.id));
    }

    // pfop jobs through A, each several thumbnails of a large photo.
    const jobIds: string[] = [];
    const s = sdkOn(a, KEYS);
    const om = new qiniu.fop.OperationManager(s.mac, s.config);
    for (let j = 0; j < JOBS; j++) {
      const fops = Array.from({ length: FOPS_PER_JOB }, (_, i) => `imageView2/2/w/${1800 - 10 * i}|${saveas(B, `job-${j}/out-${i}.jpg`)}`);
      const id = await new Promise<string>((resolve, reject) =>
        om.pfop(B, 'photo.jpg', fops, '', { notifyURL: `${receiver.base}/job/${j}` }, (err, body) =>
          err ? reject(err) : resolve(body?.persistentId ?? ''),
        ),
      );
      expect(id).not.toBe('');
      jobIds.push(id);
    }

    // Uploads through A from several clients at once, until A is gone.
    const acknowledged = new Map<string, Buffer>();
    const cut = new Map<string, Buffer>();
    const refused: string[] = [];
    let killed = false;
    let enoughAcks: (() => void) | undefined;
    const sixAcks = new Promise<void>((resolve) => (enoughAcks = resolve));
    const uploaders = Array.from({ length: UPLOADERS }, async (_, u) => {
      // Stops at the first upload that fails: A is gone (or answered an error, reported below).
      for (let n = 0; !killed; n++) {
        const key = `up-${u}-${n}`;
        const content = seededBytes(key, (n % 3 === 0 ? 200 : 20) * KiB + n);
        const status = await upload(a, key, content);
        if (status !== 200) {
          cut.set(key, content);
          if (!killed && status !== 0) refused.push(`${key}: ${status}`);
          return;
        }
        acknowledged.set(key, content);
        if (acknowledged.size >= 6) enoughAcks?.();
      }
    });
    await sixAcks;

    // Kill A once it holds running work of both kinds (or the work it held is all it gets: the origin holds every
    // fetch, so A's claimed fetches stay running until the kill).
    const aPid = a.server.child.pid;
    const ownedByA = (owner: string | null): boolean => owner !== null && new RegExp(`:${aPid}:[0-9a-f]+$`).test(owner);
    let jobsOfA: string[] = [];
    let tasksOfA: string[] = [];
    await waitUntil(
      async () => {
        const jobs = await rows<{ id: string; owner: string | null }>("SELECT id, owner FROM tasks WHERE kind = 'job' AND state = 'running'");
        const tasks = await rows<{ id: string; owner: string | null }>("SELECT id, owner FROM tasks WHERE kind = 'fetch' AND state = 'running'");
        jobsOfA = jobs.filter((r) => ownedByA(r.owner)).map((r) => r.id);
        tasksOfA = tasks.filter((r) => ownedByA(r.owner)).map((r) => r.id);
        return jobsOfA.length > 0 && tasksOfA.length > 0;
      },
      'node A runs a job and a fetch task',
      60_000,
    );
    await a.kill();
    killed = true;
    await Promise.all(uploaders);
    holding = false;
    for (const release of held.splice(0)) release();

    // B finishes everything: one notification per job, one callback per fetch.
    const expected = [...jobIds.map((_, j) => `/job/${j}`), ...fetchIds.map((_, i) => `/fetch/${i}`)];
    await receiver.until((all) => expected.every((p) => all.some((r) => r.path === p)), 'every job and fetch to report', 120_000);
    // Nothing is left to run anywhere, so nothing more can arrive: then count.
    await waitUntil(
      async () =>
        (await rows("SELECT id FROM tasks WHERE kind = 'job' AND state <> 'done'")).length === 0 &&
        (await rows("SELECT id FROM tasks WHERE kind = 'fetch' AND state NOT IN ('done', 'failed')")).length === 0,
      'the shared queues to be empty',
      30_000,
    );
    for (const path of expected) expect(receiver.received.filter((r) => r.path === path).map((r) => r.path), path).toEqual([path]);
    expect(receiver.received).toHaveLength(expected.length);

    for (const [j, id] of jobIds.entries()) {
      const body = JSON.parse(receiver.received.find((r) => r.path === `/job/${j}`)?.body ?? '{}') as { id?: string; code?: number };
      expect(body).toMatchObject({ id, code: 0 });
      for (let i = 0; i < FOPS_PER_JOB; i++) expect((await read(b, `job-${j}/out-${i}.jpg`)).status, `job-${j}/out-${i}.jpg`).toBe(200);
    }
    const jobRows = await rows<{ id: string; state: string; attempts: number }>("SELECT id, state, attempts FROM tasks WHERE kind = 'job' ORDER BY id");
    expect(jobRows).toHaveLength(JOBS);
    for (const row of jobRows) {
      expect(row.state).toBe('done');
      // The jobs A was running at its death ran again once (on B); the others ran once.
      expect(row.attempts, row.id).toBe(jobsOfA.includes(row.id) ? 2 : 1);
    }
    // The fetch tasks A was running were taken over and finished.
    const taskRows = await rows<{ id: string; state: string; owner: string | null }>("SELECT id, state, owner FROM tasks WHERE kind = 'fetch'");
    for (const id of tasksOfA) {
      const row = taskRows.find((r) => r.id === id);
      expect(row?.state, id).toBe('done');
      expect(ownedByA(row?.owner ?? null), id).toBe(false);
    }
    for (const [i, body] of fetchBodies.entries()) {
      const got = await read(b, `fetched-${i}.bin`);
      expect(got.status, `fetched-${i}.bin`).toBe(200);
      expect(got.body.equals(body), `fetched-${i}.bin`).toBe(true);
    }

    // Every acknowledged upload is intact through B; a cut one is absent or whole.
    expect(refused).toEqual([]);
    expect(acknowledged.size).toBeGreaterThanOrEqual(6);
    for (const [key, content] of acknowledged) {
      const got = await read(b, key);
      expect(got.status, key).toBe(200);
      expect(got.body.equals(content), key).toBe(true);
    }
    for (const [key, content] of cut) {
      const got = await read(b, key);
      expect([200, 404], key).toContain(got.status);
      if (got.status === 200) expect(got.body.equals(content), key).toBe(true);
    }
  }, 240_000);
});
