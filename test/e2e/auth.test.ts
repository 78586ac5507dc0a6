/**
 * Region discovery (docs/development/kodo-protocol.md §1.2; an AccessKey that does not exist → 612 as on Kodo), management signatures
 * (§2.2–2.3, §14 items 1 and 14), the common response headers and JSON error bodies (§12, §14 item 4) and CORS.
 */
import qiniu from 'qiniu';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { qiniuDate, rawRequest, signedFetch, upload } from '../helpers/http.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { recordRequests } from '../helpers/upload.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  expect((await sdk(s.bucketManager().createBucket('auth-bucket', { regionId: 'z0' }))).status).toBe(200);
  await upload(s, 'auth-bucket', 'hello.txt', 'hello');
});
afterAll(async () => s.stop());
afterEach(() => {
  s.clock.offsetMs = 0;
});

describe('region query', () => {
  it('GET /v4/query names every service at this server', async () => {
    const res = await fetch(`${s.url}/v4/query?ak=${AK}&bucket=auth-bucket`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as { hosts: Array<Record<string, unknown>> };
    expect(body.hosts).toHaveLength(1);
    const region = body.hosts[0]!;
    expect(region.region).toBe('z0');
    expect(region.ttl).toEqual(expect.any(Number));
    for (const service of ['up', 'io', 'io_src', 'rs', 'rsf', 'api', 'uc', 's3']) {
      expect(region[service], service).toMatchObject({ domains: [s.host] });
    }
    expect(region.s3).toMatchObject({ region_alias: 'z0' });
    expect(region.up).toMatchObject({ acc_domains: [], old: [] });
  });

  it('answers /v2/query, /v3/query and /regions', async () => {
    const v2 = await fetch(`${s.url}/v2/query?ak=${AK}&bucket=auth-bucket`);
    expect(v2.status).toBe(200);
    expect(await v2.json()).toMatchObject({ up: { acc: { main: [s.host] }, src: { main: [s.host] } }, io: { src: { main: [s.host] } } });
    // v3 is the v2 shape in `hosts[]` (sdk-compat-discovery.test.ts has the SDKs' parsers).
    const v3 = await fetch(`${s.url}/v3/query?ak=${AK}&bucket=auth-bucket`);
    expect(v3.status).toBe(200);
    expect(await v3.json()).toMatchObject({ hosts: [{ rs: { acc: { main: [s.host] } }, uc: { acc: { main: [s.host] } } }] });
    // /regions names each region's hosts.
    const regions = await fetch(`${s.url}/regions`);
    expect(regions.status).toBe(200);
    expect(await regions.json()).toMatchObject({ regions: [{ id: 'z0', description: expect.any(String), up: { domains: [s.host] } }] });
  });

  it('lets the SDK discover the hosts, create a bucket and upload', async () => {
    const config = s.discoveryConfig();
    const bm = s.bucketManager(config);
    expect((await sdk(bm.createBucket('discovered', { regionId: 'z0' }))).status).toBe(200);
    const r = await upload(s, 'discovered', 'd.txt', 'found me', { config });
    expect(r.key).toBe('d.txt');
    const res = await fetch(`${s.url}/discovered/d.txt`);
    expect(await res.text()).toBe('found me');
  });

  it('refuses an AccessKey that does not exist like Kodo: 612 {"error":"app/accesskey is not found"} (v4, v3, v2)', async () => {
    for (const path of ['/v4/query?ak=nobody&bucket=auth-bucket', '/v3/query?ak=nobody&bucket=auth-bucket', '/v2/query?ak=nobody&bucket=x', '/v4/query?bucket=auth-bucket', '/v4/query?ak=&bucket=auth-bucket']) {
      const res = await fetch(`${s.url}${path}`);
      expect(res.status, path).toBe(612);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
      expect(await res.json(), path).toEqual({ error: 'app/accesskey is not found' });
    }
    const post = await fetch(`${s.url}/v4/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'ak=nobody&bucket=auth-bucket',
    });
    expect(post.status).toBe(612);
  });

  it("the SDK's region query rejects an unknown AccessKey at once (612 is not retried)", async () => {
    const log = recordRequests(s);
    try {
      const ep = new qiniu.httpc.Endpoint(s.host, { defaultScheme: 'http' });
      // Two query hosts: a retryable answer would be sent to the second one; 612 is final.
      const provider = new qiniu.httpc.QueryRegionsProvider({
        accessKey: 'nobody',
        bucketName: 'auth-bucket',
        endpointsProvider: new qiniu.httpc.StaticEndpointsProvider([ep, ep]),
        preferredScheme: 'http',
      });
      await expect(provider.getRegions()).rejects.toThrow(/Query regions failed with HTTP Status Code 612.*app\/accesskey is not found/);
      expect(log.seen.filter((l) => l.startsWith('GET /v4/query?'))).toHaveLength(1);
    } finally {
      log.stop();
    }
  });

  it('an account key discovers the hosts too: bucket creation and upload through /v4/query', async () => {
    const pair = await s.running.g.keyIndex.create(0);
    // A bucket the key cannot use is 631, as on Kodo: before the bucket exists, and for another
    // account's bucket.
    for (const bucket of ['acct-discovered', 'auth-bucket']) {
      expect((await fetch(`${s.url}/v4/query?ak=${pair.accessKey}&bucket=${bucket}`)).status, bucket).toBe(631);
    }
    const bm = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey), s.discoveryConfig());
    expect((await sdk(bm.createBucket('acct-discovered', { regionId: 'z0' }))).status).toBe(200);
    const q = await fetch(`${s.url}/v4/query?ak=${pair.accessKey}&bucket=acct-discovered`);
    expect(q.status).toBe(200);
    expect(((await q.json()) as { hosts: unknown[] }).hosts).toHaveLength(1);
    const token = new qiniu.rs.PutPolicy({ scope: 'acct-discovered' } as qiniu.rs.PutPolicyOptions).uploadToken(
      new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey),
    );
    const r = await sdk<{ key: string }>(
      new qiniu.form_up.FormUploader(s.discoveryConfig()).put(token, 'a.txt', Buffer.from('account data'), new qiniu.form_up.PutExtra()),
    );
    expect(r).toMatchObject({ status: 200, data: { key: 'a.txt' } });
  });
});

describe('management signatures', () => {
  it('refuses a request without Authorization with 401 JSON', async () => {
    const res = await fetch(`${s.url}/buckets`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('refuses a bad signature, a wrong secret and an unknown AccessKey with 401', async () => {
    const good = qiniu.util.generateAccessTokenV2(s.mac, `${s.url}/buckets`, 'POST', 'application/x-www-form-urlencoded');
    const variants = [
      good.slice(0, -2) + (good.endsWith('A=') ? 'B=' : 'A='),
      qiniu.util.generateAccessTokenV2(new qiniu.auth.digest.Mac(AK, 'wrong'), `${s.url}/buckets`, 'POST', ''),
      qiniu.util.generateAccessTokenV2(new qiniu.auth.digest.Mac('nobody', SK), `${s.url}/buckets`, 'POST', ''),
      // Signed for another path.
      qiniu.util.generateAccessTokenV2(s.mac, `${s.url}/v2/domains`, 'POST', ''),
      'Bearer abc',
      'Qiniu no-colon',
    ];
    for (const authorization of variants) {
      const res = await fetch(`${s.url}/buckets`, {
        method: 'POST',
        headers: { Authorization: authorization, 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status, authorization).toBe(401);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
  });

  it('accepts a correctly signed Qiniu request (control for the cases above)', async () => {
    const res = await signedFetch(s, { path: '/buckets' });
    expect(res.status).toBe(200);
    expect(await res.json()).toContain('auth-bucket');
  });

  it('accepts a QBox-signed request, with and without a form body', async () => {
    const list = await signedFetch(s, { scheme: 'QBox', path: '/buckets' });
    expect(list.status).toBe(200);
    expect(await list.json()).toContain('auth-bucket');
    const priv = await signedFetch(s, { scheme: 'QBox', path: '/private', body: 'bucket=auth-bucket&private=1' });
    expect(priv.status).toBe(200);
    const info = await sdk<{ private: number }>(s.bucketManager().getBucketInfo('auth-bucket'));
    expect(info.data.private).toBe(1);
    const back = await signedFetch(s, { scheme: 'QBox', path: '/private?bucket=auth-bucket&private=0' });
    expect(back.status).toBe(200);
    // A QBox signature over a different body is refused.
    const url = `${s.url}/private`;
    const forged = await fetch(url, {
      method: 'POST',
      headers: {
        Authorization: qiniu.util.generateAccessToken(s.mac, url, 'bucket=auth-bucket&private=0'),
        'Content-Type': 'application/x-www-form-urlencoded',
      },
      body: 'bucket=auth-bucket&private=1',
    });
    expect(forged.status).toBe(401);
  });

  it('refuses a stale X-Qiniu-Date with 403 and accepts a fresh one', async () => {
    const stale = await signedFetch(s, { path: '/buckets', headers: { 'X-Qiniu-Date': '19700101T000000Z' } });
    expect(stale.status).toBe(403);
    expect(await stale.json()).toEqual({ error: expect.any(String) });
    const fresh = await signedFetch(s, { path: '/buckets', headers: { 'X-Qiniu-Date': qiniuDate(new Date()) } });
    expect(fresh.status).toBe(200);
    // The date is signed: changing it after signing breaks the signature (401), not the window (403).
    const url = `${s.url}/buckets`;
    const authorization = qiniu.util.generateAccessTokenV2(s.mac, url, 'POST', 'application/x-www-form-urlencoded', undefined, {
      'X-Qiniu-Date': qiniuDate(new Date()),
    });
    const swapped = await fetch(url, {
      method: 'POST',
      headers: { Authorization: authorization, 'X-Qiniu-Date': '19700101T000000Z', 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(swapped.status).toBe(401);
  });

  it('refuses SDK calls when the server clock is far from the signed date, unless timestamps are disabled', async () => {
    s.clock.advance(3600);
    const skewed = await sdk(s.bucketManager().listBucket());
    expect(skewed.status).toBe(403);
    const noDate = new qiniu.auth.digest.Mac(AK, SK, { disableQiniuTimestampSignature: true });
    const bm = new qiniu.rs.BucketManager(noDate, s.zoneConfig());
    const r = await sdk<string[]>(bm.listBucket());
    expect(r.status).toBe(200);
    expect(r.data).toContain('auth-bucket');
  });
});

describe('common headers', () => {
  it('puts X-Reqid on every response, and JSON on every error', async () => {
    const cases: Array<[string, Promise<Response>, number]> = [
      ['query', fetch(`${s.url}/v4/query?ak=${AK}&bucket=auth-bucket`), 200],
      ['download', fetch(`${s.url}/auth-bucket/hello.txt`), 200],
      ['signed', signedFetch(s, { path: '/buckets' }), 200],
      ['unauthorized', fetch(`${s.url}/buckets`, { method: 'POST' }), 401],
      ['missing key', fetch(`${s.url}/auth-bucket/none`), 404],
      ['unknown route', fetch(`${s.url}/no/such/api`, { method: 'POST' }), 404],
      ['bad bucket name', signedFetch(s, { path: '/mkbucketv3/BAD_NAME' }), 400],
      ['missing bucket', signedFetch(s, { path: '/v2/bucketInfo?bucket=nope-nope' }), 612],
      ['bucket exists', signedFetch(s, { path: '/mkbucketv3/auth-bucket' }), 614],
    ];
    const ids = new Set<string>();
    for (const [name, pending, status] of cases) {
      const res = await pending;
      expect(res.status, name).toBe(status);
      const id = res.headers.get('x-reqid');
      expect(id, name).toMatch(/^\S{8,}$/);
      ids.add(id ?? '');
      const text = await res.text();
      if (status >= 400) {
        expect(res.headers.get('content-type'), name).toMatch(/^application\/json/);
        expect(JSON.parse(text), name).toEqual({ error: expect.any(String) });
      }
    }
    expect(ids.size).toBe(cases.length);
  });

  it('answers a malformed percent-encoded path with 400 JSON and X-Reqid', async () => {
    const res = await rawRequest({ port: s.running.port, path: '/auth-bucket/%E0%A4%A' });
    expect(res.status).toBe(400);
    expect(res.headers['x-reqid']).toMatch(/^\S{8,}$/);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body.toString())).toEqual({ error: expect.any(String) });
  });

  it('answers an over-long path parameter with 414 JSON and X-Reqid', async () => {
    // Injected: over the socket, Node's 16 KiB header limit refuses such a request line (431) before fastify.
    const res = await s.running.app.inject({ method: 'POST', url: `/bput/${'c'.repeat(16 * 1024 + 1)}/0` });
    expect(res.statusCode).toBe(414);
    expect(res.headers['x-reqid']).toMatch(/^\S{8,}$/);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: expect.stringMatching(/^request URI too long: /) });
  });

  it('answers a bare OPTIONS (no Origin) with an empty body, not plain text', async () => {
    const res = await rawRequest({ port: s.running.port, method: 'OPTIONS', path: '/' });
    expect(res.status).toBeLessThan(300);
    expect(res.body.length).toBe(0);
    expect(res.headers['x-reqid']).toMatch(/^\S{8,}$/);
  });
});

describe('CORS', () => {
  const preflight = {
    Origin: 'http://app.example.test',
    'Access-Control-Request-Method': 'PUT',
    'Access-Control-Request-Headers': 'authorization,content-md5',
  };

  it.each(['/', '/auth-bucket/hello.txt', '/buckets/auth-bucket/objects/k/uploads'])(
    'answers the preflight on %s',
    async (path) => {
      const res = await rawRequest({ port: s.running.port, method: 'OPTIONS', path, headers: preflight });
      expect([200, 204]).toContain(res.status);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      const methods = String(res.headers['access-control-allow-methods']).toUpperCase();
      for (const m of ['GET', 'POST', 'PUT']) expect(methods).toContain(m);
      const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
      for (const h of ['authorization', 'content-md5', 'content-type']) expect(allowed).toContain(h);
    },
  );

  it('allows any origin on GET and exposes X-Reqid', async () => {
    const res = await fetch(`${s.url}/auth-bucket/hello.txt`, { headers: { Origin: 'http://app.example.test' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(exposed).toContain('x-reqid');
    expect(exposed).toContain('x-log');
    await res.arrayBuffer();
  });

  it('puts CORS headers on error responses too', async () => {
    const res = await fetch(`${s.url}/buckets`, { method: 'POST', headers: { Origin: 'http://app.example.test' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    await res.arrayBuffer();
  });
});
