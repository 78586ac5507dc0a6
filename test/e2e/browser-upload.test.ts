/**
 * qiniu-js 3.4.4 in a real browser (Debian Chromium driven by playwright-core) uploads to Granary from a page
 * served on another port, so every call is cross-origin: CORS and preflights (PUT with Authorization and
 * Content-MD5, POST with a JSON body) are exercised as on a real site (docs/development/kodo-protocol.md §12, §13.4, §14 items 3, 22).
 *
 * - ≤ 4 MiB: a form upload, `POST /` with the file part first and a crc32 field (§4);
 * - 9 MiB: multipart v2 in 4 MiB parts, three at a time, each with a hex Content-MD5 (§6).
 *
 * The page builds its file from a seeded xorshift stream; the test rebuilds the same bytes in Node, downloads the
 * object and compares, and checks `hash` against the independent qetag (test/helpers/etag.ts).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  diagnostics,
  launchChromium,
  openUploadPage,
  recordExchanges,
  startPageServer,
  testContent,
  type PageServer,
  type PageUploadOutcome,
  type ServerExchange,
  type UploadPage,
  type UploadSpec,
} from '../helpers/browser.js';
import { qetag } from '../helpers/etag.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const BUCKET = 'browser';

let s: TestServer;
let pages: PageServer;
let browser: Browser;

beforeAll(async () => {
  [s, pages, browser] = await Promise.all([startTestServer(), startPageServer(), launchChromium()]);
  await createBucket(s, BUCKET);
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await s?.stop();
});

/** The `qiniu.upload` config of these tests: our host over http, no usage reports to uplog.qbox.me. */
function uploadConfig(): Record<string, unknown> {
  return {
    uphost: s.host,
    upprotocol: 'http',
    disableStatisticsReport: true,
    chunkSize: 4,
    concurrentRequestLimit: 3,
    checkByServer: true,
    // A failure must show as the server's first answer, not be hidden behind the SDK restarting the upload.
    retryCount: 0,
    debugLogLevel: 'INFO',
  };
}

/** Uploads in the page, recording both sides; fails with the full record unless the upload completed. */
async function uploadInBrowser(
  spec: Omit<UploadSpec, 'token' | 'config'>,
): Promise<{ result: Record<string, unknown>; exchanges: ServerExchange[]; page: UploadPage }> {
  const page = await openUploadPage(browser, pages);
  const rec = recordExchanges(s);
  let outcome: PageUploadOutcome;
  try {
    const token = s.uploadToken({ scope: spec.key === null ? BUCKET : `${BUCKET}:${spec.key}` });
    outcome = await page.upload({ ...spec, token, config: uploadConfig() });
  } catch (err) {
    rec.stop();
    await page.close();
    throw new Error(diagnostics(`page.evaluate failed: ${String(err)}`, page, rec.exchanges), { cause: err });
  }
  rec.stop();
  if (process.env.GRANARY_SHOW_EXCHANGES) console.log(diagnostics(`upload of ${spec.key}`, page, rec.exchanges));
  if (!outcome.ok) {
    await page.close();
    throw new Error(diagnostics(`qiniu-js reported an error: ${JSON.stringify(outcome.error)}`, page, rec.exchanges));
  }
  return { result: outcome.result, exchanges: rec.exchanges, page };
}

/** The exchanges that are not preflights. */
const actual = (exchanges: ServerExchange[]): ServerExchange[] => exchanges.filter((e) => e.method !== 'OPTIONS');

/**
 * Asserts the v2 sequence qiniu-js sends (docs/development/kodo-protocol.md §13.4): init `POST …/uploads`, `parts` part uploads
 * `PUT …/uploads/<id>/<n>` (any order: three at a time) with a hex Content-MD5, then complete `POST …/uploads/<id>`
 * with a JSON body; every call cross-origin with UpToken auth, answered 200 with CORS headers, and preflights that
 * allowed PUT with Content-MD5.
 */
function expectMultipartV2(exchanges: ServerExchange[], objectName: string, parts: number, why: string): void {
  const base = `/buckets/${BUCKET}/objects/${objectName}/uploads`;
  const calls = actual(exchanges);
  for (const c of calls) {
    expect(c.status, why).toBe(200);
    expect(c.req.origin, why).toBe(pages.origin);
    expect(c.req.authorization, why).toBe('UpToken …');
    expect(c.res['access-control-allow-origin'], why).toBe('*');
  }
  expect(calls.length, why).toBe(parts + 2);
  const [init, ...rest] = calls;
  const complete = rest.pop()!;
  expect(`${init!.method} ${init!.url}`, why).toBe(`POST ${base}`);
  const { uploadId } = JSON.parse(init!.body ?? '{}') as { uploadId?: string };
  expect(uploadId, why).toEqual(expect.any(String));
  const partCalls = rest.map((e) => `${e.method} ${e.url}`).sort();
  const expected = Array.from({ length: parts }, (_, i) => `PUT ${base}/${uploadId}/${i + 1}`).sort();
  expect(partCalls, why).toEqual(expected);
  for (const p of rest) {
    expect(p.req['content-type'], why).toBe('application/octet-stream');
    expect(p.req['content-md5'], why).toMatch(/^[0-9a-f]{32}$/);
  }
  expect(`${complete.method} ${complete.url}`, why).toBe(`POST ${base}/${uploadId}`);
  expect(complete.req['content-type'], why).toBe('application/json');

  // Each cross-origin call with Authorization was preceded by a preflight that allowed it.
  const preflights = exchanges.filter((e) => e.method === 'OPTIONS');
  expect(preflights.length, why).toBeGreaterThan(0);
  for (const p of preflights) {
    expect(p.status, why).toBe(204);
    expect(p.res['access-control-allow-origin'], why).toBe('*');
  }
  expect(
    preflights.some((p) => p.req['access-control-request-method'] === 'PUT' && /content-md5/i.test(p.req['access-control-request-headers'] ?? '')),
    why,
  ).toBe(true);
}

describe('qiniu-js 3.4.4 in Chromium, cross-origin', () => {
  it('uploads a 3 MiB file with a form upload (POST /, file part first)', async () => {
    const spec = { size: 3 * MiB + 17, seed: 0x5eed1, fileName: 'small.bin', key: 'small.bin' };
    const content = testContent(spec.size, spec.seed);
    const { result, exchanges, page } = await uploadInBrowser({
      ...spec,
      putExtra: { fname: 'small-original.bin', customVars: { 'x:a': '1' }, metadata: { 'x-qn-meta-m': 'v' } },
    });
    try {
      const why = diagnostics('unexpected exchange', page, exchanges);
      expect(result, why).toEqual({ hash: qetag(content), key: spec.key, 'x:a': '1' });
      const posts = actual(exchanges);
      expect(posts.map((e) => `${e.method} ${e.url}`), why).toEqual(['POST /']);
      const post = posts[0]!;
      expect(post.req.origin, why).toBe(pages.origin);
      expect(post.req['content-type'], why).toMatch(/^multipart\/form-data; boundary=/);
      expect(post.status, why).toBe(200);
      expect(post.res['access-control-allow-origin'], why).toBe('*');
      const stored = await expectStored(s, BUCKET, spec.key, content);
      expect(stored.headers.get('x-qn-meta-m')).toBe('v');
    } finally {
      await page.close();
    }
  });

  it('uploads a 9 MiB file through multipart v2 in 4 MiB parts with Content-MD5', async () => {
    const spec = { size: 9 * MiB, seed: 0xc0ffee, fileName: 'big.bin', key: 'dir/big 9MiB.bin' };
    const content = testContent(spec.size, spec.seed);
    const { result, exchanges, page } = await uploadInBrowser({
      ...spec,
      putExtra: { fname: 'big-original.bin', customVars: { 'x:a': '1' }, metadata: { 'x-qn-meta-m': 'v' } },
    });
    try {
      const why = diagnostics('unexpected exchange', page, exchanges);
      expect(result, why).toEqual({ hash: qetag(content), key: spec.key, 'x:a': '1' });

      const objectName = Buffer.from(spec.key).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
      expectMultipartV2(exchanges, objectName, 3, why);
      const stored = await expectStored(s, BUCKET, spec.key, content);
      expect(stored.headers.get('x-qn-meta-m')).toBe('v');
    } finally {
      await page.close();
    }
  });

  it('uploads a 5 MiB file without a key (object name ~; the key becomes the hash)', async () => {
    const spec = { size: 5 * MiB + 3, seed: 7, fileName: 'nokey.bin', key: null };
    const content = testContent(spec.size, spec.seed);
    const hash = qetag(content);
    const { result, exchanges, page } = await uploadInBrowser({ ...spec, putExtra: {} });
    try {
      const why = diagnostics('unexpected exchange', page, exchanges);
      expect(result, why).toEqual({ hash, key: hash });
      expectMultipartV2(exchanges, '~', 2, why);
      await expectStored(s, BUCKET, hash, content);
    } finally {
      await page.close();
    }
  });
});
