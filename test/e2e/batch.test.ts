/**
 * `POST /batch` through the official SDK (docs/development/kodo-protocol.md §8.4, §14 item 20): per-op results in order, 200 when every
 * op succeeded and 298 otherwise, ops across buckets, the 1000-op limit (1001 → 400 and nothing done), a bad
 * body → 400, an unknown op → its own 400 entry.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { expectJsonError, put, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
const A = 'batch-a';
const B = 'batch-b';
const BODY = Buffer.from('batch body');

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, A);
  await createBucket(s, B);
});
afterAll(async () => s?.stop());

interface OpResult {
  code: number;
  data?: Record<string, unknown>;
}
const rs = qiniu.rs as unknown as typeof qiniu.rs & {
  changeStatusOp(bucket: string, key: string, status: number): string;
  setObjectLifecycleOp(bucket: string, key: string, options: Record<string, unknown>): string;
};
const batch = (ops: string[], config?: qiniu.conf.Config): Promise<{ status: number; data: OpResult[] }> =>
  sdk<OpResult[]>(s.bucketManager(config).batch(ops));

/** Asserts a successful non-stat result (data omitted or empty). */
function expectOk(r: OpResult | undefined): void {
  expect(r?.code).toBe(200);
  expect(r?.data ?? {}).toEqual({});
}

const configs: Array<[string, () => qiniu.conf.Config]> = [
  ['static Zone', () => s.zoneConfig()],
  ['discovery', () => s.discoveryConfig()],
];

describe.each(configs)('batch (%s)', (name, config) => {
  const tag = name === 'discovery' ? 'd' : 'z';

  it('mixed results: 298 with per-op codes in order (stat data, 612, 614, delete 200)', async () => {
    await put(s, A, `${tag}/m1`, BODY);
    await put(s, A, `${tag}/m2`, 'other');
    await put(s, A, `${tag}/m3`, 'doomed');
    const r = await batch(
      [
        qiniu.rs.statOp(A, `${tag}/m1`),
        qiniu.rs.statOp(A, `${tag}/missing`),
        qiniu.rs.copyOp(A, `${tag}/m1`, A, `${tag}/m2`),
        qiniu.rs.deleteOp(A, `${tag}/m3`),
      ],
      config(),
    );
    expect(r.status).toBe(298);
    expect(r.data).toHaveLength(4);
    expect(r.data[0]).toEqual({
      code: 200,
      data: expect.objectContaining({ hash: qetag(BODY), fsize: BODY.length, mimeType: expect.any(String), putTime: expect.any(Number), type: 0 }),
    });
    expect(r.data[1]).toEqual({ code: 612, data: { error: expect.any(String) } });
    expect(r.data[2]).toEqual({ code: 614, data: { error: expect.any(String) } });
    expectOk(r.data[3]);
    await expectStored(s, A, `${tag}/m2`, Buffer.from('other'));
    await expectAbsent(s, A, `${tag}/m3`);
  });

  it('all succeed → 200; ops run in order and across two buckets', async () => {
    await put(s, A, `${tag}/x`, BODY);
    const r = await batch(
      [
        qiniu.rs.copyOp(A, `${tag}/x`, B, `${tag}/x-copy`),
        qiniu.rs.moveOp(A, `${tag}/x`, A, `${tag}/x-moved`),
        qiniu.rs.statOp(B, `${tag}/x-copy`),
        qiniu.rs.statOp(A, `${tag}/x-moved`),
      ],
      config(),
    );
    expect(r.status).toBe(200);
    expect(r.data.map((x) => x.code)).toEqual([200, 200, 200, 200]);
    expect(r.data[2]?.data?.hash).toBe(qetag(BODY));
    expect(r.data[3]?.data?.hash).toBe(qetag(BODY));
    await expectStored(s, B, `${tag}/x-copy`, BODY);
    await expectStored(s, A, `${tag}/x-moved`, BODY);
    await expectAbsent(s, A, `${tag}/x`);
  });
});

describe('batch op kinds', () => {
  it('chgm, changeHeaders, chtype, chstatus, deleteAfterDays and lifecycle ops all apply', async () => {
    await put(s, A, 'kinds', BODY, { mimeType: 'text/plain' });
    const r = await batch([
      qiniu.rs.changeMimeOp(A, 'kinds', 'image/gif'),
      qiniu.rs.changeHeadersOp(A, 'kinds', { 'Cache-Control': 'no-cache' }),
      qiniu.rs.changeTypeOp(A, 'kinds', 1),
      rs.changeStatusOp(A, 'kinds', 1),
      qiniu.rs.deleteAfterDaysOp(A, 'kinds', 30),
      rs.setObjectLifecycleOp(A, 'kinds', { toArchiveAfterDays: 60 }),
      qiniu.rs.statOp(A, 'kinds'),
    ]);
    expect(r.status).toBe(200);
    for (const x of r.data.slice(0, 6)) expectOk(x);
    expect(r.data[6]?.data).toMatchObject({
      mimeType: 'image/gif',
      type: 1,
      status: 1,
      'x-qn-meta': { '!Cache-Control': 'no-cache' },
      expiration: expect.any(Number),
      transitionToARCHIVE: expect.any(Number),
    });
  });

  it('writes each stat putTime exactly (17-digit integer of 100-ns units) in a JSON no-store answer', async () => {
    const before = BigInt(Date.now()) * 10000n;
    await put(s, A, 'exact', BODY);
    const after = BigInt(Date.now()) * 10000n;
    const body = `op=${encodeURIComponent(qiniu.rs.statOp(A, 'exact'))}&op=${encodeURIComponent(qiniu.rs.statOp(A, 'exact'))}`;
    const a = await rawOp(s, '/batch', { body });
    expect(a.status, a.text).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    expect(a.headers.get('cache-control')).toBe('no-store');
    const times = [...a.text.matchAll(/"putTime":(\d+)[,}]/g)].map((m) => m[1] as string);
    expect(times).toHaveLength(2);
    for (const digits of times) {
      expect(digits).toMatch(/^\d{17}$/);
      const t = BigInt(digits);
      expect(t % 10000n).toBe(0n);
      expect(t >= before && t <= after, `${t} not in [${before}, ${after}]`).toBe(true);
    }
  });

  it('an unknown op is its own 400 entry; the other ops still run (298)', async () => {
    await put(s, A, 'unknown-op', BODY);
    const r = await batch([qiniu.rs.statOp(A, 'unknown-op'), '/frobnicate/x', qiniu.rs.deleteOp(A, 'unknown-op')]);
    expect(r.status).toBe(298);
    expect(r.data.map((x) => x.code)).toEqual([200, 400, 200]);
    expect(r.data[1]?.data).toEqual({ error: expect.any(String) });
    await expectAbsent(s, A, 'unknown-op');
  });

  it('an op with a bad entry or bad arguments is its own 400 entry', async () => {
    await put(s, A, 'bad-args', BODY);
    const r = await batch([
      qiniu.rs.statOp(A, 'bad-args'),
      '/stat/!!!',
      qiniu.rs.changeTypeOp(A, 'bad-args', 9),
      `/stat/${qiniu.util.urlsafeBase64Encode('no-colon')}`,
    ]);
    expect(r.status).toBe(298);
    expect(r.data.map((x) => x.code)).toEqual([200, 400, 400, 400]);
    expect((await sdk<{ type: number }>(s.bucketManager().stat(A, 'bad-args'))).data.type).toBe(0);
  });
});

describe('batch limits', () => {
  it('1000 stat ops → 200 with 1000 results', async () => {
    await put(s, A, 'many-0', BODY);
    await put(s, B, 'many-1', 'abc');
    const ops = Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? qiniu.rs.statOp(A, 'many-0') : qiniu.rs.statOp(B, 'many-1')));
    const r = await batch(ops);
    expect(r.status).toBe(200);
    expect(r.data).toHaveLength(1000);
    expect(r.data.every((x) => x.code === 200)).toBe(true);
    expect(r.data[998]?.data?.hash).toBe(qetag(BODY));
    expect(r.data[999]?.data?.fsize).toBe(3);
  });

  it('1001 ops → 400 JSON and nothing is done (the deletes among them did not run)', async () => {
    await put(s, A, 'keep-1', BODY);
    await put(s, A, 'keep-2', BODY);
    const ops = [qiniu.rs.deleteOp(A, 'keep-1'), ...Array.from({ length: 999 }, () => qiniu.rs.statOp(A, 'keep-1'))];
    ops.push(qiniu.rs.deleteOp(A, 'keep-2'));
    expect(ops).toHaveLength(1001);
    const r = await sdk<{ error: string }>(s.bucketManager().batch(ops));
    expect(r.status).toBe(400);
    expect(r.data).toEqual({ error: expect.any(String) });
    await expectStored(s, A, 'keep-1', BODY);
    await expectStored(s, A, 'keep-2', BODY);
  });

  it('an empty body, a body without op= and a non-form body → 400 JSON', async () => {
    expectJsonError(await rawOp(s, '/batch', { body: '' }), 400);
    expectJsonError(await rawOp(s, '/batch'), 400);
    expectJsonError(await rawOp(s, '/batch', { body: 'foo=bar' }), 400);
    await put(s, A, 'json-body', BODY);
    const json = JSON.stringify({ op: [qiniu.rs.deleteOp(A, 'json-body')] });
    expectJsonError(await rawOp(s, '/batch', { body: json, contentType: 'application/json' }), 400);
    await expectStored(s, A, 'json-body', BODY);
  });
});
