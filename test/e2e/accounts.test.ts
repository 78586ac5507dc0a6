/**
 * Accounts and bucket authorisation: an account key pair may act only on its own buckets (the root key on all).
 * Checked for uploads, private downloads and bucket management; refusals are JSON and change nothing.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectStored } from '../helpers/upload.js';

let s: TestServer;
let alice: qiniu.auth.digest.Mac;
const ROOT_BUCKET = 'root-owned';
const ALICE_BUCKET = 'alice-owned';
const CONTENT = Buffer.from('root data');

beforeAll(async () => {
  s = await startTestServer();
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
  await createBucket(s, ROOT_BUCKET);
  const up = new qiniu.form_up.FormUploader(s.zoneConfig());
  const r = await sdk(up.put(s.uploadToken({ scope: ROOT_BUCKET }), 'k', CONTENT, new qiniu.form_up.PutExtra()));
  expect(r.status).toBe(200);
});
afterAll(async () => s?.stop());

const aliceManager = (): qiniu.rs.BucketManager => new qiniu.rs.BucketManager(alice, s.zoneConfig());

describe('an account key', () => {
  it('creates its own bucket and sees only its buckets; root sees every bucket', async () => {
    expect((await sdk(aliceManager().createBucket(ALICE_BUCKET, { regionId: 'z0' }))).status).toBe(200);
    const mine = await sdk<string[]>(aliceManager().listBucket());
    expect(mine).toEqual({ status: 200, data: [ALICE_BUCKET] });
    const all = await sdk<string[]>(s.bucketManager().listBucket());
    expect(all.data).toEqual(expect.arrayContaining([ALICE_BUCKET, ROOT_BUCKET]));
  });

  it('cannot upload into another account bucket (403), and the object there is untouched', async () => {
    const token = new qiniu.rs.PutPolicy({ scope: `${ROOT_BUCKET}:k` } as qiniu.rs.PutPolicyOptions).uploadToken(alice);
    const up = new qiniu.form_up.FormUploader(s.zoneConfig());
    const r = await sdk<{ error: string }>(up.put(token, 'k', Buffer.from('overwrite attempt'), new qiniu.form_up.PutExtra()));
    expect(r.status).toBe(403);
    expect(r.data.error).toMatch(/no permission on bucket/);
    await expectStored(s, ROOT_BUCKET, 'k', CONTENT);
  });

  it('cannot read, change or drop another account bucket (403)', async () => {
    const bm = aliceManager();
    expect((await sdk(bm.getBucketInfo(ROOT_BUCKET))).status).toBe(403);
    expect((await sdk(bm.putBucketAccessMode(ROOT_BUCKET, { private: 1 }))).status).toBe(403);
    expect((await sdk(bm.deleteBucket(ROOT_BUCKET))).status).toBe(403);
    expect((await sdk(bm.listBucketDomains(ROOT_BUCKET))).status).toBe(403);
    const info = await sdk<{ private: number }>(s.bucketManager().getBucketInfo(ROOT_BUCKET));
    expect(info.data.private).toBe(0);
  });

  it('cannot sign private download URLs for another account bucket (401), while root can', async () => {
    expect((await sdk(s.bucketManager().putBucketAccessMode(ROOT_BUCKET, { private: 1 }))).status).toBe(200);
    const deadline = Math.floor(Date.now() / 1000) + 3600;
    const base = `${s.url}/${ROOT_BUCKET}`;
    const byAlice = aliceManager().privateDownloadUrl(base, 'k', deadline);
    const byRoot = s.bucketManager().privateDownloadUrl(base, 'k', deadline);
    const refused = await fetch(byAlice);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/no access/) });
    expect((await fetch(byRoot)).status).toBe(200);
  });

  it('root may act on the account bucket', async () => {
    expect((await sdk(s.bucketManager().getBucketInfo(ALICE_BUCKET))).status).toBe(200);
  });
});
