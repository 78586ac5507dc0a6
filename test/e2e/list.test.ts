/**
 * Listing (rsf role, docs/development/kodo-protocol.md §8.3, §13.2) driven through the official SDK (`listPrefix`, `listPrefixV2`) in
 * both SDK configurations, plus raw signed requests for what the SDK cannot send (limit 0/5000, GET, form body).
 * Bucket `list-main` holds 2,500 keys inserted through the MetaStore (sharing the blob of a real upload) and a
 * few dozen keys uploaded through the SDK.
 */
import Database from 'better-sqlite3';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ObjectRecord } from '../../src/ports/meta.js';
import { signedFetch, upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

interface ListAnswer {
  marker?: string;
  commonPrefixes?: string[];
  items: Array<{ key: string; hash: string; fsize: number; mimeType: string; putTime: number; type: number; status: number; parts?: number[] }>;
  error?: string;
}

interface V2Line {
  item: ListAnswer['items'][number] | null;
  marker: string;
  dir: string;
}

let s: TestServer;
const MAIN = 'list-main';
const UNI = 'list-unicode';

/** Byte-lexicographic order of the UTF-8 encodings (Kodo's key order). */
const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

const FLAT = Array.from({ length: 500 }, (_, i) => `flat-${String(i).padStart(4, '0')}`);
const NESTED = Array.from({ length: 20 * 100 }, (_, i) => `dir-${String(Math.floor(i / 100)).padStart(2, '0')}/file-${String(i % 100).padStart(3, '0')}`);
const UPLOADED = [
  ...Array.from({ length: 10 }, (_, i) => `real-${i}`),
  ...Array.from({ length: 10 }, (_, i) => `dir-05/uploaded-${i}`),
  'dir-20/deep/a',
  'dir-20/deep/b',
  'dir-20/top',
];
const ALL_KEYS = [...FLAT, ...NESTED, ...UPLOADED].sort(byBytes);

/** Runs `fn` over `items` with at most `n` in flight. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, MAIN);
  await createBucket(s, UNI);
  await pool(UPLOADED, 8, (key) => upload(s, MAIN, key, `content of ${key}`, { mimeType: 'text/plain' }));
  // The 2,500 generated keys share the blob of a real upload (one reference each, counted by commitPut).
  const model = (await s.running.g.meta.getObject(MAIN, 'real-0')) as ObjectRecord;
  const nowSec = Math.floor(s.clock.nowMs() / 1000);
  await Promise.all(
    [...FLAT, ...NESTED].map((key) => s.running.g.meta.commitPut({ ...model, key }, { insertOnly: false, nowSec })),
  );
  expect(await s.running.g.meta.countObjects(MAIN)).toBe(ALL_KEYS.length);
});
afterAll(async () => s?.stop());

/** Every page of `listPrefix` until the marker is empty. */
async function listAll(
  bm: qiniu.rs.BucketManager,
  bucket: string,
  opts: { prefix?: string; delimiter?: string; limit?: number },
): Promise<{ items: string[]; prefixes: string[]; pages: ListAnswer[] }> {
  const items: string[] = [];
  const prefixes: string[] = [];
  const pages: ListAnswer[] = [];
  let marker = '';
  for (let n = 0; n < 10_000; n++) {
    const r = await sdk<ListAnswer>(bm.listPrefix(bucket, { ...opts, marker }));
    expect(r.status, JSON.stringify(r.data)).toBe(200);
    pages.push(r.data);
    items.push(...r.data.items.map((i) => i.key));
    prefixes.push(...(r.data.commonPrefixes ?? []));
    marker = r.data.marker ?? '';
    if (!marker) return { items, prefixes, pages };
  }
  throw new Error('listing never ended');
}

/** `listPrefixV2` lines. */
async function listV2(bm: qiniu.rs.BucketManager, bucket: string, opts: Record<string, unknown>): Promise<{ status: number; lines: V2Line[]; text: string }> {
  const r = await sdk<string>(bm.listPrefixV2(bucket, opts));
  const text = String(r.data);
  const lines = r.status === 200 ? text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as V2Line) : [];
  return { status: r.status, lines, text };
}

/** A raw signed list request (`Qiniu` signature; query string as given). */
async function rawList(path: string, opts: { method?: string; body?: string; mac?: qiniu.auth.digest.Mac } = {}): Promise<{ status: number; text: string; json: ListAnswer; type: string | null }> {
  const res = await signedFetch(s, { path, method: opts.method ?? 'POST', ...(opts.body !== undefined ? { body: opts.body } : {}), ...(opts.mac ? { mac: opts.mac } : {}) });
  const text = await res.text();
  let json: ListAnswer;
  try {
    json = JSON.parse(text) as ListAnswer;
  } catch {
    json = { items: [] };
  }
  return { status: res.status, text, json, type: res.headers.get('content-type') };
}

describe('listPrefix (the Node SDK, POST /list)', () => {
  for (const config of ['zoneConfig', 'discoveryConfig'] as const) {
    it(`pages through 2,500+ keys until the marker is empty: every key exactly once, in byte order (${config})`, async () => {
      const bm = s.bucketManager(s[config]());
      const { items, prefixes, pages } = await listAll(bm, MAIN, {});
      expect(items).toEqual(ALL_KEYS);
      expect(prefixes).toEqual([]);
      expect(pages).toHaveLength(Math.ceil(ALL_KEYS.length / 1000));
      expect(pages[0]?.items).toHaveLength(1000);
      // No delimiter: no commonPrefixes field.
      expect(pages[0]).not.toHaveProperty('commonPrefixes');
      expect(pages[pages.length - 1]?.marker ?? '').toBe('');
    });
  }

  it('returns the Kodo item shape (putTime exact, status present)', async () => {
    const r = await rawList(`/list?bucket=${MAIN}&prefix=real-0&limit=1`);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/json/);
    const rec = (await s.running.g.meta.getObject(MAIN, 'real-0')) as ObjectRecord;
    expect(r.text).toContain(`"putTime":${rec.putTime.toString()}`);
    expect(r.json.items[0]).toEqual({
      key: 'real-0',
      hash: rec.hash,
      fsize: rec.fsize,
      mimeType: 'text/plain',
      putTime: expect.any(Number),
      type: 0,
      status: 0,
      md5: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(r.json.marker ?? '').toBe('');
  });

  it('pages with a small limit, prefix and delimiter: limit counts items and prefixes together', async () => {
    const bm = s.bucketManager();
    const { items, prefixes, pages } = await listAll(bm, MAIN, { delimiter: '/', limit: 7 });
    const dirs = [...new Set(ALL_KEYS.filter((k) => k.includes('/')).map((k) => k.slice(0, k.indexOf('/') + 1)))];
    expect(dirs).toHaveLength(21);
    expect(prefixes).toEqual(dirs);
    expect(items).toEqual(ALL_KEYS.filter((k) => !k.includes('/')));
    for (const p of pages) {
      expect(p.items.length + (p.commonPrefixes?.length ?? 0)).toBeLessThanOrEqual(7);
      expect(p).toHaveProperty('commonPrefixes');
    }
    expect(pages).toHaveLength(Math.ceil((dirs.length + items.length) / 7));
    // The directories sort first: the first pages hold prefixes only, yet carry a marker.
    expect(pages[0]?.items).toEqual([]);
    expect(pages[0]?.commonPrefixes).toEqual(dirs.slice(0, 7));
    expect(pages[0]?.marker).toMatch(/\S/);
  });

  it('rolls up below a prefix', async () => {
    const bm = s.bucketManager();
    const dir05 = await listAll(bm, MAIN, { prefix: 'dir-05/', delimiter: '/', limit: 30 });
    expect(dir05.items).toEqual(ALL_KEYS.filter((k) => k.startsWith('dir-05/')));
    expect(dir05.items).toHaveLength(110);
    expect(dir05.prefixes).toEqual([]);
    const dir20 = await listAll(bm, MAIN, { prefix: 'dir-20/', delimiter: '/' });
    expect(dir20.items).toEqual(['dir-20/top']);
    expect(dir20.prefixes).toEqual(['dir-20/deep/']);
    const dir0 = await listAll(bm, MAIN, { prefix: 'dir-0', delimiter: '/', limit: 3 });
    expect(dir0.prefixes).toEqual(Array.from({ length: 10 }, (_, i) => `dir-0${i}/`));
    expect(dir0.items).toEqual([]);
    const none = await sdk<ListAnswer>(bm.listPrefix(MAIN, { prefix: 'nothing-here' }));
    expect(none).toEqual({ status: 200, data: { marker: '', items: [] } });
  });

  it('orders unicode keys byte-lexicographically (UTF-8), also across pages', async () => {
    const keys = ['z', 'A', 'a', 'é', 'e\u0301', '中文/文件', '中/x', '😀', '\uFFFD', 'ﬀ', 'a b', 'a%2Fb', 'a+b', 'Ω/1'];
    await pool(keys, 4, (key) => upload(s, UNI, key, key));
    const bm = s.bucketManager(s.discoveryConfig());
    const sorted = [...keys].sort(byBytes);
    expect(sorted.indexOf('😀')).toBeGreaterThan(sorted.indexOf('\uFFFD')); // UTF-16 order would differ
    expect((await listAll(bm, UNI, {})).items).toEqual(sorted);
    expect((await listAll(bm, UNI, { limit: 3 })).items).toEqual(sorted);
    expect((await listAll(bm, UNI, { prefix: '中' })).items).toEqual(['中/x', '中文/文件']);
    const rolled = await listAll(bm, UNI, { delimiter: '/', limit: 2 });
    expect(rolled.prefixes).toEqual(['Ω/', '中/', '中文/']);
    expect(rolled.items).toEqual(sorted.filter((k) => !k.includes('/')));
  });

  it('needparts=true adds part sizes to items', async () => {
    const r = await rawList(`/list?bucket=${MAIN}&prefix=real-1&limit=1&needparts=true`);
    expect(r.status).toBe(200);
    expect(r.json.items[0]?.parts).toEqual([r.json.items[0]?.fsize]);
  });
});

describe('parameters and methods', () => {
  it('limit: empty and 0 mean 1000, above 1000 is capped at 1000, non-numeric is 400', async () => {
    for (const limit of ['0', '', '5000', '1000']) {
      const r = await rawList(`/list?bucket=${MAIN}&prefix=&limit=${limit}&marker=&delimiter=`);
      expect(r.status, limit).toBe(200);
      expect(r.json.items, limit).toHaveLength(1000);
      expect(r.json.marker).toMatch(/\S/);
    }
    const absent = await rawList(`/list?bucket=${MAIN}`);
    expect(absent.json.items).toHaveLength(1000);
    expect((await rawList(`/list?bucket=${MAIN}&limit=7`)).json.items).toHaveLength(7);
    for (const limit of ['abc', '-1', '1.5', '1e3']) {
      const r = await rawList(`/list?bucket=${MAIN}&limit=${limit}`);
      expect(r.status, limit).toBe(400);
      expect(r.json).toEqual({ error: expect.any(String) });
    }
    // The SDK itself turns 0 and 5000 into 1000.
    const sdk0 = await sdk<ListAnswer>(s.bucketManager().listPrefix(MAIN, { limit: 0 }));
    expect(sdk0.data.items).toHaveLength(1000);
    const sdk5000 = await sdk<ListAnswer>(s.bucketManager().listPrefix(MAIN, { limit: 5000 }));
    expect(sdk5000.data.items).toHaveLength(1000);
  });

  it('accepts GET with a query string and POST with a form body (QBox too)', async () => {
    const get = await rawList(`/list?bucket=${MAIN}&prefix=dir-20/&delimiter=/`, { method: 'GET' });
    expect(get.status).toBe(200);
    expect(get.json).toEqual({ marker: '', commonPrefixes: ['dir-20/deep/'], items: [expect.objectContaining({ key: 'dir-20/top' })] });
    const form = await rawList('/list', { body: `bucket=${MAIN}&prefix=dir-20%2F&delimiter=%2F&limit=1` });
    expect(form.status).toBe(200);
    expect(form.json.commonPrefixes).toEqual(['dir-20/deep/']);
    expect(form.json.items).toEqual([]);
    const next = await rawList('/list', { body: `bucket=${MAIN}&prefix=dir-20%2F&delimiter=%2F&limit=1&marker=${encodeURIComponent(form.json.marker ?? '')}` });
    expect(next.json.items.map((i) => i.key)).toEqual(['dir-20/top']);
    expect(next.json.marker).toBe('');
    const qbox = await signedFetch(s, { path: `/list?bucket=${MAIN}&prefix=real-&limit=2`, scheme: 'QBox' });
    expect(qbox.status).toBe(200);
    expect(((await qbox.json()) as ListAnswer).items.map((i) => i.key)).toEqual(['real-0', 'real-1']);
  });

  it('refuses unsigned requests (401)', async () => {
    const res = await fetch(`${s.url}/list?bucket=${MAIN}`, { method: 'POST' });
    expect(res.status).toBe(401);
  });
});

describe('errors', () => {
  it('a missing bucket answers 631 (list and v2/list)', async () => {
    const bm = s.bucketManager();
    const r = await sdk<ListAnswer>(bm.listPrefix('no-such-bucket', {}));
    expect(r.status).toBe(631);
    expect(r.data).toEqual({ error: expect.any(String) });
    expect((await listV2(bm, 'no-such-bucket', {})).status).toBe(631);
    expect((await rawList('/list?prefix=a')).status).toBe(631);
  });

  it('a tampered, forged or foreign marker answers 640 with a JSON error', async () => {
    const bm = s.bucketManager();
    const first = await sdk<ListAnswer>(bm.listPrefix(MAIN, { limit: 3 }));
    const marker = first.data.marker as string;
    expect(marker).toMatch(/\S/);
    // The marker is Qiniu-like: URL-safe base64 of {"c":0,"k":<last key>,...}.
    const doc = JSON.parse(Buffer.from(marker, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(doc).toMatchObject({ c: 0, k: ALL_KEYS[2] });
    const reencode = (d: Record<string, unknown>): string => Buffer.from(JSON.stringify(d)).toString('base64url');
    const bad = [
      'not base64 !!',
      'eyJjIjowLCJrIjoiYS9iIn0=', // Qiniu's documented example: unsigned
      Buffer.from('not json').toString('base64url'),
      reencode({ ...doc, k: 'flat-0400' }), // moved forward
      reencode({ ...doc, d: 1 }), // turned into a prefix marker
      reencode({ ...doc, h: undefined }),
      reencode({ ...doc, c: 1 }),
      reencode({ ...doc, extra: true }),
      marker.slice(0, -4),
      `${marker}AAAA`,
      marker.replace(/.(?=.{6}$)/, (c) => (c === 'A' ? 'B' : 'A')),
    ];
    for (const m of bad) {
      const r = await sdk<ListAnswer>(bm.listPrefix(MAIN, { marker: m, limit: 3 }));
      expect(r.status, m).toBe(640);
      expect(r.data, m).toEqual({ error: expect.any(String) });
    }
    // A marker of another bucket is refused there.
    const other = await sdk<ListAnswer>(bm.listPrefix(UNI, { marker, limit: 3 }));
    expect(other.status).toBe(640);
    expect((await listV2(bm, MAIN, { marker: 'garbage' })).status).toBe(640);
    // The genuine marker still works, whether or not re-encoded with padding/standard alphabet.
    const ok = await sdk<ListAnswer>(bm.listPrefix(MAIN, { marker, limit: 3 }));
    expect(ok.data.items.map((i) => i.key)).toEqual(ALL_KEYS.slice(3, 6));
  });

  it("another account's bucket answers 403; the account lists its own", async () => {
    const pair = await s.running.g.keyIndex.create(0);
    const alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
    const bm = new qiniu.rs.BucketManager(alice, s.zoneConfig());
    const r = await sdk<ListAnswer>(bm.listPrefix(MAIN, {}));
    expect(r.status).toBe(403);
    expect(r.data).toEqual({ error: expect.any(String) });
    expect((await listV2(bm, MAIN, {})).status).toBe(403);
    expect((await sdk(bm.createBucket('alice-list', { regionId: 'z0' }))).status).toBe(200);
    expect(await sdk(bm.listPrefix('alice-list', {}))).toEqual({ status: 200, data: { marker: '', items: [] } });
  });
});

describe('listPrefixV2 (POST /v2/list, one JSON object per line)', () => {
  it('streams items and prefixes as lines with markers', async () => {
    const bm = s.bucketManager();
    const r = await listV2(bm, MAIN, { prefix: 'dir-20/', delimiter: '/' });
    expect(r.status).toBe(200);
    expect(r.text.endsWith('\n')).toBe(true);
    expect(r.lines).toEqual([
      { item: null, marker: expect.stringMatching(/\S/), dir: 'dir-20/deep/' },
      { item: expect.objectContaining({ key: 'dir-20/top', hash: expect.any(String), putTime: expect.any(Number) }), marker: '', dir: '' },
    ]);
    // Each line's marker resumes after that line.
    const resumed = await listV2(bm, MAIN, { prefix: 'dir-20/', delimiter: '/', marker: r.lines[0]?.marker });
    expect(resumed.lines.map((l) => l.item?.key)).toEqual(['dir-20/top']);
  });

  it('answers text/plain lines (not application/json: the PHP SDK decodes that whole), putTime exact', async () => {
    const res = await signedFetch(s, { path: `/v2/list?bucket=${MAIN}&prefix=real-3` });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const rec = (await s.running.g.meta.getObject(MAIN, 'real-3')) as ObjectRecord;
    const text = await res.text();
    expect(text).toContain(`"putTime":${rec.putTime.toString()}`);
    expect(text.split('\n')).toHaveLength(2);
  });

  for (const config of ['zoneConfig', 'discoveryConfig'] as const) {
    it(`limit 0 (the SDK default) streams the whole bucket over several pages (${config})`, async () => {
      const r = await listV2(s.bucketManager(s[config]()), MAIN, {});
      expect(r.status).toBe(200);
      expect(r.lines.map((l) => l.item?.key)).toEqual(ALL_KEYS);
      expect(r.lines.every((l) => l.dir === '')).toBe(true);
      expect(r.lines[r.lines.length - 1]?.marker).toBe('');
      expect(r.lines[999]?.marker).toMatch(/\S/);
    });
  }

  it('a limit caps the number of lines; the last marker resumes', async () => {
    const bm = s.bucketManager();
    const r = await listV2(bm, MAIN, { limit: 5, delimiter: '/' });
    expect(r.lines.map((l) => l.dir)).toEqual(['dir-00/', 'dir-01/', 'dir-02/', 'dir-03/', 'dir-04/']);
    const next = await listV2(bm, MAIN, { limit: 2, delimiter: '/', marker: r.lines[4]?.marker });
    expect(next.lines.map((l) => l.dir)).toEqual(['dir-05/', 'dir-06/']);
    // Raw requests: limits above 1000 stream that many; non-numeric is 400.
    const big = await signedFetch(s, { path: `/v2/list?bucket=${MAIN}&limit=1500` });
    expect((await big.text()).trim().split('\n')).toHaveLength(1500);
    const bad = await signedFetch(s, { path: `/v2/list?bucket=${MAIN}&limit=x` });
    expect(bad.status).toBe(400);
  });

  it('streams with backpressure and stops reading when the client goes away', async () => {
    // 60,000 keys (60 pages, ~15 MB of lines), inserted in one transaction on a second connection.
    const BIG = 'list-big';
    const COUNT = 60_000;
    await createBucket(s, BIG);
    const model = (await s.running.g.meta.getObject(MAIN, 'real-0')) as ObjectRecord;
    const w = new Database(join(s.dataDir, 'meta.db'));
    const ins = w.prepare(
      `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time) VALUES (?, ?, ?, ?, ?, '', 'text/plain', ?)`,
    );
    w.transaction(() => {
      for (let i = 0; i < COUNT; i++) ins.run(BIG, `big/${String(i).padStart(6, '0')}`, model.blobId, model.fsize, model.hash, model.putTime);
      w.prepare('UPDATE blobs SET refs = refs + ? WHERE id = ?').run(COUNT, model.blobId);
    })();
    w.close();

    const meta = s.running.g.meta;
    const pagesRead = vi.spyOn(meta, 'listObjects');
    // The server side of the request: resolves when its response closes, telling whether it was sent whole.
    const server = s.running.app.server;
    const closed = new Promise<boolean>((resolve) => {
      const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
        if (!req.url?.startsWith('/v2/list')) return;
        server.off('request', onRequest);
        res.once('close', () => resolve(res.writableFinished));
      };
      server.on('request', onRequest);
    });
    try {
      const url = `${s.url}/v2/list?bucket=${BIG}&limit=0`;
      const authorization = qiniu.util.generateAccessToken(s.mac, url);
      const req = request(url, { method: 'POST', headers: { authorization } });
      const first = await new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.once('data', (chunk: Buffer) => {
            res.pause(); // a slow client: stops reading, keeps the connection
            resolve(chunk.length);
          });
        });
        req.on('error', reject);
        req.end();
      });
      expect(first).toBeGreaterThan(0);
      await delay(300);
      const whilePaused = pagesRead.mock.calls.length;
      // Backpressure: the server read only as far as the socket buffers let it, not the whole bucket.
      expect(whilePaused).toBeGreaterThan(0);
      expect(whilePaused).toBeLessThan(COUNT / 1000);
      req.destroy();
      expect(await closed).toBe(false);
      await delay(100);
      expect(pagesRead.mock.calls.length).toBeLessThanOrEqual(whilePaused + 1);
    } finally {
      pagesRead.mockRestore();
    }
    const after = await sdk<ListAnswer>(s.bucketManager().listPrefix(BIG, { limit: 1, marker: '' }));
    expect(after.data.items.map((i) => i.key)).toEqual(['big/000000']);
    expect(await s.running.g.meta.countObjects(BIG)).toBe(COUNT);
  });
});

describe('expired entries', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.stop());

  it('keys past their deleteAfterDays are not listed (list and v2/list)', async () => {
    await createBucket(t, 'exp');
    const up = new qiniu.form_up.FormUploader(t.zoneConfig());
    const put = async (key: string, policy: Record<string, unknown>): Promise<void> => {
      const r = await sdk(up.put(t.uploadToken({ scope: `exp:${key}`, ...policy }), key, Buffer.from(key), new qiniu.form_up.PutExtra()));
      expect(r.status).toBe(200);
    };
    await put('a-keep', {});
    await put('b-expire', { deleteAfterDays: 1 });
    await put('c/expire', { deleteAfterDays: 1 });
    await put('d/keep', {});
    await put('d/expire', { deleteAfterDays: 1 });
    await put('e-keep', {});
    const before = await sdk<ListAnswer>(t.bucketManager().listPrefix('exp', { delimiter: '/' }));
    expect(before.data.items.map((i) => i.key)).toEqual(['a-keep', 'b-expire', 'e-keep']);
    expect(before.data.commonPrefixes).toEqual(['c/', 'd/']);
    t.clock.advance(2 * 86400);
    // The client's X-Qiniu-Date is now two days behind the server clock: sign without it.
    const noDate = new qiniu.auth.digest.Mac(t.mac.accessKey, t.mac.secretKey, { disableQiniuTimestampSignature: true });
    const bm = new qiniu.rs.BucketManager(noDate, t.zoneConfig());
    const after = await sdk<ListAnswer>(bm.listPrefix('exp', { delimiter: '/' }));
    expect(after.data).toEqual({ marker: '', commonPrefixes: ['d/'], items: [expect.objectContaining({ key: 'a-keep' }), expect.objectContaining({ key: 'e-keep' })] });
    const paged = await listAll(bm, 'exp', { limit: 1 });
    expect(paged.items).toEqual(['a-keep', 'd/keep', 'e-keep']);
    const v2 = await listV2(bm, 'exp', {});
    expect(v2.lines.map((l) => l.item?.key)).toEqual(['a-keep', 'd/keep', 'e-keep']);
  });
});
