/**
 * Upload callbacks (docs/development/kodo-protocol.md §4.3, §2.6, §3.1 callback fields) against a local application server: form and
 * JSON bodies, the QBox signature verified with the SDK's own `isQiniuCallback`, the application's JSON relayed to
 * the uploader, fail-over across `;`-separated URLs, and 579 (object kept) when every URL fails, when the outbound
 * guard refuses loopback, and when the application does not answer in time.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackApp, type AppRequest, type CallbackApp } from '../helpers/callback-app.js';
import { qetag } from '../helpers/etag.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';

const BUCKET = 'callbacks';
const CONTENT = Buffer.from('callback me');
let s: TestServer;
let app: CallbackApp;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32', GRANARY_CALLBACK_TIMEOUT: '1' });
  await createBucket(s, BUCKET);
  app = await startCallbackApp();
  app.on('/ok', (req) => ({ status: 200, json: { ok: true, path: '/ok', received: req.body } }));
  app.on('/fail', () => ({ status: 500, json: { error: 'app is down' } }));
  app.on('/not-json', () => ({ status: 200, text: 'this is not JSON' }));
  app.on('/hang', () => 'hang');
  app.on('/fetchkey', () => ({ status: 200, json: { key: 'chosen/by-app.txt', payload: { accepted: true } } }));
  app.on('/fetchkey-taken', () => ({ status: 200, json: { key: 'taken.txt', payload: { accepted: true } } }));
  app.on('/fetchkey-nokey', () => ({ status: 200, json: { payload: { accepted: true } } }));
});
afterAll(async () => {
  await app?.close();
  await s?.stop();
});

interface Answer {
  status: number;
  data: Record<string, unknown>;
}

function put(server: TestServer, policy: Record<string, unknown>, key: string, extra = new qiniu.form_up.PutExtra()): Promise<Answer> {
  const up = new qiniu.form_up.FormUploader(server.zoneConfig());
  return sdk<Record<string, unknown>>(up.put(server.uploadToken({ scope: BUCKET, ...policy }), key, CONTENT, extra));
}

/** The requests the app received during `fn`. */
async function during(fn: () => Promise<Answer>): Promise<{ r: Answer; got: AppRequest[] }> {
  const before = app.requests.length;
  const r = await fn();
  return { r, got: app.requests.slice(before) };
}

function expectSigned(req: AppRequest, url: string): void {
  const auth = String(req.headers.authorization);
  expect(auth).toMatch(/^QBox /);
  expect(qiniu.util.isQiniuCallback(s.mac, url, req.body, auth)).toBe(true);
  // The signature covers the body: a different body does not verify.
  expect(qiniu.util.isQiniuCallback(s.mac, url, `${req.body}&tampered=1`, auth)).toBe(false);
}

describe('callback bodies', () => {
  it('form callbackBody: rendered, URL-encoded, signed; the app answer is relayed', async () => {
    const url = `${app.base}/ok?from=granary`;
    const callbackBody = 'key=$(key)&hash=$(etag)&fname=$(fname)&fsize=$(fsize)&mime=$(mimeType)&user=$(x:user)&bucket=$(bucket)';
    const user = 'a b&c=d/é';
    const extra = new qiniu.form_up.PutExtra('orig name.txt', { 'x:user': user }, 'text/plain');
    const { r, got } = await during(() => put(s, { callbackUrl: url, callbackBody, returnBody: '{"ignored":true}' }, 'form-cb.txt', extra));

    expect(got).toHaveLength(1);
    const req = got[0] as AppRequest;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/ok?from=granary');
    expect(req.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expectSigned(req, url);
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      key: 'form-cb.txt',
      hash: qetag(CONTENT),
      fname: 'orig name.txt',
      fsize: String(CONTENT.length),
      mime: 'text/plain',
      user,
      bucket: BUCKET,
    });
    // The uploader gets exactly what the app answered (returnBody is not used with a callback).
    expect(r).toEqual({ status: 200, data: { ok: true, path: '/ok', received: req.body } });
    await expectStored(s, BUCKET, 'form-cb.txt', CONTENT);
  });

  it('JSON callbackBody (callbackBodyType application/json): bare and quoted placeholders, signed with the body', async () => {
    const url = `${app.base}/ok`;
    const callbackBody = '{"key":$(key),"hash":$(etag),"fsize":$(fsize),"user":$(x:user),"note":"k=$(key)"}';
    const extra = new qiniu.form_up.PutExtra('a.txt', { 'x:user': 'say "hi"' });
    const { r, got } = await during(() =>
      put(s, { callbackUrl: url, callbackBody, callbackBodyType: 'application/json' }, 'json-cb.txt', extra),
    );
    expect(got).toHaveLength(1);
    const req = got[0] as AppRequest;
    expect(req.headers['content-type']).toMatch(/^application\/json/);
    expectSigned(req, url);
    expect(JSON.parse(req.body)).toEqual({
      key: 'json-cb.txt',
      hash: qetag(CONTENT),
      fsize: CONTENT.length,
      user: 'say "hi"',
      note: 'k=json-cb.txt',
    });
    expect(r).toEqual({ status: 200, data: { ok: true, path: '/ok', received: req.body } });
  });

  it('callbackHost is sent as the Host header', async () => {
    const { r, got } = await during(() =>
      put(s, { callbackUrl: `${app.base}/ok`, callbackBody: 'key=$(key)', callbackHost: 'app.example.com' }, 'host-cb.txt'),
    );
    expect(r.status).toBe(200);
    expect(got.map((g) => g.headers.host)).toEqual(['app.example.com']);
  });
});

describe('callback failures', () => {
  it('two URLs: the first answers 500, the second 200 → the second answer is relayed', async () => {
    const urls = [`${app.base}/fail`, `${app.base}/ok`];
    const { r, got } = await during(() => put(s, { callbackUrl: urls.join(';'), callbackBody: 'key=$(key)' }, 'failover.txt'));
    expect(got.map((g) => g.url)).toEqual(['/fail', '/ok']);
    expect(got.map((g) => g.body)).toEqual(['key=failover.txt', 'key=failover.txt']);
    got.forEach((g, i) => expectSigned(g, urls[i] ?? ''));
    expect(r).toEqual({ status: 200, data: { ok: true, path: '/ok', received: 'key=failover.txt' } });
  });

  it('every URL failing (500, 200 with a non-JSON answer) → 579 and the object IS stored', async () => {
    const callbackUrl = `${app.base}/fail;${app.base}/not-json`;
    const { r, got } = await during(() => put(s, { callbackUrl, callbackBody: 'key=$(key)' }, 'all-fail.txt'));
    expect(got.map((g) => g.url)).toEqual(['/fail', '/not-json']);
    expect(r.status).toBe(579);
    expect(r.data).toEqual({ error: expect.stringMatching(/callback failed.*500.*not JSON/) });
    await expectStored(s, BUCKET, 'all-fail.txt', CONTENT);
  });

  it('an application that never answers → 579 after GRANARY_CALLBACK_TIMEOUT, object stored', async () => {
    const { r, got } = await during(() => put(s, { callbackUrl: `${app.base}/hang`, callbackBody: 'key=$(key)' }, 'hang.txt'));
    expect(got.map((g) => g.url)).toEqual(['/hang']);
    expect(r.status).toBe(579);
    expect(r.data).toEqual({ error: expect.stringMatching(/timed out after 1000 ms/) });
    await expectStored(s, BUCKET, 'hang.txt', CONTENT);
  });

  it('loopback without GRANARY_OUTBOUND_ALLOW → 579 naming the setting; nothing reaches the app; object stored', async () => {
    const guarded = await startTestServer();
    try {
      await createBucket(guarded, BUCKET);
      const before = app.requests.length;
      const r = await put(guarded, { callbackUrl: `${app.base}/ok`, callbackBody: 'key=$(key)' }, 'guarded.txt');
      expect(r.status).toBe(579);
      expect(r.data).toEqual({ error: expect.stringMatching(/GRANARY_OUTBOUND_ALLOW/) });
      expect(app.requests.length).toBe(before);
      await expectStored(guarded, BUCKET, 'guarded.txt', CONTENT);
    } finally {
      await guarded.stop();
    }
  });
});

describe('callbackFetchKey', () => {
  const fetchKeyPolicy = (path: string, scope = BUCKET): Record<string, unknown> => ({
    scope,
    callbackUrl: `${app.base}${path}`,
    callbackBody: 'key=$(key)',
    callbackFetchKey: 1,
  });

  it('stores the upload under the key the application answers and relays only the payload', async () => {
    const r = await put(s, fetchKeyPolicy('/fetchkey'), 'provisional.txt');
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ accepted: true });
    await expectStored(s, BUCKET, 'chosen/by-app.txt', CONTENT);
    await expectAbsent(s, BUCKET, 'provisional.txt');
  });

  it('keeps insert semantics for the answered key: 614 when it is taken by other content', async () => {
    const other = Buffer.from('already here');
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const first = await sdk(up.put(s.uploadToken({ scope: BUCKET }), 'taken.txt', other, new qiniu.form_up.PutExtra()));
    expect(first.status).toBe(200);
    const r = await put(s, fetchKeyPolicy('/fetchkey-taken'), 'provisional-2.txt');
    expect(r.status).toBe(614);
    await expectStored(s, BUCKET, 'taken.txt', other);
  });

  it('an answer without a key is a callback failure (579) and the upload stays under its own key', async () => {
    const r = await put(s, fetchKeyPolicy('/fetchkey-nokey'), 'provisional-3.txt');
    expect(r.status).toBe(579);
    expect(String(r.data.error)).toMatch(/key/);
    await expectStored(s, BUCKET, 'provisional-3.txt', CONTENT);
  });
});
