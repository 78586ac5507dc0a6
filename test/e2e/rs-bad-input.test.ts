/**
 * rs operations with bad input, sent raw (docs/development/kodo-protocol.md §8.1, §8.7, §14 items 4 and 24): undecodable or malformed
 * EncodedEntryURIs, unknown ops, bad arguments, missing or wrong credentials — each a JSON error that changes
 * nothing. Also: `QBox` credentials are accepted on /stat, the single ops and /batch (Node signs with `Qiniu`).
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b64, entry, expectJsonError, put, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored } from '../helpers/upload.js';

let s: TestServer;
const BUCKET = 'rs-bad';
const BODY = Buffer.from('bad input body');

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, BUCKET);
  await put(s, BUCKET, 'k', BODY, { mimeType: 'text/plain' });
});
afterAll(async () => s?.stop());

const statOf = async (key: string): Promise<Record<string, unknown>> => {
  const r = await sdk<Record<string, unknown>>(s.bucketManager().stat(BUCKET, key));
  expect(r.status).toBe(200);
  return r.data;
};

describe('bad EncodedEntryURIs', () => {
  it('one that does not decode → 400 JSON (/stat/%%%, /stat/!!!, /delete/!!!)', async () => {
    expectJsonError(await rawOp(s, '/stat/%%%', { method: 'GET' }), 400);
    expectJsonError(await rawOp(s, '/stat/!!!', { method: 'GET' }), 400);
    expectJsonError(await rawOp(s, '/stat/!!!'), 400);
    expectJsonError(await rawOp(s, '/delete/!!!'), 400);
  });

  it('an entry whose padding is percent-encoded (%3D) is accepted', async () => {
    const encoded = entry(BUCKET, 'k');
    expect(encoded).toMatch(/=$/);
    const r = await rawOp(s, `/stat/${encoded.replace(/=/g, '%3D')}`, { method: 'GET' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ fsize: BODY.length });
  });

  it("an entry without ':' or with an empty bucket → 400", async () => {
    expectJsonError(await rawOp(s, `/stat/${b64(BUCKET)}`, { method: 'GET' }), 400);
    expectJsonError(await rawOp(s, `/delete/${b64(':k')}`), 400);
    expectJsonError(await rawOp(s, `/copy/${entry(BUCKET, 'k')}/${b64('nocolon')}`), 400);
    await expectStored(s, BUCKET, 'k', BODY);
  });

  it('a missing entry segment → 400', async () => {
    expectJsonError(await rawOp(s, '/stat/', { method: 'GET' }), 400);
    expectJsonError(await rawOp(s, '/delete/'), 400);
    expectJsonError(await rawOp(s, `/copy/${entry(BUCKET, 'k')}`), 400);
  });

  it('a copy target key over 750 bytes → 400, nothing written', async () => {
    expectJsonError(await rawOp(s, `/copy/${entry(BUCKET, 'k')}/${entry(BUCKET, 'x'.repeat(751))}`), 400);
    expect((await sdk(s.bucketManager().stat(BUCKET, 'x'.repeat(751)))).status).toBe(612);
  });
});

describe('unknown ops and methods', () => {
  it('an unknown op path → 404 no such api', async () => {
    const a = await rawOp(s, '/frobnicate/x');
    expectJsonError(a, 404);
    expect(a.json).toEqual({ error: 'no such api' });
  });

  it('GET on a changing op is not routed: 405 with Allow (the path answers POST), not a download (nothing deleted)', async () => {
    for (const op of ['delete', 'move']) {
      const a = await rawOp(s, `/${op}/${entry(BUCKET, 'k')}`, { method: 'GET' });
      expectJsonError(a, 405);
      expect(a.headers.get('allow'), op).toMatch(/POST/);
    }
    // An op name in another case is no op: a download of a missing bucket path, never the op.
    const other = await rawOp(s, `/Delete/${entry(BUCKET, 'k')}`, { method: 'GET' });
    expect(other.status).not.toBe(200);
    await expectStored(s, BUCKET, 'k', BODY);
  });
});

describe('bad op arguments → 400, nothing changed', () => {
  const e = (): string => entry(BUCKET, 'k');
  const cases: Array<[string, () => string]> = [
    ['chtype without /type/<n>', () => `/chtype/${e()}`],
    ['chtype with a non-number', () => `/chtype/${e()}/type/abc`],
    ['chtype out of range', () => `/chtype/${e()}/type/9`],
    ['chtype wrong parameter name', () => `/chtype/${e()}/kind/1`],
    ['chstatus 2', () => `/chstatus/${e()}/status/2`],
    ['chstatus without a value', () => `/chstatus/${e()}/status`],
    ['deleteAfterDays negative', () => `/deleteAfterDays/${e()}/-1`],
    ['deleteAfterDays not a number', () => `/deleteAfterDays/${e()}/x`],
    ['copy force without a value', () => `/copy/${e()}/${entry(BUCKET, 'k2')}/force`],
    ['copy unknown parameter', () => `/copy/${e()}/${entry(BUCKET, 'k2')}/bogus/true`],
    ['chgm mime not base64', () => `/chgm/${e()}/mime/!!!`],
    ['chgm unknown parameter', () => `/chgm/${e()}/colour/${b64('red')}`],
    ['chgm cond with an unknown field', () => `/chgm/${e()}/mime/${b64('image/png')}/cond/${b64('owner=me')}`],
    ['lifecycle -2 days', () => `/lifecycle/${e()}/toIAAfterDays/-2`],
    ['lifecycle unknown parameter', () => `/lifecycle/${e()}/toGlacierAfterDays/3`],
    ['restoreAr 0 days', () => `/restoreAr/${e()}/freezeAfterDays/0`],
    ['restoreAr without freezeAfterDays', () => `/restoreAr/${e()}`],
    ['delete with trailing segments', () => `/delete/${e()}/foo/bar`],
    ['chtype with trailing segments', () => `/chtype/${e()}/type/1/foo/bar`],
    ['chstatus with trailing segments', () => `/chstatus/${e()}/status/1/foo`],
    ['deleteAfterDays with trailing segments', () => `/deleteAfterDays/${e()}/3/foo`],
  ];

  it.each(cases)('%s', async (_name, path) => {
    const before = await statOf('k');
    expectJsonError(await rawOp(s, path()), 400);
    expect(await statOf('k')).toEqual(before);
    expect((await sdk(s.bucketManager().stat(BUCKET, 'k2'))).status).toBe(612);
  });
});

describe('credentials', () => {
  it('no Authorization → 401 JSON; a wrong secret → 401; nothing deleted', async () => {
    const res = await fetch(`${s.url}/delete/${entry(BUCKET, 'k')}`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: expect.any(String) });
    const wrong = new qiniu.auth.digest.Mac(s.mac.accessKey, 'not-the-secret');
    expectJsonError(await rawOp(s, `/delete/${entry(BUCKET, 'k')}`, { mac: wrong }), 401);
    expectJsonError(await rawOp(s, `/stat/${entry(BUCKET, 'k')}`, { method: 'GET', mac: wrong }), 401);
    await expectStored(s, BUCKET, 'k', BODY);
  });

  it('QBox credentials work on GET and POST /stat', async () => {
    for (const method of ['GET', 'POST']) {
      const a = await rawOp(s, `/stat/${entry(BUCKET, 'k')}`, { method, scheme: 'QBox' });
      expect(a.status, a.text).toBe(200);
      expect(a.json).toMatchObject({ fsize: BODY.length, mimeType: 'text/plain', type: 0 });
    }
    const wrong = new qiniu.auth.digest.Mac(s.mac.accessKey, 'not-the-secret');
    expectJsonError(await rawOp(s, `/stat/${entry(BUCKET, 'k')}`, { method: 'GET', scheme: 'QBox', mac: wrong }), 401);
  });

  it('QBox credentials work on a single op (copy) and on /batch (form body signed)', async () => {
    const copy = await rawOp(s, `/copy/${entry(BUCKET, 'k')}/${entry(BUCKET, 'qbox-copy')}`, { scheme: 'QBox' });
    expect(copy.status, copy.text).toBe(200);
    await expectStored(s, BUCKET, 'qbox-copy', BODY);

    const body = `op=${encodeURIComponent(qiniu.rs.statOp(BUCKET, 'qbox-copy'))}&op=${encodeURIComponent(qiniu.rs.deleteOp(BUCKET, 'qbox-copy'))}`;
    const a = await rawOp(s, '/batch', { body, scheme: 'QBox' });
    expect(a.status, a.text).toBe(200);
    expect((a.json as Array<{ code: number }>).map((x) => x.code)).toEqual([200, 200]);
    expect((await sdk(s.bucketManager().stat(BUCKET, 'qbox-copy'))).status).toBe(612);

    // The body is part of a QBox signature: a changed body no longer verifies.
    const url = `${s.url}/batch`;
    const authorization = qiniu.util.generateAccessToken(s.mac, url, body);
    const tampered = await fetch(url, {
      method: 'POST',
      headers: { Authorization: authorization, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `op=${encodeURIComponent(qiniu.rs.deleteOp(BUCKET, 'k'))}`,
    });
    expect(tampered.status).toBe(401);
    await expectStored(s, BUCKET, 'k', BODY);
  });
});
