/**
 * Per-bucket CORS rules (docs/development/kodo-protocol.md §8.6 corsRules/set|get) set with the SDK's BucketManager and enforced on the
 * bucket's downloads: preflights (path style and bound domains) and actual GET/HEAD answers for matching and
 * non-matching origins, methods and headers; buckets without rules, uploads and management routes keep the global
 * `*`; updates and clearing; bad input and authorisation.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { rawRequest, signedFetch, upload, type RawResponse } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const RULED = 'cors-ruled';
const PLAIN = 'cors-plain';
const ALICE_B = 'cors-alice';
const DOMAIN = 'cors.settings.test';
const APP = 'https://app.example.com';
const RULES = [
  {
    allowed_origin: [APP, 'https://*.example.org'],
    allowed_method: ['GET', 'head'],
    allowed_header: ['X-Custom', 'Range'],
    exposed_header: ['ETag', 'Content-Length'],
    max_age: 600,
  },
  { allowed_origin: ['http://localhost:*'], allowed_method: ['GET'] },
];

type ErrorBody = { error: string };

let s: TestServer;
let bm: qiniu.rs.BucketManager;
let alice: qiniu.rs.BucketManager;

function req(method: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest({ port: s.running.port, method, path, headers });
}
const preflight = (path: string, origin: string, method = 'GET', headers?: string, extra: Record<string, string> = {}) =>
  req('OPTIONS', path, {
    Origin: origin,
    'Access-Control-Request-Method': method,
    ...(headers ? { 'Access-Control-Request-Headers': headers } : {}),
    ...extra,
  });
const corsHeaders = (r: RawResponse): Record<string, unknown> =>
  Object.fromEntries(Object.entries(r.headers).filter(([k]) => k.startsWith('access-control-')));

beforeAll(async () => {
  s = await startTestServer();
  bm = s.bucketManager();
  await createBucket(s, RULED);
  await createBucket(s, PLAIN);
  await upload(s, RULED, 'a.txt', 'ruled');
  await upload(s, PLAIN, 'a.txt', 'plain');
  await bindDomain(s.running.g, DOMAIN, RULED);
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey), s.zoneConfig());
  expect((await sdk(alice.createBucket(ALICE_B, { regionId: 'z0' }))).status).toBe(200);
}, 60_000);
afterAll(async () => s.stop());

describe('set and get', () => {
  it('getCorsRules answers [] before any rule', async () => {
    const r = await sdk<unknown[]>(bm.getCorsRules(RULED));
    expect(r).toEqual({ status: 200, data: [] });
  });

  it('putCorsRules stores the rules; getCorsRules (POST, and GET) answers them verbatim, as set', async () => {
    const put = await sdk<ErrorBody>(bm.putCorsRules(RULED, RULES));
    expect(put.status, JSON.stringify(put.data)).toBe(200);
    // Kodo returns the rules as set: `head` stays lower case; matching is case-insensitive.
    const expected = RULES;
    expect((await sdk(bm.getCorsRules(RULED))).data).toEqual(expected);
    const viaGet = await signedFetch(s, { method: 'GET', path: `/corsRules/get/${RULED}` });
    expect(viaGet.status).toBe(200);
    expect(await viaGet.json()).toEqual(expected);
  });
});

describe('enforcement', () => {
  it('answers a matching preflight with the rule (origin echoed, methods, headers, max-age, Vary)', async () => {
    const r = await preflight(`/${RULED}/a.txt`, APP, 'GET', 'x-custom, range');
    expect(r.status).toBe(204);
    expect(corsHeaders(r)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'GET, HEAD',
      'access-control-allow-headers': 'x-custom, range',
      'access-control-max-age': '600',
    });
    expect(r.headers.vary).toMatch(/Origin/);
    const wildcard = await preflight(`/${RULED}/a.txt`, 'https://img.cdn.example.org', 'HEAD');
    expect(wildcard.status).toBe(204);
    expect(wildcard.headers['access-control-allow-origin']).toBe('https://img.cdn.example.org');
    const second = await preflight(`/${RULED}/a.txt`, 'http://localhost:5173');
    expect(second.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(second.headers['access-control-max-age']).toBe('0');
  });

  it.each([
    ['origin', 'https://evil.test', 'GET', undefined],
    ['origin scheme', 'http://app.example.com', 'GET', undefined],
    ['method', APP, 'PUT', undefined],
    ['header', APP, 'GET', 'x-custom, authorization'],
  ])('refuses a preflight whose %s matches no rule: 403 JSON without CORS headers', async (_what, origin, method, headers) => {
    const r = await preflight(`/${RULED}/a.txt`, origin, method, headers);
    expect(r.status).toBe(403);
    expect(corsHeaders(r)).toEqual({});
    expect((JSON.parse(r.body.toString()) as ErrorBody).error).toMatch(/CORS/);
  });

  it('an OPTIONS that is not a preflight gets no CORS headers', async () => {
    const r = await req('OPTIONS', `/${RULED}/a.txt`);
    expect(r.status).toBe(204);
    expect(corsHeaders(r)).toEqual({});
  });

  it('actual GET/HEAD: the rule headers for a matching origin, none otherwise, Vary: Origin always', async () => {
    const ok = await req('GET', `/${RULED}/a.txt`, { Origin: APP });
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe('ruled');
    expect(corsHeaders(ok)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-expose-headers': 'X-Log, X-Reqid, ETag, Content-Length',
    });
    expect(ok.headers.vary).toMatch(/Origin/);
    const head = await req('HEAD', `/${RULED}/a.txt`, { Origin: APP });
    expect(head.headers['access-control-allow-origin']).toBe(APP);
    // The second rule allows GET only.
    expect((await req('HEAD', `/${RULED}/a.txt`, { Origin: 'http://localhost:3000' })).headers['access-control-allow-origin']).toBeUndefined();
    const evil = await req('GET', `/${RULED}/a.txt`, { Origin: 'https://evil.test' });
    expect(evil.status).toBe(200);
    expect(corsHeaders(evil)).toEqual({});
    const noOrigin = await req('GET', `/${RULED}/a.txt`);
    expect(corsHeaders(noOrigin)).toEqual({});
    expect(noOrigin.headers.vary).toMatch(/Origin/);
    // Errors about the bucket's objects follow the rules too.
    const missing = await req('GET', `/${RULED}/missing.txt`, { Origin: APP });
    expect(missing.status).toBe(404);
    expect(missing.headers['access-control-allow-origin']).toBe(APP);
  });

  it('bound domains: download preflights and answers follow the rules; an upload preflight keeps the global *', async () => {
    const pf = await preflight('/a.txt', APP, 'GET', undefined, { Host: DOMAIN });
    expect(pf.status).toBe(204);
    expect(pf.headers['access-control-allow-origin']).toBe(APP);
    expect((await preflight('/a.txt', 'https://evil.test', 'GET', undefined, { Host: DOMAIN })).status).toBe(403);
    const got = await req('GET', '/a.txt', { Host: DOMAIN, Origin: APP });
    expect(got.body.toString()).toBe('ruled');
    expect(got.headers['access-control-allow-origin']).toBe(APP);
    expect((await req('GET', '/a.txt', { Host: DOMAIN, Origin: 'https://evil.test' })).headers['access-control-allow-origin']).toBeUndefined();
    const upload = await preflight('/', 'https://evil.test', 'POST', 'content-type', { Host: DOMAIN });
    expect(upload.status).toBe(204);
    expect(upload.headers['access-control-allow-origin']).toBe('*');
  });

  it('a bucket without rules, uploads and management routes keep the global *', async () => {
    const pf = await preflight(`/${PLAIN}/a.txt`, 'https://evil.test', 'GET');
    expect(pf.status).toBe(204);
    expect(pf.headers['access-control-allow-origin']).toBe('*');
    expect((await req('GET', `/${PLAIN}/a.txt`, { Origin: 'https://evil.test' })).headers['access-control-allow-origin']).toBe('*');
    for (const [path, method] of [
      ['/', 'POST'],
      [`/buckets/${RULED}/objects/a.txt/uploads`, 'POST'],
      ['/v2/bucketInfo', 'POST'],
      [`/corsRules/get/${RULED}`, 'POST'],
    ] as const) {
      const r = await preflight(path, 'https://evil.test', method, 'authorization, content-type');
      expect(r.status, path).toBe(204);
      expect(r.headers['access-control-allow-origin'], path).toBe('*');
    }
  });

  it('updating replaces the rules; [] clears them (back to the global *)', async () => {
    expect((await sdk(bm.putCorsRules(RULED, [{ allowed_origin: ['https://other.test'], allowed_method: ['GET'] }]))).status).toBe(200);
    expect((await preflight(`/${RULED}/a.txt`, APP)).status).toBe(403);
    expect((await preflight(`/${RULED}/a.txt`, 'https://other.test')).status).toBe(204);
    expect((await sdk(bm.putCorsRules(RULED, []))).status).toBe(200);
    expect((await sdk(bm.getCorsRules(RULED))).data).toEqual([]);
    const pf = await preflight(`/${RULED}/a.txt`, 'https://evil.test');
    expect(pf.status).toBe(204);
    expect(pf.headers['access-control-allow-origin']).toBe('*');
    expect((await req('GET', `/${RULED}/a.txt`, { Origin: 'https://evil.test' })).headers['access-control-allow-origin']).toBe('*');
  });
});

describe('bad input and authorisation', () => {
  const setRaw = (body: string, contentType = 'application/x-www-form-urlencoded') =>
    signedFetch(s, { path: `/corsRules/set/${RULED}`, body, contentType });

  it.each([
    ['[{', /body: is not valid JSON/],
    ['{"allowed_origin":["*"]}', /body: must be a JSON array/],
    ['[{"allowed_origin":["*"]}]', /rules\[0\]\.allowed_method: is required/],
    ['[{"allowed_origin":["example.com"],"allowed_method":["GET"]}]', /rules\[0\]\.allowed_origin\[0\]/],
    ['[{"allowed_origin":["*"],"allowed_method":["GET"],"max_age":-1}]', /rules\[0\]\.max_age/],
    ['[{"allowed_origin":["*"],"allowed_method":["GET"],"allowed_headers":["x"]}]', /allowed_headers: unknown field/],
    [JSON.stringify(Array.from({ length: 11 }, () => ({ allowed_origin: ['*'], allowed_method: ['GET'] }))), /at most 10/],
  ])('%s → 400 naming the field', async (body, msg) => {
    const r = await setRaw(body);
    expect(r.status).toBe(400);
    expect(((await r.json()) as ErrorBody).error).toMatch(msg);
  });

  it('an empty body is 400; application/json bodies work too', async () => {
    expect((await setRaw('')).status).toBe(400);
    const r = await setRaw(JSON.stringify([{ allowed_origin: ['*'], allowed_method: ['GET'] }]), 'application/json');
    expect(r.status, await r.text()).toBe(200);
    expect((await sdk(bm.getCorsRules(RULED))).data).toEqual([{ allowed_origin: ['*'], allowed_method: ['GET'] }]);
    expect((await sdk(bm.putCorsRules(RULED, []))).status).toBe(200);
  });

  it('unknown bucket 631; another account 403; own bucket 200', async () => {
    expect((await sdk(bm.putCorsRules('no-such-bucket', RULES))).status).toBe(631);
    expect((await sdk(bm.getCorsRules('no-such-bucket'))).status).toBe(631);
    expect((await sdk(alice.putCorsRules(RULED, RULES))).status).toBe(403);
    expect((await sdk(alice.getCorsRules(RULED))).status).toBe(403);
    expect((await sdk(alice.putCorsRules(ALICE_B, RULES))).status).toBe(200);
    expect((await sdk<unknown[]>(alice.getCorsRules(ALICE_B))).data).toHaveLength(2);
    expect((await fetch(`${s.url}/corsRules/get/${RULED}`, { method: 'POST' })).status).toBe(401);
  });
});
