/**
 * Bucket quotas (docs/development/kodo-protocol.md §8.6, §13.2): `BucketManager.putBucketQuota`/`getBucketQuota` of the official SDK
 * (0 = unchanged, -1 = no limit), bad input (631, 403, 400 naming the field), and enforcement at every commit:
 * with a quota of 2 files, a third object is refused (403 `bucket quota exceeded`) on each path that stores one —
 * form upload, resumable v1 and v2, fetch, mirror pulls, async fetch, copy and move, sync saveas and pfop outputs — storing
 * nothing; 20 parallel uploads against a quota of 1 leave exactly one object; a size quota counts an overwrite
 * by its difference; a delete frees room. The CLI shows and sets the quota and the usage.
 */
import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveBytes, startOrigin, type Origin } from '../helpers/fetch-origin.js';
import { BIN } from '../helpers/cli.js';
import { signedFetch } from '../helpers/http.js';
import { saveas, sdkPfop, waitFinal } from '../helpers/pfop.js';
import { ok, RawUp } from '../helpers/resumable.js';
import { countBlobs, entry } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket, download, expectAbsent, expectStored, FIXTURE_IMAGES, readAnswer, stagingFiles, type RawAnswer } from '../helpers/upload.js';

type Answer = { status: number; data: { error?: string; key?: string; hash?: string } };

let s: TestServer;
let bm: qiniu.rs.BucketManager;
let origin: Origin;
let dir: string;
let photo: Buffer;
const SRC = 'quota-src';

/** Creates `bucket` with a quota of `count` files (no size limit). */
async function bucketWithQuota(bucket: string, count: number, size = 0): Promise<void> {
  await createBucket(s, bucket);
  expect((await sdk(bm.putBucketQuota(bucket, { size, count }))).status).toBe(200);
}

/** `getBucketQuota` through the SDK. */
async function quota(bucket: string): Promise<{ status: number; data: { size: number; count: number; error?: string } }> {
  return sdk(bm.getBucketQuota(bucket));
}

/** Form upload through the SDK's FormUploader; the answer whatever its status. */
async function formPut(bucket: string, key: string, body: Buffer | string): Promise<Answer> {
  const token = s.uploadToken({ scope: `${bucket}:${key}` });
  return sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, key, Buffer.from(body), new qiniu.form_up.PutExtra()));
}

/** The refusal: 403 with a JSON error naming the quota. */
function expectRefused(a: { status: number; data: unknown }, limit: 'count' | 'size' = 'count'): void {
  expect(a.status, JSON.stringify(a.data)).toBe(403);
  expect(a.data).toEqual({ error: expect.stringMatching(new RegExp(`^bucket quota exceeded: bucket \\S+ is limited to \\d+ \\S+ \\(${limit} quota\\)$`)) });
}

/** Usage of a bucket from the store's counters, checked against a count of its entries. */
async function usage(bucket: string): Promise<{ bytes: number; count: number }> {
  const u = await s.running.g.meta.bucketUsage(bucket);
  expect(u).toBeDefined();
  expect(u?.count).toBe(await s.running.g.meta.countObjects(bucket));
  return u as { bytes: number; count: number };
}

/** Fills `bucket` with `n` small objects `fill-<i>` by form upload. */
async function fill(bucket: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await formPut(bucket, `fill-${i}`, `filler ${bucket} ${i}`)).status).toBe(200);
}

/** A saveas URL signed as Qiniu's docs do (HMAC-SHA1 over the URL without its scheme; see fop-saveas.test.ts). */
function signSaveas(url: string, encodedEntry: string): string {
  const unsigned = `${url}|saveas/${encodedEntry}`;
  const u = new URL(unsigned);
  const sign = createHmac('sha1', SK).update(u.host + u.pathname + u.search).digest('base64').replace(/\+/g, '-').replace(/\//g, '_');
  return `${unsigned}/sign/${AK}:${sign}`;
}

/** Async fetch submission and status (Qiniu v2 signed JSON, like the SDKs). */
async function asyncFetch(method: 'GET' | 'POST', path: string, body?: unknown): Promise<RawAnswer> {
  return readAnswer(
    await signedFetch(s, { method, path, contentType: 'application/json', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  );
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
  bm = s.bucketManager();
  origin = await startOrigin('127.0.0.1');
  dir = await mkdtemp(join(tmpdir(), 'granary-quota-'));
  photo = await readFile(join(FIXTURE_IMAGES, 'orientation_landscape_1.jpg'));
  await createBucket(s, SRC);
  expect((await formPut(SRC, 'photo.jpg', photo)).status).toBe(200);
  expect((await formPut(SRC, 'small.txt', 'small source')).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await origin?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('putBucketQuota / getBucketQuota', () => {
  it('a new bucket has no limits; set, 0 = unchanged, -1 = no limit, an omitted value is unchanged', async () => {
    await createBucket(s, 'quota-rt');
    expect(await quota('quota-rt')).toEqual({ status: 200, data: { size: -1, count: -1 } });
    expect((await sdk(bm.putBucketQuota('quota-rt', { size: 1048576, count: 5 }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: 1048576, count: 5 });
    expect((await sdk(bm.putBucketQuota('quota-rt', { size: 0, count: 7 }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: 1048576, count: 7 });
    // The SDK sends 0 for an option it was not given.
    expect((await sdk(bm.putBucketQuota('quota-rt', { count: 9 }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: 1048576, count: 9 });
    expect((await sdk(bm.putBucketQuota('quota-rt', { size: -1 }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: -1, count: 9 });
    expect((await sdk(bm.putBucketQuota('quota-rt', {}))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: -1, count: 9 });
    expect((await sdk(bm.putBucketQuota('quota-rt', { size: 0, count: -1 }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: -1, count: -1 });
  });

  it('getbucketquota answers GET too, and one of size/count alone may be set on the wire', async () => {
    const set = await signedFetch(s, { path: '/setbucketquota/quota-rt/count/3' });
    expect(set.status, await set.text()).toBe(200);
    const got = await readAnswer(await signedFetch(s, { method: 'GET', path: '/getbucketquota/quota-rt' }));
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toMatch(/^application\/json/);
    expect(got.json).toEqual({ size: -1, count: 3 });
    expect((await readAnswer(await signedFetch(s, { path: '/setbucketquota/quota-rt/size/100' }))).status).toBe(200);
    expect((await quota('quota-rt')).data).toEqual({ size: 100, count: 3 });
  });

  it('unknown bucket 631, another account\'s bucket 403, no credential 401', async () => {
    expect((await sdk(bm.putBucketQuota('quota-nope', { size: 1, count: 1 }))).status).toBe(631);
    expect((await quota('quota-nope')).status).toBe(631);

    const alice = await s.running.g.keyIndex.create(0);
    const aliceBm = new qiniu.rs.BucketManager(new qiniu.auth.digest.Mac(alice.accessKey, alice.secretKey), s.zoneConfig());
    const denied = await sdk<{ error: string }>(aliceBm.putBucketQuota('quota-rt', { size: -1, count: -1 }));
    expect(denied.status).toBe(403);
    expect(denied.data.error).toMatch(/no permission on bucket quota-rt/);
    expect((await sdk(aliceBm.getBucketQuota('quota-rt'))).status).toBe(403);
    expect((await quota('quota-rt')).data).toEqual({ size: 100, count: 3 });
    // Her own bucket is hers to limit.
    expect((await sdk(aliceBm.createBucket('quota-alice', { regionId: 'z0' }))).status).toBe(200);
    expect((await sdk(aliceBm.putBucketQuota('quota-alice', { size: 10, count: 0 }))).status).toBe(200);
    expect((await sdk(aliceBm.getBucketQuota('quota-alice'))).data).toEqual({ size: 10, count: -1 });

    expect((await fetch(`${s.url}/getbucketquota/quota-rt`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${s.url}/setbucketquota/quota-rt/size/1/count/1`, { method: 'POST' })).status).toBe(401);
  });

  it.each([
    ['/setbucketquota/quota-rt/size/abc/count/0', /size must be -1 \(no limit\), 0 \(unchanged\) or a positive integer/],
    ['/setbucketquota/quota-rt/size/0/count/-5', /count must be -1/],
    ['/setbucketquota/quota-rt/size/1.5/count/1', /size must be/],
    ['/setbucketquota/quota-rt/size/99999999999999999999/count/1', /size must be/],
    ['/setbucketquota/quota-rt/size/1/count/', /count must be/],
    ['/setbucketquota/quota-rt/bytes/1', /unknown quota parameter "bytes"/],
    ['/setbucketquota/quota-rt/size/1/size/2', /size given twice/],
    ['/setbucketquota/quota-rt', /expected \/setbucketquota/],
    ['/setbucketquota/quota-rt/size', /expected \/setbucketquota/],
  ])('%s is 400 naming what is wrong, and changes nothing', async (path, msg) => {
    const a = await readAnswer(await signedFetch(s, { path }));
    expect(a.status, a.text).toBe(400);
    expect((a.json as { error: string }).error).toMatch(msg);
    expect((await quota('quota-rt')).data).toEqual({ size: 100, count: 3 });
  });
});

describe('a quota of 2 files refuses the third object on every path, storing nothing', () => {
  it('form upload (FormUploader); an overwrite of an existing key still works; a delete frees room', async () => {
    const B = 'quota-form';
    await bucketWithQuota(B, 2);
    expect((await formPut(B, 'a', 'first')).status).toBe(200);
    expect((await formPut(B, 'b', 'second')).status).toBe(200);
    const blobs = await countBlobs(s);
    expectRefused(await formPut(B, 'c', 'third'));
    await expectAbsent(s, B, 'c');
    expect(await stagingFiles(s)).toEqual([]);
    expect(await countBlobs(s)).toBe(blobs);
    expect(await usage(B)).toEqual({ count: 2, bytes: 11 });
    // Replacing an entry does not add one.
    expect((await formPut(B, 'a', 'first, again')).status).toBe(200);
    await expectStored(s, B, 'a', Buffer.from('first, again'));
    // A delete frees room for one more.
    expect((await sdk(bm.delete(B, 'b'))).status).toBe(200);
    expect((await formPut(B, 'c', 'third')).status).toBe(200);
    expect(await usage(B)).toEqual({ count: 2, bytes: 17 });
    // Lifting the limit lifts the refusal.
    expect((await sdk(bm.putBucketQuota(B, { count: -1 }))).status).toBe(200);
    expect((await formPut(B, 'd', 'fourth')).status).toBe(200);
  });

  it.each(['v1', 'v2'] as const)('resumable %s (ResumeUploader.putFile)', async (version) => {
    const B = `quota-resumable-${version}`;
    await bucketWithQuota(B, 2);
    const path = join(dir, `resumable-${version}.bin`);
    await writeFile(path, Buffer.alloc(5000, version));
    const put = (key: string): Promise<Answer> =>
      sdk(
        new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putFile(
          s.uploadToken({ scope: `${B}:${key}` }),
          key,
          path,
          qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, version),
        ),
      );
    expect((await put('one')).status).toBe(200);
    expect((await put('two')).status).toBe(200);
    const blobs = await countBlobs(s);
    expectRefused(await put('three'));
    await expectAbsent(s, B, 'three');
    expect(await usage(B)).toEqual({ count: 2, bytes: 10000 });
    expect(await stagingFiles(s)).toEqual([]);
    // Only the session's pieces may remain (until the session expires or is aborted): no new entry's blob.
    expect(await countBlobs(s)).toBeLessThanOrEqual(blobs + 1);
  });

  it('a refused mkfile (v1) or complete (v2) keeps the session: sent again after a delete, it stores the object', async () => {
    const B = 'quota-resume-again';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    const up = new RawUp(s.url, s.uploadToken({ scope: B }));
    const content = Buffer.from('resumable content, refused then completed');
    const ctx = await up.block(content);
    const made = await up.mkfile(content.length, [ctx], { key: 'v1.bin' });
    expectRefused({ status: made.status, data: made.json });
    const id = ok<{ uploadId: string }>(await up.init(B, 'v2.bin')).uploadId;
    const etag = ok<{ etag: string }>(await up.part(B, 'v2.bin', id, 1, content)).etag;
    const done = await up.complete(B, 'v2.bin', id, { parts: [{ partNumber: 1, etag }] });
    expectRefused({ status: done.status, data: done.json });

    expect((await sdk(bm.delete(B, 'fill-0'))).status).toBe(200);
    expect((await sdk(bm.delete(B, 'fill-1'))).status).toBe(200);
    expect(ok<{ key: string }>(await up.mkfile(content.length, [ctx], { key: 'v1.bin' })).key).toBe('v1.bin');
    expect(ok<{ key: string }>(await up.complete(B, 'v2.bin', id, { parts: [{ partNumber: 1, etag }] })).key).toBe('v2.bin');
    await expectStored(s, B, 'v1.bin', content);
    await expectStored(s, B, 'v2.bin', content);
  });

  it('fetch from an origin', async () => {
    const B = 'quota-fetch';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    origin.route('/quota/fetched.txt', serveBytes(Buffer.from('fetched content')));
    const blobs = await countBlobs(s);
    expectRefused(await sdk(bm.fetch(`${origin.base}/quota/fetched.txt`, B, 'fetched.txt')));
    await expectAbsent(s, B, 'fetched.txt');
    expect(await countBlobs(s)).toBe(blobs);
    expect(await stagingFiles(s)).toEqual([]);
    expect(await sdk(bm.delete(B, 'fill-0'))).toMatchObject({ status: 200 });
    expect((await sdk(bm.fetch(`${origin.base}/quota/fetched.txt`, B, 'fetched.txt'))).status).toBe(200);
  });

  it('mirror pulls: a download miss and prefetch are refused, nothing stored', async () => {
    const B = 'quota-mirror';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    origin.route('/mirror/pulled.txt', serveBytes(Buffer.from('pulled content')));
    expect((await sdk(bm.image(B, `${origin.base}/mirror`))).status).toBe(200);
    const miss = await download(s, B, 'pulled.txt');
    expectRefused({ status: miss.status, data: JSON.parse(miss.body.toString()) });
    expectRefused(await sdk(bm.prefetch(B, 'pulled.txt')));
    expect(await usage(B)).toMatchObject({ count: 2 });
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('async fetch: the task fails with code 403 and stores nothing', async () => {
    const B = 'quota-async';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    origin.route('/quota/async.txt', serveBytes(Buffer.from('async content')));
    const sub = await asyncFetch('POST', '/sisyphus/fetch', { url: `${origin.base}/quota/async.txt`, bucket: B, key: 'async.txt' });
    expect(sub.status, sub.text).toBe(200);
    const id = (sub.json as { id: string }).id;
    let st: Record<string, unknown> = {};
    for (let i = 0; i < 400; i++) {
      const a = await asyncFetch('GET', `/sisyphus/fetch?id=${encodeURIComponent(id)}`);
      st = a.json as Record<string, unknown>;
      if (st.state === 'done' || st.state === 'failed') break;
      await sleep(25);
    }
    expect(st).toMatchObject({ state: 'failed', code: 403, error: expect.stringMatching(/^bucket quota exceeded/) });
    expect(st.attempts).toBe(1); // a refusal is final, never retried
    await expectAbsent(s, B, 'async.txt');
    expect(await usage(B)).toMatchObject({ count: 2 });
  });

  it('copy and move into the bucket; a move within it changes nothing and is allowed', async () => {
    const B = 'quota-copy';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    expectRefused(await sdk(bm.copy(SRC, 'small.txt', B, 'copied.txt', {})));
    expectRefused(await sdk(bm.move(SRC, 'small.txt', B, 'moved.txt', {})));
    // A copy within the full bucket adds an entry: refused too.
    expectRefused(await sdk(bm.copy(B, 'fill-0', B, 'fill-copy', {})));
    await expectAbsent(s, B, 'copied.txt');
    await expectAbsent(s, B, 'moved.txt');
    await expectAbsent(s, B, 'fill-copy');
    await expectStored(s, SRC, 'small.txt', Buffer.from('small source'));
    // In batch, the refused op is its own 403 among the others.
    const batch = await sdk<Array<{ code: number; data?: { error?: string } }>>(
      bm.batch([qiniu.rs.copyOp(SRC, 'small.txt', B, 'b1'), qiniu.rs.statOp(B, 'fill-0')]),
    );
    expect(batch.status).toBe(298);
    expect(batch.data[0]).toMatchObject({ code: 403, data: { error: expect.stringMatching(/^bucket quota exceeded/) } });
    expect(batch.data[1]?.code).toBe(200);
    // A rename inside the full bucket, even over an existing key, never grows it.
    expect((await sdk(bm.move(B, 'fill-0', B, 'renamed', {}))).status).toBe(200);
    expect((await sdk(bm.move(B, 'renamed', B, 'fill-1', { force: true }))).status).toBe(200);
    expect(await usage(B)).toMatchObject({ count: 1 });
    // Now there is room for one copy (a shared blob counts its full size in each bucket).
    expect((await sdk(bm.copy(SRC, 'small.txt', B, 'copied.txt', {}))).status).toBe(200);
    expect(await usage(B)).toEqual({ count: 2, bytes: Buffer.byteLength(`filler ${B} 0`) + Buffer.byteLength('small source') });
    expectRefused(await sdk(bm.copy(SRC, 'small.txt', B, 'copied-2.txt', {})));
  });

  it('sync saveas on a download URL', async () => {
    const B = 'quota-saveas';
    await bucketWithQuota(B, 2);
    await fill(B, 2);
    const blobs = await countBlobs(s);
    const res = await fetch(signSaveas(`${s.url}/${SRC}/photo.jpg?imageView2/2/w/64`, entry(B, 'thumb.jpg')));
    expectRefused({ status: res.status, data: await res.json() });
    await expectAbsent(s, B, 'thumb.jpg');
    expect(await countBlobs(s)).toBe(blobs);
    expect(await stagingFiles(s)).toEqual([]);
  });

  it('pfop outputs: the command fails (code 3) with the quota error, the job goes on', async () => {
    const B = 'quota-pfop';
    await bucketWithQuota(B, 2);
    await fill(B, 1);
    const fops = [`imageView2/2/w/40|${saveas(B, 'first.jpg')}`, `imageView2/2/w/30|${saveas(B, 'second.jpg')}`];
    const sub = await sdkPfop(s, SRC, 'photo.jpg', fops, '');
    expect(sub.status, JSON.stringify(sub.data)).toBe(200);
    const final = await waitFinal(s, sub.data.persistentId as string);
    expect(final.code).toBe(3);
    const stored = final.items.filter((it) => it.code === 0);
    const refused = final.items.filter((it) => it.code === 3);
    expect(stored).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.error).toMatch(/bucket quota exceeded/);
    expect(await usage(B)).toMatchObject({ count: 2 });
    expect((await download(s, B, 'first.jpg')).status + (await download(s, B, 'second.jpg')).status).toBe(200 + 404);
  });
});

describe('concurrency and size', () => {
  it('20 parallel uploads against a count quota of 1 leave exactly one object', async () => {
    const B = 'quota-race';
    await bucketWithQuota(B, 1);
    const blobs = await countBlobs(s);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => formPut(B, `racer-${i}`, `racer ${i} ${'x'.repeat(i)}`)));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectRefused(a);
    expect(await usage(B)).toMatchObject({ count: 1 });
    const list = await sdk<{ items: Array<{ key: string }> }>(bm.listPrefix(B, { limit: 100 }));
    expect(list.data.items.map((i) => i.key)).toEqual([ok[0]?.data.key]);
    expect(await stagingFiles(s)).toEqual([]);
    expect(await countBlobs(s)).toBe(blobs + 1);
  });

  it('a size quota counts bytes; an overwrite counts the difference; the object under the key stays on refusal', async () => {
    const B = 'quota-size';
    await bucketWithQuota(B, 0, 100);
    expect((await quota(B)).data).toEqual({ size: 100, count: -1 });
    expect((await formPut(B, 'a', 'a'.repeat(60))).status).toBe(200);
    expect((await formPut(B, 'b', 'b'.repeat(30))).status).toBe(200);
    expectRefused(await formPut(B, 'c', 'c'.repeat(11)), 'size');
    expect((await formPut(B, 'c', 'c'.repeat(10))).status).toBe(200); // exactly 100
    expect(await usage(B)).toEqual({ count: 3, bytes: 100 });
    // Overwrites: smaller is always fine; growing past the limit is refused and the old object stays.
    expect((await formPut(B, 'a', 'A'.repeat(50))).status).toBe(200);
    expectRefused(await formPut(B, 'a', 'Z'.repeat(61)), 'size');
    await expectStored(s, B, 'a', Buffer.from('A'.repeat(50)));
    expect((await formPut(B, 'a', 'Y'.repeat(60))).status).toBe(200);
    expect(await usage(B)).toEqual({ count: 3, bytes: 100 });
    // A delete frees its bytes.
    expect((await sdk(bm.delete(B, 'b'))).status).toBe(200);
    expect((await formPut(B, 'd', 'd'.repeat(30))).status).toBe(200);
    expect(await usage(B)).toEqual({ count: 3, bytes: 100 });
    // A quota lowered below the usage refuses growth but not shrinking.
    expect((await sdk(bm.putBucketQuota(B, { size: 50 }))).status).toBe(200);
    expectRefused(await formPut(B, 'e', 'e'), 'size');
    expect((await formPut(B, 'd', 'd'.repeat(5))).status).toBe(200);
  });
});

describe('CLI', () => {
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args, '--data-dir', s.dataDir, '--access-key', AK, '--secret-key', SK], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it('granary bucket quota prints the quota and the usage, sets it with --size/--count, and bucket list shows the usage', async () => {
    const B = 'quota-cli';
    await createBucket(s, B);
    expect((await formPut(B, 'one', '12345')).status).toBe(200);
    expect(cli('bucket', 'quota', B)).toMatchObject({ status: 0, stdout: 'size\t-1\tused 5\ncount\t-1\tused 1\n' });
    expect(cli('bucket', 'quota', B, '--count', '1', '--size', '1000')).toMatchObject({ status: 0, stdout: 'size\t1000\tused 5\ncount\t1\tused 1\n' });
    // The running server enforces what the CLI set.
    expect((await quota(B)).data).toEqual({ size: 1000, count: 1 });
    expectRefused(await formPut(B, 'two', 'x'));
    const bad = cli('bucket', 'quota', B, '--count', 'many');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/count must be -1 .*\(400\)/);
    const missing = cli('bucket', 'quota', 'quota-none');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no such bucket.*\(631\)/);
    expect(cli('bucket', 'list').stdout).toMatch(new RegExp(`^${B}\tz0\tpublic\troot\t1 files\t5 bytes$`, 'm'));
  }, 120_000);
});
