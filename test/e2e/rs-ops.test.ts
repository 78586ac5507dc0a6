/**
 * rs object operations through the official SDK (docs/development/kodo-protocol.md §8.1–8.2, §13.2): stat's shape and exact putTime,
 * copy / move with and without force, delete, and that copies share one blob on disk (no bytes copied, space
 * freed when the last reference goes). Run in both SDK configurations (static Zone and /v4/query discovery).
 */
import { createHash, randomBytes } from 'node:crypto';
import type qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qetag } from '../helpers/etag.js';
import { countBlobs, entry, put, rawOp } from '../helpers/rs.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectAbsent, expectStored } from '../helpers/upload.js';

let s: TestServer;
const A = 'rs-ops-a';
const B = 'rs-ops-b';

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, A);
  await createBucket(s, B);
});
afterAll(async () => s?.stop());

type Stat = Record<string, unknown>;

describe('stat', () => {
  it('answers hash, fsize, mimeType, putTime, type 0, md5, endUser and unprefixed x-qn-meta; no status', async () => {
    const body = Buffer.from('stat me');
    await put(s, A, 'shape.txt', body, { policy: { endUser: 'u1' }, mimeType: 'text/plain', meta: { color: 'red' } });
    const r = await sdk<Stat>(s.bucketManager().stat(A, 'shape.txt'));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({
      hash: qetag(body),
      fsize: body.length,
      mimeType: 'text/plain',
      putTime: expect.any(Number),
      type: 0,
      md5: createHash('md5').update(body).digest('hex'),
      endUser: 'u1',
      'x-qn-meta': { color: 'red' },
    });
  });

  it('writes putTime as an exact 17-digit integer of 100-ns units (ms × 10^4, not rounded)', async () => {
    const before = BigInt(Date.now()) * 10000n;
    await put(s, A, 'time.txt', 'tick');
    const after = BigInt(Date.now()) * 10000n;
    const a = await rawOp(s, `/stat/${entry(A, 'time.txt')}`, { method: 'GET' });
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    expect(a.headers.get('cache-control')).toBe('no-store');
    const digits = /"putTime":(\d+)[,}]/.exec(a.text)?.[1];
    expect(digits, a.text).toMatch(/^\d{17}$/);
    const putTime = BigInt(digits as string);
    expect(putTime % 10000n).toBe(0n);
    expect(putTime >= before && putTime <= after, `${putTime} not in [${before}, ${after}]`).toBe(true);
  });

  it('is 612 for a missing key and 631 for a missing bucket', async () => {
    const bm = s.bucketManager();
    expect((await sdk(bm.stat(A, 'no-such-key'))).status).toBe(612);
    expect((await sdk(bm.stat('no-such-bucket', 'k'))).status).toBe(631);
  });

  it('adds parts with ?needparts=true, and only then', async () => {
    const body = Buffer.from('parts');
    await put(s, A, 'parts.txt', body);
    const withParts = await rawOp(s, `/stat/${entry(A, 'parts.txt')}?needparts=true`, { method: 'GET' });
    expect(withParts.status).toBe(200);
    expect((withParts.json as Stat).parts).toEqual([body.length]);
    const plain = await rawOp(s, `/stat/${entry(A, 'parts.txt')}`, { method: 'GET' });
    expect(plain.json).not.toHaveProperty('parts');
  });
});

const configs: Array<[string, () => qiniu.conf.Config]> = [
  ['static Zone', () => s.zoneConfig()],
  ['discovery', () => s.discoveryConfig()],
];

describe.each(configs)('copy, move and delete (%s)', (name, config) => {
  const tag = name === 'discovery' ? 'd' : 'z';
  const bm = (): qiniu.rs.BucketManager => s.bucketManager(config());
  const ONE = Buffer.from(`one-${tag}`);
  const TWO = Buffer.from(`two-${tag}`);

  it('copies to a free key (200) and to another bucket; an existing target needs force (614, then 200)', async () => {
    await put(s, A, `${tag}/src`, ONE);
    await put(s, A, `${tag}/taken`, TWO);
    expect((await sdk(bm().copy(A, `${tag}/src`, A, `${tag}/copy`, null))).status).toBe(200);
    await expectStored(s, A, `${tag}/copy`, ONE);
    expect((await sdk(bm().copy(A, `${tag}/src`, B, `${tag}/copy`, {}))).status).toBe(200);
    await expectStored(s, B, `${tag}/copy`, ONE);

    expect((await sdk(bm().copy(A, `${tag}/src`, A, `${tag}/taken`, { force: false }))).status).toBe(614);
    await expectStored(s, A, `${tag}/taken`, TWO);
    expect((await sdk(bm().copy(A, `${tag}/src`, A, `${tag}/taken`, { force: true }))).status).toBe(200);
    await expectStored(s, A, `${tag}/taken`, ONE);
    await expectStored(s, A, `${tag}/src`, ONE);
  });

  it('copy of a missing source is 612; to a missing bucket 631', async () => {
    expect((await sdk(bm().copy(A, `${tag}/absent`, A, `${tag}/x`, null))).status).toBe(612);
    await expectAbsent(s, A, `${tag}/x`);
    await put(s, A, `${tag}/present`, ONE);
    expect((await sdk(bm().copy(A, `${tag}/present`, 'rs-ops-nowhere', 'x', null))).status).toBe(631);
  });

  it('copy onto itself: 614 without force; with force 200 and the object intact', async () => {
    await put(s, A, `${tag}/self`, ONE);
    expect((await sdk(bm().copy(A, `${tag}/self`, A, `${tag}/self`, null))).status).toBe(614);
    expect((await sdk(bm().copy(A, `${tag}/self`, A, `${tag}/self`, { force: true }))).status).toBe(200);
    await expectStored(s, A, `${tag}/self`, ONE);
  });

  it('move renames (source gone, stat unchanged but the key), refuses an existing target without force', async () => {
    await put(s, A, `${tag}/m-src`, ONE, { mimeType: 'text/x-one' });
    await put(s, A, `${tag}/m-taken`, TWO);
    const before = await sdk<Stat>(bm().stat(A, `${tag}/m-src`));

    expect((await sdk(bm().move(A, `${tag}/m-src`, A, `${tag}/m-taken`, null))).status).toBe(614);
    await expectStored(s, A, `${tag}/m-src`, ONE);
    await expectStored(s, A, `${tag}/m-taken`, TWO);

    expect((await sdk(bm().move(A, `${tag}/m-src`, A, `${tag}/m-dst`, null))).status).toBe(200);
    await expectAbsent(s, A, `${tag}/m-src`);
    await expectStored(s, A, `${tag}/m-dst`, ONE);
    expect((await sdk<Stat>(bm().stat(A, `${tag}/m-dst`))).data).toEqual(before.data);

    expect((await sdk(bm().move(A, `${tag}/m-dst`, A, `${tag}/m-taken`, { force: true }))).status).toBe(200);
    await expectAbsent(s, A, `${tag}/m-dst`);
    await expectStored(s, A, `${tag}/m-taken`, ONE);

    expect((await sdk(bm().move(A, `${tag}/m-taken`, B, `${tag}/m-moved`, null))).status).toBe(200);
    await expectAbsent(s, A, `${tag}/m-taken`);
    await expectStored(s, B, `${tag}/m-moved`, ONE);
    expect((await sdk(bm().move(A, `${tag}/m-taken`, A, `${tag}/again`, null))).status).toBe(612);
  });

  it('move onto itself: 614 without force; with force 200 and the object intact', async () => {
    await put(s, A, `${tag}/m-self`, ONE);
    expect((await sdk(bm().move(A, `${tag}/m-self`, A, `${tag}/m-self`, null))).status).toBe(614);
    expect((await sdk(bm().move(A, `${tag}/m-self`, A, `${tag}/m-self`, { force: true }))).status).toBe(200);
    await expectStored(s, A, `${tag}/m-self`, ONE);
  });

  it('a copy outlives its deleted source, byte-identical', async () => {
    const bytes = randomBytes(64 * 1024);
    await put(s, A, `${tag}/orig`, bytes);
    expect((await sdk(bm().copy(A, `${tag}/orig`, B, `${tag}/kept`, null))).status).toBe(200);
    expect((await sdk(bm().delete(A, `${tag}/orig`))).status).toBe(200);
    await expectAbsent(s, A, `${tag}/orig`);
    await expectStored(s, B, `${tag}/kept`, bytes);
  });

  it('delete: 200 then the download is 404 and stat 612; a second delete is 612', async () => {
    await put(s, A, `${tag}/del`, ONE);
    expect((await sdk(bm().delete(A, `${tag}/del`))).status).toBe(200);
    expect((await download(s, A, `${tag}/del`)).status).toBe(404);
    expect((await sdk(bm().stat(A, `${tag}/del`))).status).toBe(612);
    expect((await sdk(bm().delete(A, `${tag}/del`))).status).toBe(612);
  });
});

describe('copies share one blob', () => {
  it('20 copies of a 1 MiB object add no blob file; deleting them all frees it', async () => {
    const base = await countBlobs(s);
    const bytes = randomBytes(1024 * 1024);
    await put(s, A, 'big/original', bytes);
    expect(await countBlobs(s)).toBe(base + 1);
    const bm = s.bucketManager();
    const keys: Array<[string, string]> = [];
    for (let i = 0; i < 20; i++) {
      const target: [string, string] = [i % 2 === 0 ? A : B, `big/copy-${i}`];
      expect((await sdk(bm.copy(A, 'big/original', target[0], target[1], null))).status).toBe(200);
      keys.push(target);
    }
    expect(await countBlobs(s)).toBe(base + 1);
    await expectStored(s, B, 'big/copy-19', bytes);

    for (const [bucket, key] of [[A, 'big/original'] as [string, string], ...keys]) {
      expect((await sdk(bm.delete(bucket, key))).status).toBe(200);
    }
    expect(await countBlobs(s)).toBe(base);
  });

  it('overwriting one copy with new content leaves the other copies (and their bytes) intact', async () => {
    const base = await countBlobs(s);
    const bytes = randomBytes(4096);
    await put(s, A, 'ow/original', bytes);
    const bm = s.bucketManager();
    expect((await sdk(bm.copy(A, 'ow/original', A, 'ow/c1', null))).status).toBe(200);
    expect((await sdk(bm.copy(A, 'ow/original', A, 'ow/c2', null))).status).toBe(200);
    const fresh = Buffer.from('new content');
    await put(s, A, 'ow/c1', fresh);
    expect(await countBlobs(s)).toBe(base + 2);
    await expectStored(s, A, 'ow/c1', fresh);
    await expectStored(s, A, 'ow/c2', bytes);
    await expectStored(s, A, 'ow/original', bytes);
    expect((await sdk(bm.delete(A, 'ow/original'))).status).toBe(200);
    expect((await sdk(bm.delete(A, 'ow/c2'))).status).toBe(200);
    expect(await countBlobs(s)).toBe(base + 1);
    await expectStored(s, A, 'ow/c1', fresh);
  });

  it('a forced copy over an existing object and a forced move release the replaced blob', async () => {
    const base = await countBlobs(s);
    await put(s, A, 'rel/a', 'aaa');
    await put(s, A, 'rel/b', 'bbb');
    await put(s, A, 'rel/c', 'ccc');
    expect(await countBlobs(s)).toBe(base + 3);
    const bm = s.bucketManager();
    expect((await sdk(bm.copy(A, 'rel/a', A, 'rel/b', { force: true }))).status).toBe(200);
    expect(await countBlobs(s)).toBe(base + 2);
    expect((await sdk(bm.move(A, 'rel/a', A, 'rel/c', { force: true }))).status).toBe(200);
    expect(await countBlobs(s)).toBe(base + 1);
    await expectStored(s, A, 'rel/b', Buffer.from('aaa'));
    await expectStored(s, A, 'rel/c', Buffer.from('aaa'));
  });
});
