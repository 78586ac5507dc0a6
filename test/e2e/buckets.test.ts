/**
 * Bucket management on the uc role (docs/development/kodo-protocol.md §8.6) through the SDK's BucketManager, in both SDK
 * configurations (static Zone and /v4/query discovery), plus form-body variants sent by hand.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { signedFetch, upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s.stop());

type ErrorBody = { error: string };

describe.each([
  ['static zone', 'zn', (t: TestServer) => t.zoneConfig()],
  ['discovery', 'dc', (t: TestServer) => t.discoveryConfig()],
])('BucketManager with %s config', (_name, prefix, configOf) => {
  const bucket = `${prefix}-bucket`;
  let bm: qiniu.rs.BucketManager;
  beforeAll(() => {
    bm = s.bucketManager(configOf(s));
  });

  it('creates a bucket (200), and a second time answers 614', async () => {
    const first = await sdk(bm.createBucket(bucket, { regionId: 'z0' }));
    expect(first.status).toBe(200);
    const again = await sdk<ErrorBody>(bm.createBucket(bucket, { regionId: 'z0' }));
    expect(again.status).toBe(614);
    expect(again.data).toEqual({ error: expect.any(String) });
  });

  it.each([
    ['too short', 'ab'],
    ['too long', 'a'.repeat(64)],
    ['upper case', 'MyBucket'],
    ['underscore', 'my_bucket'],
    ['leading dash', '-bucket'],
    ['trailing dash', 'bucket-'],
  ])('refuses an invalid name (%s) with 400', async (_why, name) => {
    const r = await sdk<ErrorBody>(bm.createBucket(name, { regionId: 'z0' }));
    expect(r.status).toBe(400);
    expect(r.data).toEqual({ error: expect.any(String) });
  });

  it.each(['stat', 'buckets', 'list', 'regions', 'status'])('refuses the reserved name %j with 400', async (name) => {
    const r = await sdk<ErrorBody>(bm.createBucket(name, { regionId: 'z0' }));
    expect(r.status).toBe(400);
    expect(r.data.error).toMatch(/reserved/);
    const list = await sdk<string[]>(bm.listBucket());
    expect(list.data).not.toContain(name);
  });

  it('lists the bucket', async () => {
    const r = await sdk<string[]>(bm.listBucket());
    expect(r.status).toBe(200);
    expect(r.data).toContain(bucket);
  });

  it('getBucketInfo and putBucketAccessMode toggle the private flag', async () => {
    const info = await sdk<{ private: number }>(bm.getBucketInfo(bucket));
    expect(info.status).toBe(200);
    expect(info.data.private).toBe(0);
    expect((await sdk(bm.putBucketAccessMode(bucket, { private: 1 }))).status).toBe(200);
    expect((await sdk<{ private: number }>(bm.getBucketInfo(bucket))).data.private).toBe(1);
    expect((await sdk(bm.putBucketAccessMode(bucket, { private: 0 }))).status).toBe(200);
    expect((await sdk<{ private: number }>(bm.getBucketInfo(bucket))).data.private).toBe(0);
  });

  it('answers 612 for getBucketInfo (as Kodo) and 631 for putBucketAccessMode of a missing bucket', async () => {
    expect((await sdk(bm.getBucketInfo(`${prefix}-missing`))).status).toBe(612);
    expect((await sdk(bm.putBucketAccessMode(`${prefix}-missing`, { private: 1 }))).status).toBe(631);
  });

  it('lists bound domains (/v3/domains)', async () => {
    const before = await sdk<unknown[]>(bm.listBucketDomains(bucket));
    expect(before.status).toBe(200);
    expect(before.data).toEqual([]);
    await bindDomain(s.running.g, `${prefix}.example.test`, bucket);
    const after = await sdk<Array<{ domain: string; tbl: string }>>(bm.listBucketDomains(bucket));
    expect(after.status).toBe(200);
    expect(after.data).toEqual([expect.objectContaining({ domain: `${prefix}.example.test`, tbl: bucket })]);
  });

  it('refuses to delete a non-empty bucket', async () => {
    await upload(s, bucket, 'keep.txt', 'x', { config: configOf(s) });
    const refused = await sdk<ErrorBody>(bm.deleteBucket(bucket));
    expect(refused.status).toBe(400);
    expect(refused.data.error).toMatch(/not empty/);
    expect((await sdk<string[]>(bm.listBucket())).data).toContain(bucket);
    expect((await fetch(`${s.url}/${bucket}/keep.txt`)).status).toBe(200);
  });

  it('deletes an empty bucket (200) with its domains, then answers 631', async () => {
    const empty = `${prefix}-empty`;
    expect((await sdk(bm.createBucket(empty, { regionId: 'z0' }))).status).toBe(200);
    await bindDomain(s.running.g, `${prefix}-empty.example.test`, empty);
    const dropped = await sdk(bm.deleteBucket(empty));
    expect(dropped.status).toBe(200);
    expect((await sdk<string[]>(bm.listBucket())).data).not.toContain(empty);
    expect((await sdk(bm.getBucketInfo(empty))).status).toBe(612);
    expect((await signedFetch(s, { method: 'GET', path: `/v2/domains?tbl=${empty}` })).status).toBe(631);
    expect(s.running.g.domains.bucketOfHost(`${prefix}-empty.example.test`)).toBeUndefined();

    const missing = await sdk<ErrorBody>(bm.deleteBucket(empty));
    expect(missing.status).toBe(631);
    expect(missing.data).toEqual({ error: expect.any(String) });
    // The name is free again.
    expect((await sdk(bm.createBucket(empty, { regionId: 'z0' }))).status).toBe(200);
  });

  it('answers 631 to an upload into a missing bucket', async () => {
    if (prefix === 'dc') {
      // Discovery: the region query the SDK sends first answers 631 for a missing bucket, as Kodo,
      // so the SDK never uploads (it rejects with `Query regions failed with HTTP Status Code 631`, and its
      // CachedRegionsProvider also leaks an unhandled rejection: docs/reference/sdk-compatibility.md, known differences).
      const q = await fetch(`${s.url}/v4/query?ak=${s.mac.accessKey}&bucket=${prefix}-nowhere`);
      expect(q.status).toBe(631);
      expect(await q.json()).toEqual({ error: 'no such bucket' });
      return;
    }
    const up = new qiniu.form_up.FormUploader(configOf(s));
    const token = s.uploadToken({ scope: `${prefix}-nowhere` });
    const r = await sdk<ErrorBody>(up.put(token, 'k', Buffer.from('x'), new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(631);
    expect(r.data).toEqual({ error: expect.any(String) });
  });
});

describe('raw uc requests', () => {
  const bucket = 'raw-bucket';
  beforeAll(async () => {
    expect((await sdk(s.bucketManager().createBucket(bucket, { regionId: 'z0' }))).status).toBe(200);
  });
  const isPrivate = async (): Promise<number> =>
    (await sdk<{ private: number }>(s.bucketManager().getBucketInfo(bucket))).data.private;

  it('accepts /private parameters in a signed form body', async () => {
    const on = await signedFetch(s, { path: '/private', body: `bucket=${bucket}&private=1` });
    expect(on.status).toBe(200);
    expect(await isPrivate()).toBe(1);
    const off = await signedFetch(s, { path: '/private', body: `bucket=${bucket}&private=0` });
    expect(off.status).toBe(200);
    expect(await isPrivate()).toBe(0);
  });

  it('refuses a bad private flag with 400 and a missing bucket parameter with 400', async () => {
    expect((await signedFetch(s, { path: '/private', body: `bucket=${bucket}&private=2` })).status).toBe(400);
    expect((await signedFetch(s, { path: '/private', body: 'private=1' })).status).toBe(400);
    expect(await isPrivate()).toBe(0);
  });

  it('lists domains with GET /v2/domains after binding', async () => {
    const empty = await signedFetch(s, { method: 'GET', path: `/v2/domains?tbl=${bucket}` });
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual([]);
    await bindDomain(s.running.g, 'Raw.Example.Test', bucket);
    const res = await signedFetch(s, { method: 'GET', path: `/v2/domains?tbl=${bucket}` });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(['raw.example.test']);
  });

  it('refuses to bind a domain already bound to another bucket', async () => {
    expect((await sdk(s.bucketManager().createBucket('raw-other', { regionId: 'z0' }))).status).toBe(200);
    await expect(bindDomain(s.running.g, 'raw.example.test', 'raw-other')).rejects.toMatchObject({ status: 400 });
    await expect(bindDomain(s.running.g, 'free.example.test', 'raw-missing')).rejects.toMatchObject({ status: 631 });
  });

  it('lists buckets with GET and the v4 shape', async () => {
    const res = await signedFetch(s, { method: 'GET', path: '/buckets?apiVersion=v4' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { buckets: Array<{ name: string; region: string; private: boolean }> };
    expect(body).toMatchObject({ next_marker: '', is_truncated: false });
    expect(body.buckets).toContainEqual(expect.objectContaining({ name: bucket, region: 'z0', private: false }));
  });
});
