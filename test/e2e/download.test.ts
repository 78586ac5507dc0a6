/**
 * Downloads (docs/development/kodo-protocol.md §11, §2.5): public and private buckets, Range, HEAD, conditional requests, attname,
 * large streamed objects, bound download domains and awkward keys; a GET/HEAD that is no download (no key, or a
 * reserved first segment such as `/v2/…`) answers 404 `no such api`, a missing key 404 `Document not found`.
 */
import { randomBytes } from 'node:crypto';
import qiniu from 'qiniu';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { rawRequest, sha1, sha1OfStream, upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';

const PUB = 'dl-public';
const PRIV = 'dl-private';
const BODY = 'hello world'; // 11 bytes

describe('downloads', () => {
  let s: TestServer;
  let hash: string;

  beforeAll(async () => {
    s = await startTestServer();
    const bm = s.bucketManager();
    expect((await sdk(bm.createBucket(PUB, { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(bm.createBucket(PRIV, { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(bm.putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
    hash = (await upload(s, PUB, 'hello.txt', BODY, { mimeType: 'text/x-granary' })).hash;
    await upload(s, PRIV, 'secret.txt', 'top secret');
  });
  afterAll(async () => s.stop());
  afterEach(() => {
    s.clock.offsetMs = 0;
  });

  const url = (bucket: string, key: string): string =>
    `${s.url}/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;

  describe('public bucket', () => {
    it('serves the object with its metadata headers', async () => {
      const before = Date.now();
      const res = await fetch(url(PUB, 'hello.txt'));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(BODY);
      expect(res.headers.get('content-type')).toBe('text/x-granary');
      expect(res.headers.get('etag')).toBe(`"${hash}"`);
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(res.headers.get('content-length')).toBe(String(BODY.length));
      expect(res.headers.get('x-reqid')).toMatch(/^\S{8,}$/);
      const lastModified = Date.parse(res.headers.get('last-modified') ?? '');
      expect(lastModified).toBeGreaterThan(before - 120_000);
      expect(lastModified).toBeLessThanOrEqual(Date.now());
    });

    it.each([
      ['bytes=0-1', 'he', 'bytes 0-1/11'],
      ['bytes=-2', 'ld', 'bytes 9-10/11'],
      ['bytes=5-', ' world', 'bytes 5-10/11'],
      ['bytes=6-100', 'world', 'bytes 6-10/11'],
    ])('Range %s → 206 %j', async (range, body, contentRange) => {
      const res = await fetch(url(PUB, 'hello.txt'), { headers: { Range: range } });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe(body);
      expect(res.headers.get('content-range')).toBe(contentRange);
      expect(res.headers.get('content-length')).toBe(String(body.length));
    });

    it('answers an unsatisfiable Range with 416 JSON and Content-Range: bytes */<size>', async () => {
      const res = await fetch(url(PUB, 'hello.txt'), { headers: { Range: 'bytes=11-20' } });
      expect(res.status).toBe(416);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('content-range')).toBe('bytes */11');
      expect(await res.json()).toEqual({ error: 'requested range not satisfiable' });
      const head = await rawRequest({ port: s.running.port, method: 'HEAD', path: `/${PUB}/hello.txt`, headers: { Range: 'bytes=99-' } });
      expect(head.status).toBe(416);
      expect(head.headers['content-range']).toBe('bytes */11');
      expect(head.body.length).toBe(0);
    });

    it('answers HEAD with the headers and no body', async () => {
      const res = await rawRequest({ port: s.running.port, method: 'HEAD', path: `/${PUB}/hello.txt` });
      expect(res.status).toBe(200);
      expect(res.body.length).toBe(0);
      expect(res.headers['content-length']).toBe(String(BODY.length));
      expect(res.headers['etag']).toBe(`"${hash}"`);
      expect(res.headers['content-type']).toBe('text/x-granary');
    });

    it('answers 304 to If-None-Match with the ETag and to If-Modified-Since', async () => {
      const first = await fetch(url(PUB, 'hello.txt'));
      const etag = first.headers.get('etag') ?? '';
      const lastModified = first.headers.get('last-modified') ?? '';
      await first.arrayBuffer();
      const byEtag = await fetch(url(PUB, 'hello.txt'), { headers: { 'If-None-Match': etag } });
      expect(byEtag.status).toBe(304);
      expect(await byEtag.text()).toBe('');
      const otherEtag = await fetch(url(PUB, 'hello.txt'), { headers: { 'If-None-Match': '"other"' } });
      expect(otherEtag.status).toBe(200);
      await otherEtag.arrayBuffer();
      const byDate = await fetch(url(PUB, 'hello.txt'), { headers: { 'If-Modified-Since': lastModified } });
      expect(byDate.status).toBe(304);
      await byDate.arrayBuffer();
      const older = new Date(Date.parse(lastModified) - 3600_000).toUTCString();
      const byOldDate = await fetch(url(PUB, 'hello.txt'), { headers: { 'If-Modified-Since': older } });
      expect(byOldDate.status).toBe(200);
      expect(await byOldDate.text()).toBe(BODY);
    });

    it('sets Content-Disposition: attachment for attname', async () => {
      const res = await fetch(`${url(PUB, 'hello.txt')}?attname=${encodeURIComponent('report 1.txt')}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-disposition')).toMatch(/^attachment;\s*filename="report 1\.txt"/);
      expect(await res.text()).toBe(BODY);
    });

    it('answers 404 JSON Document not found for a missing key and a missing bucket', async () => {
      for (const u of [url(PUB, 'nope.txt'), url('no-such-bucket', 'hello.txt'), url(PUB, 'v2/nope')]) {
        const res = await fetch(u);
        expect(res.status, u).toBe(404);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await res.json()).toEqual({ error: 'Document not found' });
      }
    });

    it('ignores e/token on a public bucket', async () => {
      const res = await fetch(`${url(PUB, 'hello.txt')}?e=1&token=nobody:bogus`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(BODY);
    });

    it('sends x-qn-meta metadata as X-Qn-Meta-* headers', async () => {
      const up = new qiniu.form_up.FormUploader(s.zoneConfig());
      const extra = new qiniu.form_up.PutExtra(undefined, undefined, undefined, undefined, undefined, {
        'x-qn-meta-color': 'red',
      });
      const r = await sdk(up.put(s.uploadToken({ scope: PUB }), 'meta.txt', Buffer.from('m'), extra));
      expect(r.status).toBe(200);
      const res = await fetch(url(PUB, 'meta.txt'));
      expect(res.headers.get('x-qn-meta-color')).toBe('red');
      expect(await res.text()).toBe('m');
    });

    it('metadata that cannot be header content still downloads: non-ASCII and CR LF values RFC 2047-encoded, bad names left out', async () => {
      const up = new qiniu.form_up.FormUploader(s.zoneConfig());
      const meta = { 'x-qn-meta-author': '张三 😀', 'x-qn-meta-note': 'one\r\nX-Injected: 1', 'x-qn-meta-bad name': 'v', 'x-qn-meta-ok': 'plain' };
      const extra = new qiniu.form_up.PutExtra(undefined, undefined, undefined, undefined, undefined, meta);
      const r = await sdk(up.put(s.uploadToken({ scope: PUB }), 'meta-odd.txt', Buffer.from('m'), extra));
      expect(r.status).toBe(200);
      const res = await fetch(url(PUB, 'meta-odd.txt'));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('m');
      const word = (v: string): string => `=?UTF-8?B?${Buffer.from(v).toString('base64')}?=`;
      expect(res.headers.get('x-qn-meta-author')).toBe(word('张三 😀'));
      expect(res.headers.get('x-qn-meta-note')).toBe(word('one\r\nX-Injected: 1'));
      expect(res.headers.get('x-injected')).toBeNull();
      expect(res.headers.get('x-qn-meta-ok')).toBe('plain');
      expect([...res.headers.keys()].filter((k) => k.startsWith('x-qn-meta-'))).toEqual(['x-qn-meta-author', 'x-qn-meta-note', 'x-qn-meta-ok']);
      const stat = await sdk<{ 'x-qn-meta': Record<string, string> }>(s.bucketManager().stat(PUB, 'meta-odd.txt'));
      expect(stat.data['x-qn-meta']).toEqual({ author: '张三 😀', note: 'one\r\nX-Injected: 1', 'bad name': 'v', ok: 'plain' });
    });
  });

  describe('private bucket', () => {
    const domain = (): string => `${s.url}/${PRIV}`;
    const deadline = (): number => Math.floor(Date.now() / 1000) + 3600;

    it('refuses a download without a token with 401', async () => {
      const res = await fetch(url(PRIV, 'secret.txt'));
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    });

    it('serves a privateDownloadUrl', async () => {
      const signed = s.bucketManager().privateDownloadUrl(domain(), 'secret.txt', deadline());
      const res = await fetch(signed);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('top secret');
    });

    it('refuses an expired deadline with 401', async () => {
      const signed = s.bucketManager().privateDownloadUrl(domain(), 'secret.txt', Math.floor(Date.now() / 1000) + 60);
      expect((await fetch(signed)).status).toBe(200);
      s.clock.advance(120);
      const res = await fetch(signed);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    });

    it('refuses tampered URLs with 401', async () => {
      await upload(s, PRIV, 'other.txt', 'other');
      const signed = s.bucketManager().privateDownloadUrl(domain(), 'secret.txt', deadline());
      const sign = signed.slice(signed.lastIndexOf(':') + 1);
      const flipped = sign[0] === 'A' ? `B${sign.slice(1)}` : `A${sign.slice(1)}`;
      const tampered = [
        signed.slice(0, signed.lastIndexOf(':') + 1) + flipped, // signature changed
        signed.replace('secret.txt', 'other.txt'), // another key under the same token
        signed.replace(/e=(\d+)/, (_m, e: string) => `e=${Number(e) + 1}`), // deadline extended
        signed.replace(/&token=.*$/, ''), // token dropped
      ];
      for (const u of tampered) {
        const res = await fetch(u);
        expect(res.status, u).toBe(401);
        await res.arrayBuffer();
      }
    });

    it('signs keys with spaces and unicode', async () => {
      const key = 'dir/a b ü+1.txt';
      await upload(s, PRIV, key, 'odd');
      const res = await fetch(s.bucketManager().privateDownloadUrl(domain(), key, deadline()));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('odd');
    });
  });

  it('streams a 64 MiB object intact', async () => {
    const big = randomBytes(64 * 1024 * 1024);
    await upload(s, PUB, 'big.bin', big);
    const res = await fetch(url(PUB, 'big.bin'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(big.length));
    expect(await sha1OfStream(res)).toEqual({ sha1: sha1(big), length: big.length });
    const start = 40 * 1024 * 1024 + 7;
    const ranged = await fetch(url(PUB, 'big.bin'), { headers: { Range: `bytes=${start}-${start + 999_999}` } });
    expect(ranged.status).toBe(206);
    expect(sha1(Buffer.from(await ranged.arrayBuffer()))).toBe(sha1(big.subarray(start, start + 1_000_000)));
  });

  describe('unknown routes', () => {
    const noSuchApi = async (method: string, path: string): Promise<void> => {
      const res = await rawRequest({ port: s.running.port, method, path });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^application\/json/);
      expect(res.headers['x-reqid'], path).toMatch(/^\S{8,}$/);
      if (method !== 'HEAD') expect(JSON.parse(res.body.toString()), path).toEqual({ error: 'no such api' });
    };

    it.each(['/nope', '/favicon.ico', `/${PUB}`])('GET %s names no key → 404 no such api', async (path) => {
      await noSuchApi('GET', path);
    });

    it.each(['/v2/nope', '/v4/nope', '/STAT/x', '/Buckets/x/y', '/list/'])(
      'GET %s starts with a reserved bucket name → 404 no such api',
      async (path) => {
        await noSuchApi('GET', path);
      },
    );

    // A path another method answers is Kodo's 405, with Allow.
    it.each(['/', '/delete/x'])('GET %s (a POST route) → 405 method not allowed, Allow: POST', async (path) => {
      const res = await rawRequest({ port: s.running.port, method: 'GET', path });
      expect(res.status, path).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.headers['x-reqid']).toMatch(/^\S{8,}$/);
      // GET / also says what the port is and where the console and the docs are (allowed-methods.ts rootHint).
      const error = (JSON.parse(res.body.toString()) as { error: string }).error;
      if (path === '/') expect(error).toMatch(/^method not allowed: GET \/ \(this is Granary's Kodo API port: .*web console.*docs/);
      else expect(error).toBe(`method not allowed: GET ${path}`);
    });

    it('HEAD /v2/nope and POST /nope answer 404 too', async () => {
      await noSuchApi('HEAD', '/v2/nope');
      await noSuchApi('HEAD', '/nope');
      await noSuchApi('POST', '/nope/x');
    });

    it('leaves the GET API routes under reserved words alone', async () => {
      const query = await fetch(`${s.url}/v4/query?ak=${s.mac.accessKey}&bucket=${PUB}`);
      expect(query.status).toBe(200);
      await query.arrayBuffer();
      // Unsigned: the route answers 401, not the catch-all's 404.
      for (const path of ['/v2/list?bucket=x', '/list?bucket=x', '/buckets', `/stat/${qiniu.util.encodedEntry(PUB, 'hello.txt')}`]) {
        const res = await fetch(`${s.url}${path}`);
        expect(res.status, path).toBe(401);
        await res.arrayBuffer();
      }
    });
  });

  describe('bound domain', () => {
    const DOMAIN = 'dl.example.test';
    beforeAll(async () => {
      await bindDomain(s.running.g, DOMAIN, PUB);
      await upload(s, PUB, 'stat', 'key named stat');
      await upload(s, PUB, 'buckets/x', 'key named buckets/x');
      await upload(s, PUB, 'v4/query', 'key named v4/query');
    });
    const get = (path: string, host = DOMAIN, method = 'GET') =>
      rawRequest({ port: s.running.port, method, path, headers: { Host: host } });

    it('serves /<key> on the bound Host', async () => {
      const res = await get('/hello.txt');
      expect(res.status).toBe(200);
      expect(res.body.toString()).toBe(BODY);
      expect(res.headers['etag']).toBe(`"${hash}"`);
      const withPort = await get('/hello.txt', `${DOMAIN}:${s.running.port}`);
      expect(withPort.body.toString()).toBe(BODY);
      const head = await get('/hello.txt', DOMAIN, 'HEAD');
      expect(head.status).toBe(200);
      expect(head.headers['content-length']).toBe(String(BODY.length));
    });

    it.each(['stat', 'buckets/x', 'v4/query'])('serves key %j although it looks like an API path', async (key) => {
      const res = await get(`/${key}`);
      expect(res.status).toBe(200);
      expect(res.body.toString()).toBe(`key named ${key}`);
    });

    it('verifies private download URLs signed for the bound domain', async () => {
      await bindDomain(s.running.g, 'priv.example.test', PRIV);
      const signed = new URL(s.bucketManager().privateDownloadUrl('http://priv.example.test', 'secret.txt', Math.floor(Date.now() / 1000) + 600));
      const ok = await get(signed.pathname + signed.search, 'priv.example.test');
      expect(ok.status).toBe(200);
      expect(ok.body.toString()).toBe('top secret');
      // The same token presented on another host does not verify (the host is part of the signed URL).
      const elsewhere = await get(`/${PRIV}${signed.pathname}${signed.search}`, `127.0.0.1:${s.running.port}`);
      expect(elsewhere.status).toBe(401);
      expect((await get(signed.pathname, 'priv.example.test')).status).toBe(401);
    });

    it('answers 404 for a missing key and leaves other hosts alone', async () => {
      for (const path of ['/missing', '/v2/nope', '/', '/STAT/x']) {
        const missing = await get(path);
        expect(missing.status, path).toBe(404);
        expect(JSON.parse(missing.body.toString()), path).toEqual({ error: 'Document not found' });
      }
      // On an unbound host the same path is path-style: /<bucket>/<key>.
      const other = await get(`/${PUB}/hello.txt`, `127.0.0.1:${s.running.port}`);
      expect(other.body.toString()).toBe(BODY);
      const unbound = await get('/hello.txt', 'other.example.test');
      expect(unbound.status).toBe(404);
    });
  });

  describe('awkward keys', () => {
    const keys = ['with space.txt', 'ünïcødé/文件.txt', 'a+b=c&d.txt', 'q?x=1#frag', '100%.txt', '/leading', 'tail/'];
    beforeAll(async () => {
      for (const key of keys) await upload(s, PUB, key, `body of ${key}`);
    });

    it.each(keys)('round-trips %j with per-segment encodeURIComponent', async (key) => {
      const res = await fetch(url(PUB, key));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`body of ${key}`);
    });

    it.each(keys.filter((k) => !/[?#%]/.test(k)))('round-trips %j via bm.publicDownloadUrl', async (key) => {
      const res = await fetch(s.bucketManager().publicDownloadUrl(`${s.url}/${PUB}`, key));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`body of ${key}`);
    });

    it('does not decode + as a space', async () => {
      const res = await fetch(url(PUB, 'a b=c&d.txt'));
      expect(res.status).toBe(404);
      await res.arrayBuffer();
    });
  });
});
