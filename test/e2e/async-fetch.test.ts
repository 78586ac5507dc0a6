/**
 * Async fetch (docs/development/kodo-protocol.md §8.5 `POST /sisyphus/fetch`, `GET /sisyphus/fetch?id=`) end to end, with a local origin
 * and a local callback application (the server allows 127.0.0.1 through the outbound guard): the object is
 * stored with the right etag, the completion callback is signed (`qiniu.util.isQiniuCallback`) and rendered;
 * `;`-separated URL alternatives; md5/etag mismatch fails the task and stores nothing (failure callback);
 * an origin 5xx is retried, after a back-off counted on the Clock; `ignore_same_key`; `wait` and the concurrency bound; a task survives a SIGKILL of
 * the server; bad input.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startCallbackApp, type AppRequest, type CallbackApp } from '../helpers/callback-app.js';
import { qetag } from '../helpers/etag.js';
import { upload } from '../helpers/http.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { freePort, spawnServer } from '../helpers/subprocess.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';
import { FetchWorker } from '../../src/objects/fetch/fetch-worker.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

const BUCKET = 'asyncfetch';

// ---- a local origin: per-path handlers, hit counters, responses that can be held and released ----

type OriginHandler = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

interface Origin {
  base: string;
  on(path: string, handler: OriginHandler): void;
  hits(path: string): number;
  close(): Promise<void>;
}

async function startOrigin(): Promise<Origin> {
  const handlers = new Map<string, OriginHandler>();
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    const handler = handlers.get(path);
    if (handler) handler(req, res, n);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    on: (path, handler) => handlers.set(path, handler),
    hits: (path) => hits.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A handler answering 200 with `content`. */
const serve =
  (content: Buffer, type = 'application/octet-stream'): OriginHandler =>
  (_req, res) =>
    res.writeHead(200, { 'content-type': type, 'content-length': content.length }).end(content);

/**
 * A handler that holds every request until `release()`, then answers them (and later ones) with `content`;
 * `arrived(n)` resolves once `n` requests came in.
 */
function held(content: Buffer): { handler: OriginHandler; release: () => void; arrived: (n: number) => Promise<void> } {
  const waiting: ServerResponse[] = [];
  const arrivals: Array<{ n: number; resolve: () => void }> = [];
  let count = 0;
  let released = false;
  const answer = (res: ServerResponse): void => {
    if (!res.destroyed) res.writeHead(200, { 'content-length': content.length }).end(content);
  };
  return {
    handler: (_req, res) => {
      count++;
      for (const a of arrivals.filter((x) => x.n <= count)) a.resolve();
      if (released) answer(res);
      else waiting.push(res);
    },
    release: () => {
      released = true;
      for (const res of waiting.splice(0)) answer(res);
    },
    arrived: (n) => (count >= n ? Promise.resolve() : new Promise((resolve) => arrivals.push({ n, resolve }))),
  };
}

// ---- API helpers ----

interface Api {
  base: string;
  mac: qiniu.auth.digest.Mac;
}

/** A management request signed like the Node SDK (Qiniu v2; the JSON body is signed). */
async function call(
  api: Api,
  method: 'GET' | 'POST',
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<{ status: number; data: Record<string, unknown> }> {
  const url = `${api.base}${path}`;
  const headers: Record<string, string> = { 'Content-Type': contentType };
  headers.Authorization = qiniu.util.generateAccessTokenV2(api.mac, url, method, contentType, body);
  const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, data: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const submit = (api: Api, body: unknown) =>
  call(api, 'POST', '/sisyphus/fetch', typeof body === 'string' ? body : JSON.stringify(body));
const status = (api: Api, id: string) => call(api, 'GET', `/sisyphus/fetch?id=${encodeURIComponent(id)}`);

/** Polls the status (bounded) until the task is done or failed. */
async function final(api: Api, id: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await status(api, id);
    expect(r.status).toBe(200);
    if (r.data.state === 'done' || r.data.state === 'failed') return r.data;
    if (Date.now() > deadline) throw new Error(`task ${id} still ${String(r.data.state)}`);
    await sleep(25);
  }
}

const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

let s: TestServer;
let api: Api;
let app: CallbackApp;
let origin: Origin;

/** Resolves with the next request the callback application receives on `path` (answered 200 `{}`). */
function nextCallback(path: string): Promise<AppRequest> {
  return new Promise((resolve) =>
    app.on(path, (req) => {
      resolve(req);
      return { status: 200, json: { ok: true } };
    }),
  );
}

function expectSigned(req: AppRequest, url: string): void {
  const auth = String(req.headers.authorization);
  expect(auth).toMatch(/^QBox /);
  expect(qiniu.util.isQiniuCallback(s.mac, url, req.body, auth)).toBe(true);
  expect(qiniu.util.isQiniuCallback(s.mac, url, `${req.body} `, auth)).toBe(false);
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
  api = { base: s.url, mac: s.mac };
  await createBucket(s, BUCKET);
  app = await startCallbackApp();
  origin = await startOrigin();
});
afterAll(async () => {
  await s?.stop();
  await app?.close();
  await origin?.close();
});

describe('async fetch', () => {
  it('stores the object, reports it, and calls back signed with the rendered form body', async () => {
    const content = Buffer.from(`hello async fetch ${Date.now()}`);
    origin.on('/dir/file.txt', serve(content, 'text/plain; charset=utf-8'));
    const cbUrl = `${app.base}/cb/ok?t=1`;
    const callback = nextCallback('/cb/ok');
    const r = await submit(api, {
      url: `${origin.base}/dir/file.txt`,
      bucket: BUCKET,
      key: 'af/one.txt',
      md5: md5(content).toUpperCase(),
      etag: qetag(content),
      callbackurl: cbUrl,
      callbackbody: 'key=$(key)&hash=$(etag)&fsize=$(fsize)&bucket=$(bucket)&fname=$(fname)&mime=$(mimeType)',
    });
    expect(r.status).toBe(200);
    expect(typeof r.data.id).toBe('string');
    expect(r.data.wait).toBe(0);

    const req = await callback;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/cb/ok?t=1');
    expect(req.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expectSigned(req, cbUrl);
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      key: 'af/one.txt',
      hash: qetag(content),
      fsize: String(content.length),
      bucket: BUCKET,
      fname: 'file.txt',
      mime: 'text/plain',
    });

    const st = await final(api, r.data.id as string);
    expect(st).toMatchObject({
      id: r.data.id,
      wait: -1,
      state: 'done',
      attempts: 1,
      key: 'af/one.txt',
      hash: qetag(content),
      fsize: content.length,
      mimeType: 'text/plain',
    });
    expect(st.callbackError).toBeUndefined();
    await expectStored(s, BUCKET, 'af/one.txt', content);
    const stat = await sdk<{ hash: string; md5: string }>(s.bucketManager().stat(BUCKET, 'af/one.txt'));
    expect(stat.data.hash).toBe(qetag(content));
  });

  it('tries the url alternatives in order (404 then OK); no key → the etag; JSON callback body', async () => {
    const content = Buffer.from(`second alternative ${Date.now()}`);
    origin.on('/alt/ok.bin', serve(content));
    const cbUrl = `${app.base}/cb/json`;
    const callback = nextCallback('/cb/json');
    const r = await submit(api, {
      url: `${origin.base}/alt/missing.bin; ${origin.base}/alt/ok.bin`,
      bucket: BUCKET,
      callbackurl: cbUrl,
      callbackbody: '{"key":$(key),"hash":$(etag),"fsize":$(fsize),"note":"k=$(key)"}',
      callbackbodytype: 'application/json',
    });
    expect(r.status).toBe(200);
    const req = await callback;
    expect(req.headers['content-type']).toMatch(/^application\/json/);
    expectSigned(req, cbUrl);
    const etag = qetag(content);
    expect(JSON.parse(req.body)).toEqual({ key: etag, hash: etag, fsize: content.length, note: `k=${etag}` });
    expect(await final(api, r.data.id as string)).toMatchObject({ state: 'done', key: etag, hash: etag, attempts: 1 });
    expect(origin.hits('/alt/missing.bin')).toBe(1);
    await expectStored(s, BUCKET, etag, content);
  });

  it('md5 mismatch: the task fails, nothing is stored, the failure callback carries err and code', async () => {
    const content = Buffer.from('not what you expected');
    origin.on('/md5/file.txt', serve(content));
    const cbUrl = `${app.base}/cb/md5`;
    const callback = nextCallback('/cb/md5');
    const url = `${origin.base}/md5/file.txt`;
    const r = await submit(api, {
      url,
      bucket: BUCKET,
      key: 'af/md5.txt',
      md5: md5(Buffer.from('something else')),
      callbackurl: cbUrl,
      callbackbody: 'key=$(key)',
    });
    expect(r.status).toBe(200);
    const req = await callback;
    expect(req.headers['content-type']).toMatch(/^application\/json/);
    expectSigned(req, cbUrl);
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body).toMatchObject({ id: r.data.id, url, bucket: BUCKET, key: 'af/md5.txt', code: 406 });
    expect(String(body.err)).toMatch(/md5/);
    const st = await final(api, r.data.id as string);
    expect(st).toMatchObject({ state: 'failed', code: 406, attempts: 1, wait: -1 });
    expect(String(st.error)).toMatch(/md5/);
    await expectAbsent(s, BUCKET, 'af/md5.txt');
  });

  it('etag mismatch fails the task too, without touching the entry already under the key', async () => {
    const old = Buffer.from('the old content');
    await upload(s, BUCKET, 'af/etag.txt', old);
    origin.on('/etag/file.txt', serve(Buffer.from('new content')));
    const r = await submit(api, { url: `${origin.base}/etag/file.txt`, bucket: BUCKET, key: 'af/etag.txt', etag: qetag(old) });
    expect(await final(api, r.data.id as string)).toMatchObject({ state: 'failed', code: 406 });
    await expectStored(s, BUCKET, 'af/etag.txt', old);
  });

  it('retries after an origin 5xx and then succeeds', async () => {
    const content = Buffer.from('flaky but fine');
    origin.on('/flaky.txt', (req, res, hit) => {
      if (hit === 1) res.writeHead(503).end('busy');
      else serve(content)(req, res, hit);
    });
    const r = await submit(api, { url: `${origin.base}/flaky.txt`, bucket: BUCKET, key: 'af/flaky.txt' });
    const st = await final(api, r.data.id as string);
    expect(st).toMatchObject({ state: 'done', attempts: 2, hash: qetag(content) });
    expect(st.error).toBeUndefined();
    expect(origin.hits('/flaky.txt')).toBe(2);
    await expectStored(s, BUCKET, 'af/flaky.txt', content);
  });

  it('gives up after 3 attempts when the origin keeps failing (1 s, then 2 s apart)', async () => {
    origin.on('/down.txt', (_req, res) => res.writeHead(500).end('down'));
    const started = Date.now();
    const r = await submit(api, { url: `${origin.base}/down.txt`, bucket: BUCKET, key: 'af/down.txt' });
    const st = await final(api, r.data.id as string);
    expect(st).toMatchObject({ state: 'failed', attempts: 3, code: 478, wait: -1 });
    expect(String(st.error)).toMatch(/answered 500/);
    expect(origin.hits('/down.txt')).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    await expectAbsent(s, BUCKET, 'af/down.txt');
  });

  it('the retry back-off runs on the Clock: an hour of back-off is over as soon as the clock moves an hour', async () => {
    const hourly = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_FETCH_RETRY_MS: '3600000' });
    onTestFinished(() => hourly.stop());
    await createBucket(hourly, BUCKET);
    const hApi = { base: hourly.url, mac: hourly.mac };
    const content = Buffer.from('back after an hour');
    origin.on('/hourly.txt', (req, res, hit) => {
      if (hit === 1) res.writeHead(503).end('busy');
      else serve(content)(req, res, hit);
    });
    const r = await submit(hApi, { url: `${origin.base}/hourly.txt`, bucket: BUCKET, key: 'af/hourly.txt' });
    const id = r.data.id as string;
    // The first attempt failed: the task waits for its retry, an hour away on the server's clock.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const st = await status(hApi, id);
      if (st.data.state === 'waiting' && st.data.attempts === 1) break;
      if (Date.now() > deadline) throw new Error(`task ${id} did not fail its first attempt: ${JSON.stringify(st.data)}`);
      await sleep(25);
    }
    expect(origin.hits('/hourly.txt')).toBe(1);
    // The hour passes on the Clock (no real waiting: the worker's timer is an hour long).
    hourly.clock.advance(3600);
    const st = await final(hApi, id);
    expect(st).toMatchObject({ state: 'done', attempts: 2, hash: qetag(content) });
    expect(origin.hits('/hourly.txt')).toBe(2);
  });

  it('does not retry a 404 from every alternative: failed after one attempt', async () => {
    const r = await submit(api, { url: `${origin.base}/nope-1;${origin.base}/nope-2`, bucket: BUCKET, key: 'af/404.txt' });
    const st = await final(api, r.data.id as string);
    expect(st).toMatchObject({ state: 'failed', code: 404, attempts: 1 });
    expect(String(st.error)).toContain('/nope-2');
    expect(origin.hits('/nope-1')).toBe(1);
    await expectAbsent(s, BUCKET, 'af/404.txt');
  });

  it('ignore_same_key: an existing key ends the task without fetching; a new key is fetched', async () => {
    const old = Buffer.from('already here');
    await upload(s, BUCKET, 'af/existing.txt', old);
    const content = Buffer.from('fresh content');
    origin.on('/same/new.txt', serve(content));
    const skipped = await submit(api, {
      url: `${origin.base}/same/new.txt`,
      bucket: BUCKET,
      key: 'af/existing.txt',
      ignore_same_key: true,
    });
    expect(await final(api, skipped.data.id as string)).toMatchObject({
      state: 'done',
      ignored: true,
      key: 'af/existing.txt',
      hash: qetag(old),
    });
    expect(origin.hits('/same/new.txt')).toBe(0);
    await expectStored(s, BUCKET, 'af/existing.txt', old);

    const fetched = await submit(api, { url: `${origin.base}/same/new.txt`, bucket: BUCKET, key: 'af/fresh.txt', ignore_same_key: 'true' });
    const st = await final(api, fetched.data.id as string);
    expect(st).toMatchObject({ state: 'done', key: 'af/fresh.txt', hash: qetag(content) });
    expect(st.ignored).toBeUndefined();
    await expectStored(s, BUCKET, 'af/fresh.txt', content);
  });

  it('runs at most GRANARY_FETCH_CONCURRENCY (2) tasks; wait counts the tasks ahead', async () => {
    const content = Buffer.from('queued content');
    const gate = held(content);
    origin.on('/gate.bin', gate.handler);
    const a = await submit(api, { url: `${origin.base}/gate.bin`, bucket: BUCKET, key: 'af/q1' });
    const b = await submit(api, { url: `${origin.base}/gate.bin`, bucket: BUCKET, key: 'af/q2' });
    await gate.arrived(2);
    const c = await submit(api, { url: `${origin.base}/gate.bin`, bucket: BUCKET, key: 'af/q3' });
    expect(c.data.wait).toBe(2);
    expect((await status(api, a.data.id as string)).data).toMatchObject({ state: 'running', wait: 0 });
    expect((await status(api, c.data.id as string)).data).toMatchObject({ state: 'waiting', wait: 2 });
    expect(origin.hits('/gate.bin')).toBe(2);
    gate.release();
    for (const t of [a, b, c]) expect(await final(api, t.data.id as string)).toMatchObject({ state: 'done' });
    for (const k of ['af/q1', 'af/q2', 'af/q3']) await expectStored(s, BUCKET, k, content);
  });
});

describe('async fetch: bad input', () => {
  it('answers 400 for a body that is not a JSON object or lacks url/bucket', async () => {
    const base = { url: `${origin.base}/x`, bucket: BUCKET };
    const cases: Array<[string, unknown]> = [
      ['not JSON', 'this is not json'],
      ['an array', '[1,2]'],
      ['no url', { bucket: BUCKET }],
      ['empty url', { url: ' ; ', bucket: BUCKET }],
      ['ftp url', { url: 'ftp://example.com/x', bucket: BUCKET }],
      ['one bad alternative', { url: `${origin.base}/x;notaurl`, bucket: BUCKET }],
      ['no bucket', { url: base.url }],
      ['bucket not a string', { ...base, bucket: 7 }],
      ['bad md5', { ...base, md5: 'abc' }],
      ['bad file_type', { ...base, file_type: 9 }],
      ['bad ignore_same_key', { ...base, ignore_same_key: 'maybe' }],
      ['callbackurl without callbackbody', { ...base, callbackurl: `${app.base}/cb` }],
      ['bad callbackurl', { ...base, callbackurl: 'nope', callbackbody: 'a=b' }],
      ['JSON callbackbody that is not JSON', { ...base, callbackurl: `${app.base}/cb`, callbackbody: '{"a":', callbackbodytype: 'application/json' }],
    ];
    for (const [what, body] of cases) {
      const r = await submit(api, body);
      expect(r.status, what).toBe(400);
      expect(typeof r.data.error, what).toBe('string');
    }
  });

  it('answers 631 for a missing bucket and 403 for another account bucket', async () => {
    expect((await submit(api, { url: `${origin.base}/x`, bucket: 'no-such-bucket' })).status).toBe(631);
    const pair = await s.running.g.keyIndex.create(0);
    const other: Api = { base: s.url, mac: new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey) };
    expect((await submit(other, { url: `${origin.base}/x`, bucket: BUCKET })).status).toBe(403);

    // The account cannot see the root's tasks either (612), while root sees everything.
    const mine = await submit(api, { url: `${origin.base}/nope-3`, bucket: BUCKET });
    expect((await status(other, mine.data.id as string)).status).toBe(612);
    expect((await status(api, mine.data.id as string)).status).toBe(200);
  });

  it('status: 400 without id, 612 for an unknown id, 401 without credentials', async () => {
    expect((await call(api, 'GET', '/sisyphus/fetch')).status).toBe(400);
    expect((await status(api, 'z0.fetch.000000000000000000000000')).status).toBe(612);
    expect((await fetch(`${s.url}/sisyphus/fetch?id=x`)).status).toBe(401);
    expect((await fetch(`${s.url}/sisyphus/fetch`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(401);
  });
});

describe('async fetch across a crash', () => {
  let dataDir = '';
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('a task running when the server is SIGKILLed completes after the restart', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'granary-async-fetch-'));
    const env = {
      GRANARY_DATA_DIR: dataDir,
      GRANARY_ACCESS_KEY: AK,
      GRANARY_SECRET_KEY: SK,
      GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32',
    };
    const port = await freePort();
    const content = Buffer.from(`survives a crash ${Date.now()}`);
    const gate = held(content);
    origin.on('/crash.bin', gate.handler);

    const first = await spawnServer(env, port);
    const a: Api = { base: first.url, mac: new qiniu.auth.digest.Mac(AK, SK) };
    let second: Awaited<ReturnType<typeof spawnServer>> | undefined;
    try {
      expect((await call(a, 'POST', '/mkbucketv3/crashy/region/z0', '', 'application/x-www-form-urlencoded')).status).toBe(200);
      const r = await submit(a, { url: `${origin.base}/crash.bin`, bucket: 'crashy', key: 'survivor.bin' });
      expect(r.status).toBe(200);
      const id = r.data.id as string;
      await gate.arrived(1); // the first server is fetching: the task is running
      expect((await status(a, id)).data).toMatchObject({ state: 'running', wait: 0 });
      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');

      second = await spawnServer(env, port);
      gate.release();
      const st = await final(a, id);
      expect(st).toMatchObject({ state: 'done', key: 'survivor.bin', hash: qetag(content), fsize: content.length });
      expect(origin.hits('/crash.bin')).toBeGreaterThanOrEqual(2);
      const res = await fetch(`${second.url}/crashy/survivor.bin`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
      if (second) {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    }
  });

  it('SIGTERM lets a running task finish before the process exits', async () => {
    const env = {
      GRANARY_DATA_DIR: dataDir || (dataDir = await mkdtemp(join(tmpdir(), 'granary-async-fetch-'))),
      GRANARY_ACCESS_KEY: AK,
      GRANARY_SECRET_KEY: SK,
      GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32',
    };
    const port = await freePort();
    const content = Buffer.from(`finished while stopping ${Date.now()}`);
    const gate = held(content);
    origin.on('/term.bin', gate.handler);
    const first = await spawnServer(env, port);
    const a: Api = { base: first.url, mac: new qiniu.auth.digest.Mac(AK, SK) };
    let second: Awaited<ReturnType<typeof spawnServer>> | undefined;
    try {
      await call(a, 'POST', '/mkbucketv3/termy/region/z0', '', 'application/x-www-form-urlencoded');
      const r = await submit(a, { url: `${origin.base}/term.bin`, bucket: 'termy', key: 'finished.bin' });
      await gate.arrived(1);
      first.child.kill('SIGTERM');
      await sleep(200); // the stop has begun: no new request is served, the task still runs
      gate.release();
      expect(await first.exited).toBe(0);

      second = await spawnServer(env, port);
      const st = await final(a, r.data.id as string);
      expect(st).toMatchObject({ state: 'done', attempts: 1, hash: qetag(content) });
      expect(origin.hits('/term.bin')).toBe(1);
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
      if (second) {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    }
  });
});

describe('fetch worker stop', () => {
  it('releases a task still running after the grace period (back to waiting, attempt not counted)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'granary-fetch-worker-'));
    const store = new SqliteMetaStore(join(dir, 'meta.db'));
    const content = Buffer.from('released');
    const gate = held(content);
    origin.on('/release.bin', gate.handler);
    try {
      const request = JSON.stringify({ url: `${origin.base}/release.bin`, bucket: BUCKET, key: 'af/released.bin' });
      await store.fetchTasks.enqueue({ id: 'release-me', accessKey: AK, request, createdMs: Date.now() });
      const worker = new FetchWorker(s.running.g, store.fetchTasks, { concurrency: 1, graceMs: 50 });
      await worker.start();
      await gate.arrived(1);
      expect(await store.fetchTasks.get('release-me')).toMatchObject({ state: 'running', attempts: 1 });
      await worker.stop();
      expect(await store.fetchTasks.get('release-me')).toMatchObject({ state: 'waiting', attempts: 0 });
      gate.release();
      // Whatever the abandoned run does afterwards is not recorded.
      await sleep(200);
      expect(await store.fetchTasks.get('release-me')).toMatchObject({ state: 'waiting', attempts: 0 });
    } finally {
      gate.release();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
