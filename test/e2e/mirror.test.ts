/**
 * Mirror source (docs/development/kodo-protocol.md §8.6 `image`/`unimage`/`v2/bucketInfo`, §8.5 `prefetch`, §11 downloads) through the
 * official SDK and plain HTTP, against a local origin on 127.0.0.1 (allowed with GRANARY_OUTBOUND_ALLOW) that
 * counts the requests it gets per path and can hold an answer until the test releases it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { qetag } from '../helpers/etag.js';
import { rawRequest } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectError, readAnswer } from '../helpers/upload.js';

/** What the origin answers for one path. */
interface Route {
  status: number;
  body: Buffer;
  type?: string;
  /** The answer waits for this promise. */
  gate?: Promise<void>;
}

/** A local origin server that counts requests per path (raw request-target) and records Host headers. */
interface Origin {
  url: string;
  hits: Map<string, number>;
  /** Request headers by path (the last request). */
  headers: Map<string, IncomingHttpHeaders>;
  connections: number;
  serve(path: string, body: Buffer, type?: string): void;
  fail(path: string, status: number): void;
  /** Holds the answer for `path`: `arrived` resolves when its first request arrives; `release` lets it answer. */
  hold(path: string): { arrived: Promise<void>; release: () => void };
  close(): Promise<void>;
}

async function startOrigin(): Promise<Origin> {
  const routes = new Map<string, Route>();
  const arrivals = new Map<string, () => void>();
  const hits = new Map<string, number>();
  const headers = new Map<string, IncomingHttpHeaders>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    headers.set(path, req.headers);
    arrivals.get(path)?.();
    const route = routes.get(path) ?? { status: 404, body: Buffer.from('not here') };
    const answer = (): void => {
      res.writeHead(route.status, { 'content-type': route.type ?? 'application/octet-stream', 'content-length': route.body.length });
      res.end(route.body);
    };
    if (route.gate) void route.gate.then(answer);
    else answer();
  });
  const origin: Origin = {
    url: '',
    hits,
    headers,
    connections: 0,
    serve: (path, body, type) => routes.set(path, { status: 200, body, ...(type ? { type } : {}) }),
    fail: (path, status) => routes.set(path, { status, body: Buffer.from(`origin says ${status}`) }),
    hold: (path) => {
      const route = routes.get(path);
      if (!route) throw new Error(`no route ${path}`);
      let release!: () => void;
      route.gate = new Promise<void>((resolve) => (release = resolve));
      const arrived = new Promise<void>((resolve) => arrivals.set(path, resolve));
      return { arrived, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => {
    origin.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return origin;
}

interface ErrorBody {
  error: string;
}

const PUB = 'mirror-pub';
const PRIV = 'mirror-priv';
const BARE = 'mirror-bare';

/** Path-style download URL with each key segment percent-encoded. */
const pathOf = (bucket: string, key: string): string => `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;

describe('mirror source', () => {
  let s: TestServer;
  let origin: Origin;

  beforeAll(async () => {
    origin = await startOrigin();
    s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
    for (const b of [PUB, PRIV, BARE]) await createBucket(s, b);
    const bm = s.bucketManager();
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    expect((await sdk(bm.image(PUB, `${origin.url}/base/`))).status).toBe(200);
    expect((await sdk(bm.image(PRIV, `${origin.url}/priv`))).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
    await origin.close();
  });

  const get = async (bucket: string, key: string, init?: RequestInit) => readAnswer(await fetch(s.url + pathOf(bucket, key), init));

  describe('image / unimage / bucketInfo', () => {
    it('image stores the source and bucketInfo reports it; unimage clears it', async () => {
      const bm = s.bucketManager();
      const info = await sdk<Record<string, unknown>>(bm.getBucketInfo(PUB));
      expect(info.status).toBe(200);
      // `source_enabled` is the referer anti-leech flag (buckets/settings-info.ts), not "has a mirror source".
      expect(info.data).toMatchObject({ source: `${origin.url}/base/`, host: '', source_enabled: false });

      expect((await sdk(bm.image(BARE, 'https://cdn.example.test/assets', 'assets.example.test'))).status).toBe(200);
      const withHost = await sdk<Record<string, unknown>>(bm.getBucketInfo(BARE));
      expect(withHost.data).toMatchObject({ source: 'https://cdn.example.test/assets', host: 'assets.example.test' });

      expect((await sdk(bm.unimage(BARE))).status).toBe(200);
      const cleared = await sdk<Record<string, unknown>>(bm.getBucketInfo(BARE));
      expect(cleared.data).toMatchObject({ source: '', host: '' });
      // unimage of a bucket without a source is fine too.
      expect((await sdk(bm.unimage(BARE))).status).toBe(200);
    });

    it('refuses non-http(s) sources (400), bad hosts (400) and missing buckets (631)', async () => {
      const bm = s.bucketManager();
      for (const bad of ['ftp://example.test/x', 'file:///etc/passwd', 'not a url']) {
        const r = await sdk<ErrorBody>(bm.image(BARE, bad));
        expect(r.status, bad).toBe(400);
        expect(r.data.error).toMatch(/source URL/);
      }
      const badHost = await sdk<ErrorBody>(bm.image(BARE, 'http://example.test', 'bad host\r\nx: y'));
      expect(badHost.status).toBe(400);
      expect((await sdk<ErrorBody>(bm.image('no-such-bucket', 'http://example.test'))).status).toBe(631);
      expect((await sdk<ErrorBody>(bm.unimage('no-such-bucket'))).status).toBe(631);
      const info = await sdk<Record<string, unknown>>(bm.getBucketInfo(BARE));
      expect(info.data).toMatchObject({ source: '' });
    });
  });

  describe('download miss', () => {
    it('pulls a missing key, serves it, and serves the stored copy afterwards', async () => {
      const key = 'dir/a b+c.bin';
      const originPath = '/base/dir/a%20b%2Bc.bin';
      const content = randomBytes(200_000);
      origin.serve(originPath, content, 'image/x-granary');

      const first = await fetch(s.url + pathOf(PUB, key));
      expect(first.status).toBe(200);
      expect(Buffer.from(await first.arrayBuffer()).equals(content)).toBe(true);
      expect(first.headers.get('etag')).toBe(`"${qetag(content)}"`);
      expect(first.headers.get('content-type')).toBe('image/x-granary');
      expect(first.headers.get('content-length')).toBe(String(content.length));
      expect(origin.hits.get(originPath)).toBe(1);

      const second = await fetch(s.url + pathOf(PUB, key));
      expect(second.status).toBe(200);
      expect(Buffer.from(await second.arrayBuffer()).equals(content)).toBe(true);
      expect(origin.hits.get(originPath)).toBe(1);

      const st = await sdk<{ hash: string; fsize: number }>(s.bucketManager().stat(PUB, key));
      expect(st.status).toBe(200);
      expect(st.data).toMatchObject({ hash: qetag(content), fsize: content.length });
    });

    it('20 concurrent misses for one key make exactly one origin request', async () => {
      const key = 'hot.bin';
      const originPath = '/base/hot.bin';
      const content = randomBytes(150_000);
      origin.serve(originPath, content);
      const gate = origin.hold(originPath);

      // Count the 20 requests as they reach Granary; the origin answers only once all of them are there, so
      // every one of them saw the key missing while the single pull was in flight.
      let reached = 0;
      let allReached!: () => void;
      const all = new Promise<void>((resolve) => (allReached = resolve));
      const onRequest = (req: { url?: string }): void => {
        if (req.url === pathOf(PUB, key) && ++reached === 20) allReached();
      };
      s.running.app.server.on('request', onRequest);
      try {
        const answers = Array.from({ length: 20 }, async () => {
          const res = await fetch(s.url + pathOf(PUB, key));
          return { status: res.status, body: Buffer.from(await res.arrayBuffer()), etag: res.headers.get('etag') };
        });
        await Promise.all([gate.arrived, all]);
        gate.release();
        const results = await Promise.all(answers);
        expect(origin.hits.get(originPath)).toBe(1);
        for (const r of results) {
          expect(r.status).toBe(200);
          expect(r.body.equals(content)).toBe(true);
          expect(r.etag).toBe(`"${qetag(content)}"`);
        }
      } finally {
        s.running.app.server.off('request', onRequest);
      }
      expect((await get(PUB, key)).status).toBe(200);
      expect(origin.hits.get(originPath)).toBe(1);
    });

    it('origin 404 → 404; nothing is stored', async () => {
      const a = await get(PUB, 'nowhere.txt');
      expectError(a, 404);
      expect(origin.hits.get('/base/nowhere.txt')).toBe(1);
      expect((await sdk(s.bucketManager().stat(PUB, 'nowhere.txt'))).status).toBe(612);
    });

    it('origin 500 or unreachable → 478; a later success is pulled again', async () => {
      origin.fail('/base/flaky.txt', 500);
      expectError(await get(PUB, 'flaky.txt'), 478, /500/);
      expect((await sdk(s.bucketManager().stat(PUB, 'flaky.txt'))).status).toBe(612);
      origin.serve('/base/flaky.txt', Buffer.from('better now'));
      const ok = await get(PUB, 'flaky.txt');
      expect(ok.status).toBe(200);
      expect(ok.text).toBe('better now');
      expect(origin.hits.get('/base/flaky.txt')).toBe(2);

      // A source nobody listens on.
      const dead = await startOrigin();
      const deadUrl = dead.url;
      await dead.close();
      expect((await sdk(s.bucketManager().image(BARE, deadUrl))).status).toBe(200);
      try {
        expectError(await get(BARE, 'x.txt'), 478);
      } finally {
        expect((await sdk(s.bucketManager().unimage(BARE))).status).toBe(200);
      }
    });

    it('HEAD pulls too, and the bound-domain download path mirrors', async () => {
      origin.serve('/base/head.txt', Buffer.from('head body'), 'text/plain');
      const head = await fetch(s.url + pathOf(PUB, 'head.txt'), { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe('9');
      expect(origin.hits.get('/base/head.txt')).toBe(1);

      await bindDomain(s.running.g, 'mirror.example.test', PUB);
      origin.serve('/base/via/domain.txt', Buffer.from('through the domain'));
      const res = await rawRequest({ port: s.running.port, path: '/via/domain.txt', headers: { Host: 'mirror.example.test' } });
      expect(res.status).toBe(200);
      expect(res.body.toString()).toBe('through the domain');
      expect(origin.hits.get('/base/via/domain.txt')).toBe(1);
      expect((await rawRequest({ port: s.running.port, path: '/via/none.txt', headers: { Host: 'mirror.example.test' } })).status).toBe(404);
    });

    it('sends the source host as the Host header', async () => {
      const bucket = 'mirror-host';
      await createBucket(s, bucket);
      expect((await sdk(s.bucketManager().image(bucket, `${origin.url}/vhost`, 'origin.example.test'))).status).toBe(200);
      origin.serve('/vhost/k.txt', Buffer.from('virtual'));
      const a = await get(bucket, 'k.txt');
      expect(a.status).toBe(200);
      expect(a.text).toBe('virtual');
      expect(origin.headers.get('/vhost/k.txt')?.host).toBe('origin.example.test');
    });

    it('a disabled entry is not re-pulled (403)', async () => {
      origin.serve('/base/off.txt', Buffer.from('off'));
      expect((await get(PUB, 'off.txt')).status).toBe(200);
      expect((await sdk(s.bucketManager().updateObjectStatus(PUB, 'off.txt', 1))).status).toBe(200);
      expectError(await get(PUB, 'off.txt'), 403);
      expect(origin.hits.get('/base/off.txt')).toBe(1);
    });

    it('after unimage a miss is a plain 404 and the origin is not asked', async () => {
      const bucket = 'mirror-un';
      await createBucket(s, bucket);
      const bm = s.bucketManager();
      expect((await sdk(bm.image(bucket, `${origin.url}/un`))).status).toBe(200);
      origin.serve('/un/a.txt', Buffer.from('a'));
      origin.serve('/un/b.txt', Buffer.from('b'));
      expect((await get(bucket, 'a.txt')).text).toBe('a');
      expect((await sdk(bm.unimage(bucket))).status).toBe(200);
      expectError(await get(bucket, 'b.txt'), 404);
      expect(origin.hits.get('/un/b.txt')).toBeUndefined();
      // What was pulled before stays.
      expect((await get(bucket, 'a.txt')).text).toBe('a');
    });
  });

  describe('private bucket', () => {
    it('requires the download token before pulling', async () => {
      origin.serve('/priv/secret.txt', Buffer.from('mirrored secret'));
      expectError(await get(PRIV, 'secret.txt'), 401);
      expect(origin.hits.get('/priv/secret.txt')).toBeUndefined();

      const deadline = Math.floor(Date.now() / 1000) + 600;
      const signed = s.bucketManager().privateDownloadUrl(`${s.url}/${PRIV}`, 'secret.txt', deadline);
      const ok = await readAnswer(await fetch(signed));
      expect(ok.status).toBe(200);
      expect(ok.text).toBe('mirrored secret');
      expect(origin.hits.get('/priv/secret.txt')).toBe(1);
    });
  });

  describe('prefetch', () => {
    it('replaces the stored copy with what the origin serves now', async () => {
      const key = 'changing.txt';
      origin.serve('/base/changing.txt', Buffer.from('version 1'));
      expect((await get(PUB, key)).text).toBe('version 1');

      const v2 = Buffer.from('version 2, longer');
      origin.serve('/base/changing.txt', v2);
      expect((await get(PUB, key)).text).toBe('version 1');
      const r = await sdk(s.bucketManager().prefetch(PUB, key));
      expect(r.status).toBe(200);
      const after = await fetch(s.url + pathOf(PUB, key));
      expect(Buffer.from(await after.arrayBuffer()).equals(v2)).toBe(true);
      expect(after.headers.get('etag')).toBe(`"${qetag(v2)}"`);
      expect(origin.hits.get('/base/changing.txt')).toBe(2);
    });

    it('creates a missing entry', async () => {
      origin.serve('/base/fresh.txt', Buffer.from('fresh'));
      expect((await sdk(s.bucketManager().prefetch(PUB, 'fresh.txt'))).status).toBe(200);
      expect((await get(PUB, 'fresh.txt')).text).toBe('fresh');
      expect(origin.hits.get('/base/fresh.txt')).toBe(1);
    });

    it('answers 478 when the origin fails and keeps the stored copy', async () => {
      const key = 'keep.txt';
      origin.serve('/base/keep.txt', Buffer.from('kept'));
      expect((await get(PUB, key)).text).toBe('kept');
      origin.fail('/base/keep.txt', 500);
      const failed = await sdk<ErrorBody>(s.bucketManager().prefetch(PUB, key));
      expect(failed.status).toBe(478);
      expect(failed.data.error).toMatch(/500/);
      origin.fail('/base/keep.txt', 404);
      expect((await sdk<ErrorBody>(s.bucketManager().prefetch(PUB, key))).status).toBe(478);
      expect((await get(PUB, key)).text).toBe('kept');
    });

    it('answers 400 for a bucket without a mirror source, 631 for a missing bucket', async () => {
      const r = await sdk<ErrorBody>(s.bucketManager().prefetch(BARE, 'x'));
      expect(r.status).toBe(400);
      expect(r.data.error).toMatch(/mirror source/);
      expect((await sdk(s.bucketManager().prefetch('no-such-bucket', 'x'))).status).toBe(631);
    });
  });
});

describe('mirror source without GRANARY_OUTBOUND_ALLOW', () => {
  let s: TestServer;
  let origin: Origin;

  beforeAll(async () => {
    origin = await startOrigin();
    s = await startTestServer();
    await createBucket(s, 'guarded');
    expect((await sdk(s.bucketManager().image('guarded', origin.url))).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
    await origin.close();
  });

  it('a miss answers the guard error and the origin sees no connection', async () => {
    origin.serve('/k.txt', Buffer.from('never'));
    const a = readAnswer(await fetch(`${s.url}/guarded/k.txt`));
    expectError(await a, 403, /GRANARY_OUTBOUND_ALLOW/);
    const p = await sdk<ErrorBody>(s.bucketManager().prefetch('guarded', 'k.txt'));
    expect(p.status).toBe(403);
    expect(p.data.error).toMatch(/GRANARY_OUTBOUND_ALLOW/);
    expect(origin.connections).toBe(0);
    expect(origin.hits.size).toBe(0);
  });
});
