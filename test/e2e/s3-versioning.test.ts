/**
 * Bucket versioning (docs/reference/versioning.md) through real clients: the life of a key through the AWS SDK v3
 * (put, overwrite, delete marker, versions listed, an old version read, restore by copy, a version deleted for good,
 * Suspended → the null version), the same through boto3, paging ListObjectVersions, the refusals (malformed XML, a
 * malformed or unknown version id, a delete marker read by id), the Kodo door on a versioned bucket (qiniu SDK:
 * delete, overwrite, move leave versions visible through S3), expiry (deleteAfterDays, a lifecycle rule) adding
 * delete markers, and garbage collection keeping noncurrent versions' blobs.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { findOrphanBlobs } from '../../src/objects/blobs.js';
import { sweepExpired } from '../../src/objects/expiry.js';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, payloadHash, rawRequest, s3Client, signV4, type RawAnswer } from '../helpers/s3.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

let s: TestServer;
let s3: S3Client;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_CONSOLE_PORT: '0' });
  s3 = s3Client(s.s3Url!, AK, SK);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

/** One signed request with exactly this path (and query) and body. */
async function raw(method: string, path: string, body = ''): Promise<RawAnswer> {
  const signed = signV4({ method, path, host: new URL(s.s3Url!).host, payloadHash: payloadHash(body), ak: AK, sk: SK });
  return rawRequest(s.s3Url!, method, path, signed.headers, body);
}

/** A new bucket with versioning Enabled. */
async function versionedBucket(name: string): Promise<void> {
  await createBucket(s, name);
  await s3.send(new PutBucketVersioningCommand({ Bucket: name, VersioningConfiguration: { Status: 'Enabled' } }));
}

async function text(bucket: string, key: string, versionId?: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(versionId ? { VersionId: versionId } : {}) }));
  return got.Body!.transformToString();
}

/** Every version of the bucket as [key, versionId, isLatest, marker?], in the answer's (wire) order. */
async function versions(bucket: string): Promise<Array<[string, string, boolean, boolean]>> {
  const answer = await raw('GET', `/${bucket}?versions`);
  expect(answer.status).toBe(200);
  const out: Array<[string, string, boolean, boolean]> = [];
  for (const m of answer.body.matchAll(/<(Version|DeleteMarker)>(.*?)<\/\1>/g)) {
    const field = (name: string): string => new RegExp(`<${name}>([^<]*)</${name}>`).exec(m[2]!)![1]!;
    out.push([field('Key'), field('VersionId'), field('IsLatest') === 'true', m[1] === 'DeleteMarker']);
  }
  return out;
}

describe('bucket versioning state', () => {
  it('Enabled, Suspended, never back to unversioned; malformed XML refused', async () => {
    const bucket = 'ver-state';
    await createBucket(s, bucket);
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBeUndefined();
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBe('Enabled');
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Suspended' } }));
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBe('Suspended');
    // Raw bodies: another status, and a body that is not XML.
    for (const body of ['<VersioningConfiguration><Status>Disabled</Status></VersioningConfiguration>', 'not xml']) {
      const answer = await raw('PUT', `/${bucket}?versioning`, body);
      expect(answer.status).toBe(400);
      expect(answer.body).toContain('<Code>MalformedXML</Code>');
    }
    expect((await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBe('Suspended');
  });
});

describe('the versioning life of a key (AWS SDK v3)', () => {
  const bucket = 'ver-life';
  const key = 'doc.txt';
  let v1: string;
  let v2: string;

  beforeAll(async () => {
    await createBucket(s, bucket);
    // Written before versioning: the null version.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v0' }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
  });

  it('put and overwrite create versions; the current one is what reads and listings see', async () => {
    const put1 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v1' }));
    const put2 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v2' }));
    v1 = put1.VersionId!;
    v2 = put2.VersionId!;
    expect(v1).toMatch(/^[0-9a-f]{32}$/);
    expect(v2 > v1).toBe(true);
    expect(await text(bucket, key)).toBe('v2');
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.VersionId).toBe(v2);
    expect(await text(bucket, key, v1)).toBe('v1');
    expect(await text(bucket, key, 'null')).toBe('v0');
    expect(await versions(bucket)).toEqual([
      [key, v2, true, false],
      [key, v1, false, false],
      [key, 'null', false, false],
    ]);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.Contents?.map((c) => c.Key)).toEqual([key]);
  });

  it('a delete adds a delete marker: GET is 404 with x-amz-delete-marker, the versions stay', async () => {
    const del = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    expect(del.DeleteMarker).toBe(true);
    const marker = del.VersionId!;
    expect(marker > v2).toBe(true);
    const got = await raw('GET', `/${bucket}/${key}`);
    expect(got.status).toBe(404);
    expect(got.headers['x-amz-delete-marker']).toBe('true');
    expect(got.headers['x-amz-version-id']).toBe(marker);
    expect(got.body).toContain('<Code>NoSuchKey</Code>');
    // Naming the marker's id: 405.
    const gotById = await raw('GET', `/${bucket}/${key}?versionId=${marker}`);
    expect(gotById.status).toBe(405);
    expect(gotById.headers['x-amz-delete-marker']).toBe('true');
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount).toBe(0);
    expect(await versions(bucket)).toEqual([
      [key, marker, true, true],
      [key, v2, false, false],
      [key, v1, false, false],
      [key, 'null', false, false],
    ]);
    expect(await text(bucket, key, v2)).toBe('v2');
  });

  it('restore: copying an old version onto the key makes it current again', async () => {
    const copy = await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${key}?versionId=${v1}` }));
    expect(copy.CopySourceVersionId).toBe(v1);
    expect(copy.VersionId).toMatch(/^[0-9a-f]{32}$/);
    expect(await text(bucket, key)).toBe('v1');
    expect((await versions(bucket)).length).toBe(5);
  });

  it('a version deleted by id is gone for good; deleting the current one makes the previous current', async () => {
    const list = await versions(bucket);
    const current = list[0]![1];
    const del = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, VersionId: current }));
    expect(del.VersionId).toBe(current);
    expect(del.DeleteMarker).toBeUndefined();
    // The newest noncurrent version is the delete marker: the key reads as deleted.
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key })))).toBe('NoSuchKey');
    const marker = (await versions(bucket))[0]!;
    expect(marker[3]).toBe(true);
    const delMarker = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, VersionId: marker[1] }));
    expect(delMarker.DeleteMarker).toBe(true);
    // Removing the marker brings v2 back.
    expect(await text(bucket, key)).toBe('v2');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: current })))).toBe('NoSuchVersion');
  });

  it('refusals: a malformed version id is InvalidArgument, an unknown one NoSuchVersion', async () => {
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: 'not-an-id' })))).toBe('InvalidArgument');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: 'f'.repeat(32) })))).toBe('NoSuchVersion');
    expect(await codeOf(s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'x', CopySource: `${bucket}/${key}?versionId=${'f'.repeat(32)}` })))).toBe('NoSuchVersion');
    expect(await codeOf(s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, VersionId: 'bad' })))).toBe('InvalidArgument');
  });

  it('Suspended: writes and deletes use the null version, replacing the earlier null one', async () => {
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Suspended' } }));
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'suspended' }));
    expect(put.VersionId).toBeUndefined();
    expect(await text(bucket, key, 'null')).toBe('suspended');
    const list = await versions(bucket);
    expect(list.filter((v) => v[1] === 'null')).toEqual([[key, 'null', true, false]]);
    expect(list.map((v) => v[1])).toEqual(['null', v2, v1]);
    const del = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    expect([del.DeleteMarker, del.VersionId]).toEqual([true, 'null']);
    expect(await versions(bucket)).toEqual([
      [key, 'null', true, true],
      [key, v2, false, false],
      [key, v1, false, false],
    ]);
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
  });

  it('DeleteObjects: markers for keys, versions by id', async () => {
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'batch', Body: 'b' }));
    const out = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'batch' }, { Key: key, VersionId: v1 }] } }),
    );
    const byKey = Object.fromEntries((out.Deleted ?? []).map((d) => [d.Key, d]));
    expect(byKey.batch?.DeleteMarker).toBe(true);
    expect(byKey.batch?.DeleteMarkerVersionId).toMatch(/^[0-9a-f]{32}$/);
    expect(byKey[key]?.VersionId).toBe(v1);
    expect(await text(bucket, 'batch', put.VersionId)).toBe('b');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: v1 })))).toBe('NoSuchVersion');
  });
});

describe('multipart uploads', () => {
  it('CompleteMultipartUpload creates a version and answers its id', async () => {
    const bucket = 'ver-multipart';
    await versionedBucket(bucket);
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'm', Body: 'first' }));
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'm' }));
    const part = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'm', UploadId: upload.UploadId, PartNumber: 1, Body: 'second' }));
    const done = await s3.send(
      new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'm', UploadId: upload.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }),
    );
    expect(done.VersionId).toMatch(/^[0-9a-f]{32}$/);
    expect(done.VersionId! > first.VersionId!).toBe(true);
    expect(await text(bucket, 'm')).toBe('second');
    expect(await text(bucket, 'm', first.VersionId)).toBe('first');
    expect((await versions(bucket)).map((v) => v[1])).toEqual([done.VersionId, first.VersionId]);
  });
});

describe('ListObjectVersions pages', () => {
  it('key-marker and version-id-marker walk every version once, in order; delimiter rolls up prefixes', async () => {
    const bucket = 'ver-pages';
    await versionedBucket(bucket);
    const expected: string[] = [];
    for (const k of ['a', 'b', 'c']) {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: `${k}${i}` }))).VersionId!);
      expected.push(...ids.reverse().map((id) => `${k}/${id}`));
    }
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'dir/x', Body: 'x' }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'dir/y', Body: 'y' }));
    const seen: string[] = [];
    let keyMarker: string | undefined;
    let idMarker: string | undefined;
    for (let page = 0; page < 10; page++) {
      const out = await s3.send(
        new ListObjectVersionsCommand({ Bucket: bucket, MaxKeys: 2, Delimiter: '/', KeyMarker: keyMarker, VersionIdMarker: idMarker }),
      );
      for (const v of out.Versions ?? []) seen.push(`${v.Key}/${v.VersionId}`);
      for (const p of out.CommonPrefixes ?? []) seen.push(p.Prefix!);
      if (!out.IsTruncated) break;
      keyMarker = out.NextKeyMarker;
      idMarker = out.NextVersionIdMarker;
    }
    expect(seen).toEqual([...expected, 'dir/']);
    const prefixed = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'dir/' }));
    expect(prefixed.Versions?.map((v) => [v.Key, v.IsLatest])).toEqual([
      ['dir/x', true],
      ['dir/y', true],
    ]);
    expect(await codeOf(s3.send(new ListObjectVersionsCommand({ Bucket: bucket, VersionIdMarker: expected[0]!.slice(2) })))).toBe('InvalidArgument');
  });
});

describe('the Kodo door on a versioned bucket', () => {
  it('delete, overwrite and move keep every version (visible through S3); stat and list see the current one', async () => {
    const bucket = 'ver-kodo';
    await versionedBucket(bucket);
    const bm = s.bucketManager();
    const uploader = new qiniu.form_up.FormUploader(s.zoneConfig());
    const put = (key: string, body: string): Promise<unknown> =>
      sdk(uploader.put(s.uploadToken({ scope: `${bucket}:${key}` }), key, Buffer.from(body), new qiniu.form_up.PutExtra()));
    await put('k', 'one');
    await put('k', 'two');
    expect(await text(bucket, 'k')).toBe('two');
    expect((await sdk(bm.stat(bucket, 'k'))).status).toBe(200);
    expect((await sdk(bm.delete(bucket, 'k'))).status).toBe(200);
    expect((await sdk(bm.stat(bucket, 'k'))).status).toBe(612);
    let list = await versions(bucket);
    expect(list.map((v) => [v[2], v[3]])).toEqual([
      [true, true],
      [false, false],
      [false, false],
    ]);
    // Restore through S3, then move through Kodo: the source keeps its version under a marker.
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'k', CopySource: `${bucket}/k?versionId=${list[2]![1]}` }));
    expect(await text(bucket, 'k')).toBe('one');
    expect((await sdk(bm.move(bucket, 'k', bucket, 'moved', { force: true }))).status).toBe(200);
    expect(await text(bucket, 'moved')).toBe('one');
    list = await versions(bucket);
    expect(list.filter((v) => v[0] === 'k').map((v) => [v[2], v[3]])).toEqual([
      [true, true],
      [false, false],
      [false, true],
      [false, false],
      [false, false],
    ]);
    // A Kodo copy with force onto a key: one more version there, the ones under it kept.
    await put('target', 'old target');
    expect((await sdk(bm.copy(bucket, 'moved', bucket, 'target', { force: true }))).status).toBe(200);
    expect(await text(bucket, 'target')).toBe('one');
    expect((await versions(bucket)).filter((v) => v[0] === 'target').map((v) => [v[2], v[3]])).toEqual([
      [true, false],
      [false, false],
    ]);
    const listed = await sdk<{ items: Array<{ key: string }> }>(bm.listPrefix(bucket, {}));
    expect(listed.data.items.map((i) => i.key)).toEqual(['moved', 'target']);
    // Every noncurrent version still reads.
    for (const v of list.filter((x) => !x[3])) expect(['one', 'two']).toContain(await text(bucket, v[0], v[1]));
    expect(await text(bucket, 'target', (await versions(bucket)).find((v) => v[0] === 'target' && !v[2])![1])).toBe('old target');
  });
});

describe('garbage collection keeps the blobs of noncurrent versions', () => {
  it('an overwritten and deleted key: gc removes nothing, the old versions read', async () => {
    const bucket = 'ver-gc';
    await versionedBucket(bucket);
    const big = 'x'.repeat(64 * 1024); // over the inline size: a blob file
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'g', Body: `${big}1` }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'g', Body: `${big}2` }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'g' }));
    const report = await findOrphanBlobs(s.running.g, Date.now() + 3_600_000, { remove: true });
    expect(report.removed).toBe(0);
    expect(await text(bucket, 'g', first.VersionId)).toBe(`${big}1`);
  });
});

describe('boto3', () => {
  it('the versioning life of a key', async () => {
    const bucket = 'ver-boto3';
    await createBucket(s, bucket);
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
c.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={'Status': 'Enabled'})
assert c.get_bucket_versioning(Bucket=BUCKET)['Status'] == 'Enabled'
v1 = c.put_object(Bucket=BUCKET, Key='k', Body=b'one')['VersionId']
v2 = c.put_object(Bucket=BUCKET, Key='k', Body=b'two')['VersionId']
assert v1 != v2
d = c.delete_object(Bucket=BUCKET, Key='k')
assert d['DeleteMarker'] is True
e = expect_error(404, 'NoSuchKey', c.get_object, Bucket=BUCKET, Key='k')
assert e.response['ResponseMetadata']['HTTPHeaders']['x-amz-delete-marker'] == 'true'
expect_error(405, 'MethodNotAllowed', c.get_object, Bucket=BUCKET, Key='k', VersionId=d['VersionId'])
lv = c.list_object_versions(Bucket=BUCKET)
assert [v['VersionId'] for v in lv['Versions']] == [v2, v1], lv['Versions']
assert [(m['VersionId'], m['IsLatest']) for m in lv['DeleteMarkers']] == [(d['VersionId'], True)]
assert body(c.get_object(Bucket=BUCKET, Key='k', VersionId=v1)) == b'one'
c.copy_object(Bucket=BUCKET, Key='k', CopySource={'Bucket': BUCKET, 'Key': 'k', 'VersionId': v1})
assert body(c.get_object(Bucket=BUCKET, Key='k')) == b'one'
c.delete_object(Bucket=BUCKET, Key='k', VersionId=v2)
expect_error(404, 'NoSuchVersion', c.get_object, Bucket=BUCKET, Key='k', VersionId=v2)
expect_error(400, 'InvalidArgument', c.get_object, Bucket=BUCKET, Key='k', VersionId='nope')
c.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={'Status': 'Suspended'})
c.put_object(Bucket=BUCKET, Key='k', Body=b'null')
assert c.head_object(Bucket=BUCKET, Key='k', VersionId='null')['ContentLength'] == 4
`);
  });
});

// Last: it moves the server clock days ahead (S3 signatures are made with the real time, so no S3 call follows).
describe('expiry on a versioned bucket', () => {
  it("an object's deleteAfterDays and a lifecycle rule add delete markers; the versions stay", async () => {
    const bucket = 'ver-expiry';
    await versionedBucket(bucket);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'own', Body: 'own' }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'rule/a', Body: 'ruled' }));
    const bm = s.bucketManager();
    expect((await sdk(bm.deleteAfterDays(bucket, 'own', 1))).status).toBe(200);
    expect((await sdk(bm.putBucketLifecycleRule(bucket, { name: 'r', prefix: 'rule/', delete_after_days: 1 }))).status).toBe(200);
    s.clock.advance(3 * 86_400);
    expect(await sweepExpired(s.running.g)).toBeGreaterThan(0);
    const page = await s.running.g.meta.listVersions({ bucket, prefix: '', delimiter: '', limit: 100 });
    const got = page.entries.map((e) => (e.kind === 'version' ? [e.version.record.key, e.version.deleteMarker, e.version.isLatest] : e.prefix));
    expect(got).toEqual([
      ['own', true, true],
      ['own', false, false],
      ['rule/a', true, true],
      ['rule/a', false, false],
    ]);
  });
});
