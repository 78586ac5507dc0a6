/**
 * S3 multipart uploads: a 20 MiB file through each client's own multipart path — the AWS SDK for JavaScript v3
 * (`@aws-sdk/lib-storage` Upload, 5 MiB parts, default checksums), boto3 (`upload_file`, 5 MiB threshold and
 * parts), s3cmd (`--multipart-chunk-size-mb=5`) and rclone (5 MiB cutoff and chunks) — read back byte for byte
 * through the Kodo API, with the `"<md5 of md5s>-<n>"` ETag; UploadPartCopy with a range; ListParts,
 * ListMultipartUploads, abort; GetObject/HeadObject by part number; a repeated complete; every error code of the
 * multipart operations; and the multipart calls of Ceph's s3-tests through boto3 (`test_multipart_upload`,
 * `test_multipart_get_part`, `test_non_multipart_get_part`, `test_multipart_copy_invalid_range`,
 * `…_improper_range`, `test_multipart_upload_size_too_small`, `…_empty`, `…_complete_without_create`).
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const bucket = 's3-multipart';
let s: TestServer;
let s3: S3Client;
let dir: string;
/** The 20 MiB file every client uploads. */
const content = randomBytes(20 * MiB);
const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

/** The environment of a client program without the machine's AWS_* settings (a CA bundle, a profile). */
function clientEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
}

/** The S3 ETag of `data` uploaded in parts of `partSize`. */
function expectedEtag(data: Buffer, partSize: number): string {
  const sums: Buffer[] = [];
  for (let i = 0; i < data.length; i += partSize) sums.push(createHash('md5').update(data.subarray(i, i + partSize)).digest());
  return `"${createHash('md5').update(Buffer.concat(sums)).digest('hex')}-${sums.length}"`;
}

/** The bytes of `<bucket>/<key>` read through the Kodo API (signed download URL). */
async function kodoRead(key: string): Promise<Buffer> {
  const url = s.bucketManager().privateDownloadUrl(`${s.url}/${bucket}`, key, Math.floor(s.clock.nowMs() / 1000) + 600);
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** Checks `key` holds the 20 MiB content (Kodo read, stat) and answers the multipart ETag of 5 MiB parts. */
async function expectTwentyMiB(key: string): Promise<void> {
  const got = await kodoRead(key);
  expect(got.length).toBe(content.length);
  expect(md5(got)).toBe(md5(content));
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  expect(head.ETag).toBe(expectedEtag(content, 5 * MiB));
  expect(head.ContentLength).toBe(content.length);
  const stat = await sdk<{ fsize: number }>(s.bucketManager().stat(bucket, key));
  expect(stat.data.fsize).toBe(content.length);
}

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  await createBucket(s, bucket);
  dir = await mkdtemp(join(tmpdir(), 's3-multipart-'));
  await writeFile(join(dir, 'twenty.bin'), content);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('each client multipart path, 20 MiB in 5 MiB parts', () => {
  it('AWS SDK v3 lib-storage Upload (default checksums)', async () => {
    const up = new Upload({ client: s3, params: { Bucket: bucket, Key: 'sdk/twenty.bin', Body: content, ContentType: 'application/x-twenty', Metadata: { origin: 'sdk' } }, partSize: 5 * MiB, queueSize: 2 });
    const out = await up.done();
    expect(out.ETag).toBe(expectedEtag(content, 5 * MiB));
    await expectTwentyMiB('sdk/twenty.bin');
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sdk/twenty.bin', PartNumber: 2 }));
    expect(head.PartsCount).toBe(4);
    expect(head.ContentType).toBe('application/x-twenty');
    expect(head.Metadata).toEqual({ origin: 'sdk' });
  });

  it('boto3 upload_file with TransferConfig(multipart_threshold=5 MiB)', async () => {
    const script = [
      'import boto3, sys',
      'from boto3.s3.transfer import TransferConfig',
      'from botocore.config import Config',
      "c = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='cn-east-1', config=Config(s3={'addressing_style': 'path'}))",
      "c.upload_file(sys.argv[4], sys.argv[5], 'boto3/twenty.bin', Config=TransferConfig(multipart_threshold=5*1024*1024, multipart_chunksize=5*1024*1024, max_concurrency=2))",
    ].join('\n');
    await run('python3', ['-c', script, s.s3Url!, AK, SK, join(dir, 'twenty.bin'), bucket], { env: clientEnv() });
    await expectTwentyMiB('boto3/twenty.bin');
  });

  it('s3cmd put --multipart-chunk-size-mb=5', async () => {
    const host = new URL(s.s3Url!).host;
    const cfg = join(dir, 's3cfg');
    await writeFile(cfg, `[default]\naccess_key = ${AK}\nsecret_key = ${SK}\nhost_base = ${host}\nhost_bucket = ${host}\nuse_https = False\nbucket_location = cn-east-1\nsignature_v2 = False\n`);
    await run('s3cmd', ['-c', cfg, '--multipart-chunk-size-mb=5', '--no-progress', 'put', join(dir, 'twenty.bin'), `s3://${bucket}/s3cmd/twenty.bin`], { env: clientEnv() });
    await expectTwentyMiB('s3cmd/twenty.bin');
  });

  it('rclone copyto --s3-upload-cutoff 5M --s3-chunk-size 5M', async () => {
    await run('rclone', [
      'copyto', join(dir, 'twenty.bin'), `:s3:${bucket}/rclone/twenty.bin`,
      '--s3-provider', 'Other', '--s3-endpoint', s.s3Url!, '--s3-access-key-id', AK, '--s3-secret-access-key', SK,
      '--s3-region', 'cn-east-1', '--s3-force-path-style', '--s3-upload-cutoff', '5M', '--s3-chunk-size', '5M',
      '--s3-no-check-bucket', '--config', '/dev/null', '-q',
    ], { env: clientEnv() });
    await expectTwentyMiB('rclone/twenty.bin');
  });
});

describe('the multipart operations', () => {
  it('UploadPartCopy with x-amz-copy-source-range, ListParts, ListMultipartUploads, complete', async () => {
    const src = 'copy/source.bin';
    const source = randomBytes(12 * MiB);
    await new Upload({ client: s3, params: { Bucket: bucket, Key: src, Body: source }, partSize: 6 * MiB }).done();
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'copy/joined.bin' }));
    const first = await s3.send(new UploadPartCopyCommand({ Bucket: bucket, Key: 'copy/joined.bin', UploadId, PartNumber: 1, CopySource: `${bucket}/${src}`, CopySourceRange: `bytes=${MiB}-${7 * MiB - 1}` }));
    expect(first.CopyPartResult?.ETag).toBe(`"${md5(source.subarray(MiB, 7 * MiB))}"`);
    const tail = Buffer.from('the tail part');
    const second = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'copy/joined.bin', UploadId, PartNumber: 2, Body: tail }));
    expect(second.ETag).toBe(`"${md5(tail)}"`);
    const parts = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: 'copy/joined.bin', UploadId }));
    expect(parts.Parts?.map((p) => [p.PartNumber, p.Size, p.ETag])).toEqual([[1, 6 * MiB, first.CopyPartResult?.ETag], [2, tail.length, second.ETag]]);
    const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'copy/' }));
    expect(listed.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual([['copy/joined.bin', UploadId]]);
    const done = await s3.send(new CompleteMultipartUploadCommand({
      Bucket: bucket, Key: 'copy/joined.bin', UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: first.CopyPartResult!.ETag! }, { PartNumber: 2, ETag: second.ETag! }] },
    }));
    const joined = Buffer.concat([source.subarray(MiB, 7 * MiB), tail]);
    expect(done.ETag).toBe(expectedEtag(joined, 6 * MiB));
    expect((await kodoRead('copy/joined.bin')).equals(joined)).toBe(true);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'copy/joined.bin', Range: 'bytes=0-9' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(joined.subarray(0, 10))).toBe(true);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'copy/' }))).Uploads ?? []).toEqual([]);
  });

  it('abort frees the upload: its parts and a second abort are NoSuchUpload', async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'abort/me.bin' }));
    await s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'abort/me.bin', UploadId, PartNumber: 1, Body: Buffer.from('x') }));
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'abort/me.bin', UploadId }));
    expect(await codeOf(s3.send(new ListPartsCommand({ Bucket: bucket, Key: 'abort/me.bin', UploadId })))).toBe('NoSuchUpload');
    expect(await codeOf(s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'abort/me.bin', UploadId })))).toBe('NoSuchUpload');
  });

  it('answers every error code of complete and part upload', async () => {
    const key = 'errors/obj.bin';
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const small = Buffer.from('too small to be anything but the last part');
    const p1 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: small }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 2, Body: small }));
    const complete = (parts: Array<{ PartNumber: number; ETag: string }>, id = UploadId): Promise<unknown> =>
      s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id, MultipartUpload: { Parts: parts } }));
    expect(await codeOf(complete([{ PartNumber: 2, ETag: p2.ETag! }, { PartNumber: 1, ETag: p1.ETag! }]))).toBe('InvalidPartOrder');
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 3, ETag: p2.ETag! }]))).toBe('InvalidPart');
    expect(await codeOf(complete([{ PartNumber: 1, ETag: `"${'0'.repeat(32)}"` }]))).toBe('InvalidPart');
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }]))).toBe('EntityTooSmall');
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }], 'no-such-upload'))).toBe('NoSuchUpload');
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: 'no-such-upload', PartNumber: 1, Body: small })))).toBe('NoSuchUpload');
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: bucket, Key: 'errors/other-key', UploadId, PartNumber: 1, Body: small })))).toBe('NoSuchUpload');
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 10001, Body: small })))).toBe('InvalidArgument');
    expect(await codeOf(s3.send(new UploadPartCopyCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 3, CopySource: `${bucket}/sdk/twenty.bin`, CopySourceRange: 'bytes=0-999999999' })))).toBe('InvalidRange');
    expect(await codeOf(s3.send(new UploadPartCopyCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 3, CopySource: `${bucket}/sdk/twenty.bin`, CopySourceRange: 'bytes=0-' })))).toBe('InvalidArgument');
    // A single small part is a valid (last) part: the upload still completes after the refusals.
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }] } }));
    expect(done.ETag).toBe(expectedEtag(small, small.length));
    expect((await kodoRead(key)).equals(small)).toBe(true);
    // A repeated complete of the same parts answers the same result (S3 does; boto3 retries rely on it), not
    // another list, nor once the object was replaced.
    const again = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }] } }));
    expect(again.ETag).toBe(done.ETag);
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }]))).toBe('NoSuchUpload');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: small }));
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }]))).toBe('NoSuchUpload');
  });

  it('GetObject/HeadObject by part number: the part, PartsCount; past the count 400 InvalidPart; a plain object is one part', async () => {
    const head = (key: string, PartNumber: number) => s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, PartNumber }));
    const whole = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'sdk/twenty.bin' }));
    const third = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'sdk/twenty.bin', PartNumber: 3 }));
    expect(third.PartsCount).toBe(4);
    expect(third.ETag).toBe(whole.ETag);
    expect(third.ContentRange).toBe(`bytes ${10 * MiB}-${15 * MiB - 1}/${20 * MiB}`);
    expect(Buffer.from(await third.Body!.transformToByteArray()).equals(content.subarray(10 * MiB, 15 * MiB))).toBe(true);
    // A HEAD error has no body: its status tells.
    expect(await head('sdk/twenty.bin', 5).then(() => 200, (e: { $metadata?: { httpStatusCode?: number } }) => e.$metadata?.httpStatusCode)).toBe(400);
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'sdk/twenty.bin', PartNumber: 5 })))).toBe('InvalidPart');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'plain.txt', Body: 'body' }));
    const one = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'plain.txt', PartNumber: 1 }));
    expect(await one.Body!.transformToString()).toBe('body');
    expect(one.PartsCount).toBeUndefined();
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'plain.txt', PartNumber: 2 })))).toBe('InvalidPart');
  });
});

describe('boto3, as Ceph s3-tests drive multipart uploads', () => {
  it('test_multipart_upload: 30 MiB in 5 MiB parts with metadata and a content type, part 1 re-sent, completed twice', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
MiB = 1024 * 1024
key = 'boto3/mymultipart'
data = os.urandom(30 * MiB)
uid = c.create_multipart_upload(Bucket=BUCKET, Key=key, Metadata={'foo': 'bar'}, ContentType='text/bla')['UploadId']
parts = []
for i in range(6):
    chunk = data[i * 5 * MiB:(i + 1) * 5 * MiB]
    r = c.upload_part(UploadId=uid, Bucket=BUCKET, Key=key, PartNumber=i + 1, Body=chunk)
    parts.append({'ETag': r['ETag'].strip('"'), 'PartNumber': i + 1})
    if i == 0:
        c.upload_part(UploadId=uid, Bucket=BUCKET, Key=key, PartNumber=1, Body=chunk)
expect_error(404, 'NoSuchKey', c.get_object, Bucket=BUCKET, Key=key, PartNumber=1)
listed = c.list_parts(Bucket=BUCKET, Key=key, UploadId=uid)
assert [(p['PartNumber'], p['Size']) for p in listed['Parts']] == [(n, 5 * MiB) for n in range(1, 7)], listed
first = c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={'Parts': parts})
second = c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={'Parts': parts})
assert first['ETag'] == second['ETag'] and first['ETag'].endswith('-6"'), (first, second)
objs = c.list_objects_v2(Bucket=BUCKET, Prefix=key)['Contents']
assert len(objs) == 1 and objs[0]['Size'] == 30 * MiB
r = c.get_object(Bucket=BUCKET, Key=key)
assert r['ContentType'] == 'text/bla' and r['Metadata'] == {'foo': 'bar'}, (r['ContentType'], r['Metadata'])
assert body(r) == data
for start in range(0, 30 * MiB, 10000000):
    end = min(start + 1000000, 30 * MiB) - 1
    assert body(c.get_object(Bucket=BUCKET, Key=key, Range=f'bytes={start}-{end}')) == data[start:end + 1]
for n in range(1, 7):
    h = c.head_object(Bucket=BUCKET, Key=key, PartNumber=n)
    assert h['PartsCount'] == 6 and h['ETag'] == first['ETag'] and h['ContentLength'] == 5 * MiB, h
expect_error(400, 'InvalidPart', c.get_object, Bucket=BUCKET, Key=key, PartNumber=7)
`);
  });

  it('the error answers s3-tests expect: copy ranges, EntityTooSmall, empty complete, unknown uploads', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
c.put_object(Bucket=BUCKET, Key='boto3/source', Body=b'12345')
uid = c.create_multipart_upload(Bucket=BUCKET, Key='boto3/dest')['UploadId']
src = {'Bucket': BUCKET, 'Key': 'boto3/source'}
e = expect_error(416, 'InvalidRange', c.upload_part_copy, Bucket=BUCKET, Key='boto3/dest', UploadId=uid, CopySource=src, CopySourceRange='bytes=0-21', PartNumber=1)
for bad in ('0-2', 'bytes=0', 'bytes=hello-world', 'bytes=0-bar', 'bytes=hello-', 'bytes=0-2,3-5'):
    expect_error(400, 'InvalidArgument', c.upload_part_copy, Bucket=BUCKET, Key='boto3/dest', UploadId=uid, CopySource=src, CopySourceRange=bad, PartNumber=1)
r = c.upload_part_copy(Bucket=BUCKET, Key='boto3/dest', UploadId=uid, CopySource=src, PartNumber=1)
c.complete_multipart_upload(Bucket=BUCKET, Key='boto3/dest', UploadId=uid, MultipartUpload={'Parts': [{'ETag': r['CopyPartResult']['ETag'], 'PartNumber': 1}]})
assert body(c.get_object(Bucket=BUCKET, Key='boto3/dest')) == b'12345'

uid = c.create_multipart_upload(Bucket=BUCKET, Key='boto3/small')['UploadId']
parts = []
for n in range(1, 11):
    r = c.upload_part(UploadId=uid, Bucket=BUCKET, Key='boto3/small', PartNumber=n, Body=os.urandom(10 * 1024))
    parts.append({'ETag': r['ETag'].strip('"'), 'PartNumber': n})
expect_error(400, 'EntityTooSmall', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/small', UploadId=uid, MultipartUpload={'Parts': parts})
expect_error(400, 'MalformedXML', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/small', UploadId=uid)
expect_error(400, 'InvalidPart', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/small', UploadId=uid, MultipartUpload={'Parts': [{'ETag': '1234', 'PartNumber': 1}]})
expect_error(400, 'InvalidPartOrder', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/small', UploadId=uid, MultipartUpload={'Parts': parts[::-1]})
c.abort_multipart_upload(Bucket=BUCKET, Key='boto3/small', UploadId=uid)
expect_error(404, 'NoSuchUpload', c.abort_multipart_upload, Bucket=BUCKET, Key='boto3/small', UploadId=uid)
expect_error(404, 'NoSuchUpload', c.list_parts, Bucket=BUCKET, Key='boto3/small', UploadId=uid)
expect_error(404, 'NoSuchUpload', c.complete_multipart_upload, Bucket=BUCKET, Key='boto3/none', UploadId='abc1234def', MultipartUpload={'Parts': [{'ETag': '1234', 'PartNumber': 1}]})

c.put_object(Bucket=BUCKET, Key='boto3/singlepart', Body=b'body')
expect_error(400, 'InvalidPart', c.get_object, Bucket=BUCKET, Key='boto3/singlepart', PartNumber=2)
r = c.get_object(Bucket=BUCKET, Key='boto3/singlepart', PartNumber=1)
assert body(r) == b'body' and 'PartsCount' not in r
`);
  });
});
