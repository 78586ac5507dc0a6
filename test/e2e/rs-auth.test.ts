/**
 * Per-bucket authorisation of rs operations (docs/development/kodo-protocol.md §8.1, §14 item 20): an account key acts only on its own
 * buckets, for every bucket an op touches (copy/move source and target), and per op inside a batch. Refusals are
 * 403 and change nothing.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { put } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
let alice: qiniu.auth.digest.Mac;
const ROOT = 'rs-auth-root';
const MINE = 'rs-auth-alice';
const ROOT_BODY = Buffer.from('root object');
const MY_BODY = Buffer.from('alice object');

beforeAll(async () => {
  s = await startTestServer();
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
  await createBucket(s, ROOT);
  await put(s, ROOT, 'k', ROOT_BODY);
  expect((await sdk(aliceManager().createBucket(MINE, { regionId: 'z0' }))).status).toBe(200);
  await put(s, MINE, 'k', MY_BODY);
});
afterAll(async () => s?.stop());

const aliceManager = (config?: qiniu.conf.Config): qiniu.rs.BucketManager => new qiniu.rs.BucketManager(alice, config ?? s.zoneConfig());

describe('an account key on rs operations', () => {
  it('acts on its own bucket', async () => {
    const bm = aliceManager();
    expect((await sdk(bm.stat(MINE, 'k'))).status).toBe(200);
    expect((await sdk(bm.copy(MINE, 'k', MINE, 'own-copy', null))).status).toBe(200);
    await expectStored(s, MINE, 'own-copy', MY_BODY);
  });

  it('stat / delete / chgm / chstatus on a foreign bucket → 403, nothing changed', async () => {
    const bm = aliceManager();
    expect((await sdk(bm.stat(ROOT, 'k'))).status).toBe(403);
    expect((await sdk(bm.stat(ROOT, 'no-such-key'))).status).toBe(403);
    expect((await sdk(bm.delete(ROOT, 'k'))).status).toBe(403);
    expect((await sdk(bm.changeMime(ROOT, 'k', 'image/png'))).status).toBe(403);
    expect((await sdk(bm.updateObjectStatus(ROOT, 'k', 1))).status).toBe(403);
    const d = await expectStored(s, ROOT, 'k', ROOT_BODY);
    expect(d.headers.get('content-type')).not.toBe('image/png');
  });

  it('a missing bucket is still 631 for an account key', async () => {
    expect((await sdk(aliceManager().stat('rs-auth-nowhere', 'k'))).status).toBe(631);
  });

  it('copy or move from its own bucket INTO a foreign bucket → 403 and nothing written', async () => {
    const bm = aliceManager();
    expect((await sdk(bm.copy(MINE, 'k', ROOT, 'planted', null))).status).toBe(403);
    await expectAbsent(s, ROOT, 'planted');
    expect((await sdk(bm.copy(MINE, 'k', ROOT, 'k', { force: true }))).status).toBe(403);
    await expectStored(s, ROOT, 'k', ROOT_BODY);
    expect((await sdk(bm.move(MINE, 'k', ROOT, 'planted', null))).status).toBe(403);
    await expectAbsent(s, ROOT, 'planted');
    await expectStored(s, MINE, 'k', MY_BODY);
  });

  it('copy or move FROM a foreign bucket → 403 and nothing written or removed', async () => {
    const bm = aliceManager();
    expect((await sdk(bm.copy(ROOT, 'k', MINE, 'stolen', null))).status).toBe(403);
    await expectAbsent(s, MINE, 'stolen');
    expect((await sdk(bm.move(ROOT, 'k', MINE, 'stolen', null))).status).toBe(403);
    await expectAbsent(s, MINE, 'stolen');
    await expectStored(s, ROOT, 'k', ROOT_BODY);
  });

  it('batch: the op on a foreign bucket is 403, the others succeed (298)', async () => {
    await put(s, MINE, 'b1', MY_BODY);
    for (const config of [s.zoneConfig(), s.discoveryConfig()]) {
      const r = await sdk<Array<{ code: number; data?: Record<string, unknown> }>>(
        aliceManager(config).batch([
          qiniu.rs.statOp(MINE, 'b1'),
          qiniu.rs.statOp(ROOT, 'k'),
          qiniu.rs.deleteOp(ROOT, 'k'),
          qiniu.rs.copyOp(MINE, 'b1', ROOT, 'batch-planted'),
          qiniu.rs.changeMimeOp(MINE, 'b1', 'text/x-alice'),
        ]),
      );
      expect(r.status).toBe(298);
      expect(r.data.map((x) => x.code)).toEqual([200, 403, 403, 403, 200]);
      expect(r.data[1]?.data).toEqual({ error: expect.any(String) });
      expect(r.data[0]?.data?.fsize).toBe(MY_BODY.length);
    }
    await expectStored(s, ROOT, 'k', ROOT_BODY);
    await expectAbsent(s, ROOT, 'batch-planted');
    const d = await expectStored(s, MINE, 'b1', MY_BODY);
    expect(d.headers.get('content-type')).toBe('text/x-alice');
  });

  it('root may act on the account bucket, including copies across accounts', async () => {
    const bm = s.bucketManager();
    expect((await sdk(bm.stat(MINE, 'k'))).status).toBe(200);
    expect((await sdk(bm.copy(MINE, 'k', ROOT, 'from-alice', null))).status).toBe(200);
    await expectStored(s, ROOT, 'from-alice', MY_BODY);
  });
});
