/**
 * The last Java and Go SDK wire facts (docs/reference/sdk-compatibility.md, "Java and Go"), each driven by the
 * request the SDK sends, shaped from its source (quoted above each test):
 * v2 complete with `metaData`; delete of an entry with no key (631); lifecycle and event rule names taken or
 * unknown (400); Intelligent Tiering (type 5) through chtype, stat and the S3 door; referer anti-leech with
 * `source_enabled` 0 on Granary's own domains (the source station); persistentOps that do not parse (the upload is
 * stored, the job fails — in persistent-ops.test.ts); a bucket's default io-src domain; chgm's unmet `cond` (613).
 */
import {
  DeleteBucketLifecycleCommand,
  GetBucketLifecycleConfigurationCommand,
  HeadObjectCommand,
  PutBucketLifecycleConfigurationCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { rawRequest } from '../helpers/http.js';
import { md5Hex, ok, RawUp, upToken } from '../helpers/resumable.js';
import { b64, entry, put, rawOp } from '../helpers/rs.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const B = 'java-go';
const PRIV = 'java-go-private';
const SOURCE_PARENT = 'src.granary.test';
const BOUND = 'files.java-go.test';

let s: TestServer;

/** A signed uc/rs call as the Java SDK's `BucketManager` sends it: POST, parameters in the URL, no body. */
const ucPost = (path: string) => rawOp(s, path, { scheme: 'Qiniu' });

/** stat through rs, parsed. */
async function stat(bucket: string, key: string): Promise<Record<string, unknown>> {
  const a = await rawOp(s, `/stat/${entry(bucket, key)}`, { method: 'GET' });
  expect(a.status, a.text).toBe(200);
  return a.json as Record<string, unknown>;
}

beforeAll(async () => {
  s = await startTestServer({ GRANARY_SOURCE_DOMAIN: SOURCE_PARENT });
  await createBucket(s, B);
  await createBucket(s, PRIV);
  expect((await sdk(s.bucketManager().putBucketAccessMode(PRIV, { private: 1 }))).status).toBe(200);
}, 60_000);
afterAll(async () => s.stop());

describe('v2 complete: the Java SDK sends metaData', () => {
  // java-sdk ApiUploadV2CompleteUpload: bodyMap "parts", "fname", "mimeType", "metaData", "customVars".
  async function upload(key: string, complete: Record<string, unknown>): Promise<void> {
    const up = new RawUp(s.url, upToken({ scope: `${B}:${key}` }));
    const { uploadId } = ok<{ uploadId: string }>(await up.init(B, key));
    const data = Buffer.from(`v2 ${key}`);
    const part = ok<{ etag: string; md5: string }>(await up.part(B, key, uploadId, 1, data));
    expect(part.md5).toBe(md5Hex(data));
    ok(await up.complete(B, key, uploadId, { parts: [{ partNumber: 1, etag: part.etag }], ...complete }));
  }

  it('metaData (capital D) is stored as the object metadata', async () => {
    await upload('java-meta.txt', { fname: 'java-meta.txt', mimeType: 'text/plain', metaData: { 'x-qn-meta-owner': 'java', 'x-qn-meta-n': '1' } });
    expect(await stat(B, 'java-meta.txt')).toMatchObject({ mimeType: 'text/plain', 'x-qn-meta': { owner: 'java', n: '1' } });
  });

  it('both spellings: merged, Kodo’s documented metadata wins a shared name', async () => {
    await upload('both-meta.txt', { metaData: { 'x-qn-meta-a': 'java', 'x-qn-meta-b': 'java' }, metadata: { 'x-qn-meta-a': 'node' } });
    expect((await stat(B, 'both-meta.txt'))['x-qn-meta']).toEqual({ a: 'node', b: 'java' });
  });
});

describe('delete of an entry that names no key', () => {
  // java-sdk BucketTest.testDelete / BucketTest2.testDelete: encodedEntry(bucket, null) is base64(bucket) alone;
  // Kodo answers 631 whether the bucket exists or not (and 612 for a missing key of an existing bucket).
  it('answers 631 for an existing bucket, a missing one, alone and in a batch', async () => {
    const existing = await ucPost(`/delete/${b64(B)}`);
    expect(existing.status, existing.text).toBe(631);
    expect(existing.json).toEqual({ error: expect.stringMatching(/no such bucket/) });
    expect((await ucPost(`/delete/${b64('java-go-missing')}`)).status).toBe(631);
    expect((await ucPost(`/delete/${entry('java-go-missing', 'dummy')}`)).status).toBe(631);
    expect((await ucPost(`/delete/${entry(B, 'dummy-key')}`)).status).toBe(612);
    const batch = await rawOp(s, '/batch', { body: `op=${encodeURIComponent(`/delete/${b64(B)}`)}` });
    expect(batch.status).toBe(298);
    expect(batch.json).toEqual([{ code: 631, data: { error: expect.any(String) } }]);
  });
});

describe('lifecycle and event rules: taken and unknown names', () => {
  // java-sdk BucketTest2.testBucketLifeCycleRule: rules/add|update with BucketLifeCycleRule.asQueryString() in the URL.
  const rule = (name: string, prefix: string | null): string =>
    `name=${name}&prefix=${prefix ?? ''}&delete_after_days=0&to_line_after_days=0&to_archive_ir_after_days=0&to_archive_after_days=0&to_deep_archive_after_days=0`;

  it('walks the Java test: update of an unknown name 400, taken name or prefix 400 `rule name exists`, then adds', async () => {
    expect((await ucPost(`/rules/add?bucket=${B}&${rule('a', 'x')}`)).status).toBe(200);
    expect((await ucPost(`/rules/update?bucket=${B}&${rule('x', 'a')}`)).status).toBe(400);
    expect((await ucPost(`/rules/update?bucket=${B}&${rule('a', null)}`)).status).toBe(200);
    const both = await ucPost(`/rules/add?bucket=${B}&${rule('a', null)}`);
    expect(both.status).toBe(400);
    expect(both.json).toEqual({ error: expect.stringMatching(/rule name exists/) }); // go-sdk TestBucketLifeCycleRule
    expect((await ucPost(`/rules/add?bucket=${B}&${rule('a', 'b')}`)).status).toBe(400);
    expect((await ucPost(`/rules/add?bucket=${B}&${rule('b', null)}`)).status).toBe(400);
    expect((await ucPost(`/rules/add?bucket=${B}&${rule('b', 'ab')}`)).status).toBe(200);
    expect((await ucPost(`/rules/add?bucket=${B}&${rule('c', 'abc')}`)).status).toBe(200);
    for (const name of ['a', 'b', 'c']) expect((await ucPost(`/rules/delete?bucket=${B}&name=${name}`)).status).toBe(200);
    expect((await rawOp(s, `/rules/get?bucket=${B}`, { method: 'GET' })).json).toEqual([]);
  });

  it('events: a taken name is 400 `event name exists` (go-sdk TestBucketEventRule), an unknown update 400', async () => {
    const ev = (name: string) => `bucket=${B}&name=${name}&event=put&event=mkfile&callbackURL=${encodeURIComponent('http://www.qiniu.com')}&host=www.qiniu.com`;
    expect((await ucPost(`/events/add?${ev('golangIntegrationTest')}`)).status).toBe(200);
    const taken = await ucPost(`/events/add?${ev('golangIntegrationTest')}`);
    expect(taken.status).toBe(400);
    expect(taken.json).toEqual({ error: expect.stringMatching(/event name exists/) });
    expect((await ucPost(`/events/update?${ev('nope')}`)).status).toBe(400);
    expect((await ucPost(`/events/delete?bucket=${B}&name=golangIntegrationTest`)).status).toBe(200);
  });
});

describe('Intelligent Tiering (storage class 5)', () => {
  // java-sdk BucketTest2.testStorageTypeIntelligentTiering: a form upload with an extra `insertOnly` form field,
  // chtype to StorageType.IntelligentTiering.ordinal() (5), stat type 5.
  it('chtype 5, stat type 5, and the S3 door calls it INTELLIGENT_TIERING both ways', async () => {
    const form = new FormData();
    form.append('token', upToken({ scope: B }));
    form.append('key', 'storage_type_intelligent_tiering');
    form.append('insertOnly', '1');
    form.append('file', new Blob(['aaa']), 'storage_type_intelligent_tiering');
    expect((await fetch(`${s.url}/`, { method: 'POST', body: form })).status).toBe(200);
    const key = 'storage_type_intelligent_tiering';
    expect((await ucPost(`/chtype/${entry(B, key)}/type/5`)).status).toBe(200);
    expect((await stat(B, key)).type).toBe(5);

    const s3 = new S3Client({ endpoint: s.s3Url, region: 'z0', forcePathStyle: true, credentials: { accessKeyId: AK, secretAccessKey: SK } });
    try {
      expect((await s3.send(new HeadObjectCommand({ Bucket: B, Key: key }))).StorageClass).toBe('INTELLIGENT_TIERING');
      await s3.send(new PutObjectCommand({ Bucket: B, Key: 's3-it.txt', Body: 'it', StorageClass: 'INTELLIGENT_TIERING' }));
      expect((await stat(B, 's3-it.txt')).type).toBe(5);
    } finally {
      s3.destroy();
    }
  });
});

describe('referer anti-leech on the source station', () => {
  // go-sdk TestRefererAntiLeechMode leaves the bucket in black-list mode (*.qiniu.com, empty Referer refused,
  // EnableSource false); the later upload tests read http://<bound domain>/<key>?qhash/md5 with no Referer.
  it('source_enabled 0: Granary’s own domains (bound, not CDN) serve a download without a Referer', async () => {
    await bindDomain(s.running.g, BOUND, B);
    await put(s, B, 'referer.txt', 'hello referer');
    const set = await ucPost(`/referAntiLeech?bucket=${B}&mode=2&norefer=0&pattern=${encodeURIComponent('*.qiniu.com')}&source_enabled=0`);
    expect(set.status, set.text).toBe(200);
    const md5 = await rawRequest({ port: s.running.port, method: 'GET', path: '/referer.txt?qhash/md5', headers: { Host: BOUND } });
    expect(md5.status, md5.body.toString()).toBe(200);
    expect(JSON.parse(md5.body.toString())).toMatchObject({ hash: md5Hex(Buffer.from('hello referer')) });
    // With source_enabled 1 the same rules hold on the source station too.
    await ucPost(`/referAntiLeech?bucket=${B}&mode=2&norefer=0&pattern=${encodeURIComponent('*.qiniu.com')}&source_enabled=1`);
    expect((await rawRequest({ port: s.running.port, method: 'GET', path: '/referer.txt', headers: { Host: BOUND } })).status).toBe(403);
    expect((await ucPost(`/referAntiLeech?bucket=${B}&mode=0&norefer=0&pattern=&source_enabled=0`)).status).toBe(200);
  });
});

describe('a bucket’s default io-src domain', () => {
  // java-sdk BucketTest2.testDefaultIoSrcDomainDownload: getDefaultIoSrcHost(bucket) is the region query's
  // io_src host; the test downloads http://<that host>/<key>?e=…&token=… (a private URL) and compares the bytes.
  it('the region query answers <bucket>.<GRANARY_SOURCE_DOMAIN>, which serves private downloads at /<key>', async () => {
    const port = s.running.port;
    const v3 = await fetch(`${s.url}/v3/query?ak=${AK}&bucket=${PRIV}`);
    const hosts = ((await v3.json()) as { hosts: Array<{ io_src: { src: { main: string[] } } }> }).hosts;
    expect(hosts[0]!.io_src.src.main).toEqual([`${PRIV}.${SOURCE_PARENT}:${port}`]);
    const v4 = (await (await fetch(`${s.url}/v4/query?ak=${AK}&bucket=${PRIV}`)).json()) as { hosts: Array<{ io_src: { domains: string[] } }> };
    expect(v4.hosts[0]!.io_src.domains).toEqual([`${PRIV}.${SOURCE_PARENT}:${port}`]);

    const data = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7) % 256));
    await put(s, PRIV, 'test_bucket_domain_file_key', data, { policy: { insertOnly: 1 } });
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const deadline = Math.floor(s.clock.nowMs() / 1000) + 180;
    const url = new URL(new qiniu.rs.BucketManager(mac, s.zoneConfig()).privateDownloadUrl(`http://${PRIV}.${SOURCE_PARENT}:${port}`, 'test_bucket_domain_file_key', deadline));
    const got = await rawRequest({ port, method: 'GET', path: url.pathname + url.search, headers: { Host: url.host } });
    expect(got.status, got.body.toString()).toBe(200);
    expect(got.body.equals(data)).toBe(true);
    // Unsigned on a private bucket: refused as on any other address.
    expect((await rawRequest({ port, method: 'GET', path: '/test_bucket_domain_file_key', headers: { Host: url.host } })).status).toBe(401);
  });

  it('then the bucket’s bound domains that are not CDN domains', async () => {
    const v4 = (await (await fetch(`${s.url}/v4/query?ak=${AK}&bucket=${B}`)).json()) as { hosts: Array<{ io_src: { domains: string[]; }; io: { domains: string[] } }> };
    expect(v4.hosts[0]!.io_src.domains).toEqual([`${B}.${SOURCE_PARENT}:${s.running.port}`, `${BOUND}:${s.running.port}`]);
    expect(v4.hosts[0]!.io.domains).toEqual([`127.0.0.1:${s.running.port}`]);
  });
});

describe('chgm with a cond that does not hold', () => {
  // java-sdk BucketTest2.testBatchCopyChgmDelete: BatchOperations.addChgmOp(bucket, key, mime, metas, Condition)
  // sends /chgm/<entry>/mime/<b64>[/x-qn-meta-…]/cond/<b64 "hash=…">; the test expects 613, then 200 with the right cond.
  it('answers 613 in a batch and alone; the right cond applies (200)', async () => {
    const key = 'chgm-cond.txt';
    await put(s, B, key, 'chgm cond', { mimeType: 'image/png' });
    const wrong = `/chgm/${entry(B, key)}/mime/${b64('image/jpg')}/cond/${b64('hash=ijdew[qoewqewwe')}`;
    const batch = await rawOp(s, '/batch', { body: `op=${encodeURIComponent(wrong)}` });
    expect(batch.json).toEqual([{ code: 613, data: { error: expect.any(String) } }]);
    expect((await rawOp(s, wrong)).status).toBe(613);
    const metas = `/chgm/${entry(B, key)}/mime/${b64('')}/x-qn-meta-haha/${b64('value')}/cond/${b64('hash=ijdew[qoewqewwe')}`;
    expect((await rawOp(s, '/batch', { body: `op=${encodeURIComponent(metas)}` })).json).toEqual([{ code: 613, data: { error: expect.any(String) } }]);
    const before = await stat(B, key);
    // putTime (100-ns units) is past 2^53: read it from the text, not the parsed number.
    const putTime = /"putTime":(\d+)/.exec((await rawOp(s, `/stat/${entry(B, key)}`, { method: 'GET' })).text)?.[1] as string;
    const right = `/chgm/${entry(B, key)}/mime/${b64('')}/x-qn-meta-haha/${b64('value')}/cond/${b64(`mime=${String(before.mimeType)}&hash=${String(before.hash)}&fsize=${String(before.fsize)}&putTime=${putTime}`)}`;
    expect((await rawOp(s, '/batch', { body: `op=${encodeURIComponent(right)}` })).json).toEqual([{ code: 200 }]);
    expect(await stat(B, key)).toMatchObject({ mimeType: 'image/png', 'x-qn-meta': { haha: 'value' } });
  });
});

// Last: the object test moves the clock by days (upload tokens signed earlier expire).
describe('lifecycle transitions to Intelligent Tiering', () => {
  const DAY = 86_400;
  it('bucket rules take to_intelligent_tiering_after_days (between IA and Archive IR) and S3 maps INTELLIGENT_TIERING to it', async () => {
    const bad = await ucPost(`/rules/add?bucket=${B}&name=it_bad&prefix=itb/&to_line_after_days=10&to_intelligent_tiering_after_days=5`);
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ error: expect.stringMatching(/to_intelligent_tiering_after_days \(5\) must be greater than to_line_after_days/) });
    const ok200 = await ucPost(`/rules/add?bucket=${B}&name=it_rule&prefix=itr/&to_line_after_days=10&to_intelligent_tiering_after_days=20&to_archive_ir_after_days=30`);
    expect(ok200.status, ok200.text).toBe(200);
    const rules = (await rawOp(s, `/rules/get?bucket=${B}`, { method: 'GET' })).json as Array<Record<string, unknown>>;
    expect(rules.find((r) => r.name === 'it_rule')).toMatchObject({ to_line_after_days: 10, to_intelligent_tiering_after_days: 20, to_archive_ir_after_days: 30 });
    await put(s, B, 'itr/obj.txt', 'rule');
    expect((await stat(B, 'itr/obj.txt')).transitionToIntelligentTiering).toEqual(expect.any(Number));
    expect((await ucPost(`/rules/delete?bucket=${B}&name=it_rule`)).status).toBe(200);

    const s3 = new S3Client({ endpoint: s.s3Url, region: 'z0', forcePathStyle: true, credentials: { accessKeyId: AK, secretAccessKey: SK } });
    try {
      const Rules = [{ ID: 'it_s3', Status: 'Enabled' as const, Filter: { Prefix: 'its3/' }, Transitions: [{ Days: 20, StorageClass: 'INTELLIGENT_TIERING' as const }] }];
      await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: B, LifecycleConfiguration: { Rules } }));
      const kodo = (await rawOp(s, `/rules/get?bucket=${B}`, { method: 'GET' })).json as Array<Record<string, unknown>>;
      expect(kodo).toEqual([expect.objectContaining({ name: 'it_s3', prefix: 'its3/', to_intelligent_tiering_after_days: 20 })]);
      const back = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: B }));
      expect(back.Rules?.[0]?.Transitions).toEqual([{ Days: 20, StorageClass: 'INTELLIGENT_TIERING' }]);
      await s3.send(new DeleteBucketLifecycleCommand({ Bucket: B }));
    } finally {
      s3.destroy();
    }
  });
  it('object lifecycle /toIntelligentTieringAfterDays/<n> (Kodo\'s modify-object-life-cycle): stat shows it, type 5 when due', async () => {
    await put(s, B, 'it-object.txt', 'object lifecycle');
    const op = `/lifecycle/${entry(B, 'it-object.txt')}/toIAAfterDays/1/toIntelligentTieringAfterDays/3/toArchiveAfterDays/0/toDeepArchiveAfterDays/0/deleteAfterDays/0`;
    expect((await rawOp(s, op)).status).toBe(200);
    const st = await stat(B, 'it-object.txt');
    expect(st.transitionToIntelligentTiering).toEqual(expect.any(Number));
    expect(st.transitionToIntelligentTiering as number).toBeGreaterThan(st.transitionToIA as number);
    s.clock.advance(2 * DAY);
    expect((await stat(B, 'it-object.txt')).type).toBe(1);
    s.clock.advance(2 * DAY);
    expect((await stat(B, 'it-object.txt')).type).toBe(5);
    expect((await rawOp(s, `/lifecycle/${entry(B, 'it-object.txt')}/toIntelligentTieringAfterDays/-1`)).status).toBe(200);
    expect(await stat(B, 'it-object.txt')).not.toHaveProperty('transitionToIntelligentTiering');
  });

});
