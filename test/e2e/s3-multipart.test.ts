/**
 * S3 multipart uploads: a 20 MiB file through each client's own multipart path — the AWS SDK for JavaScript v3
 * (`@aws-sdk/lib-storage` Upload, 5 MiB parts, default checksums), boto3 (`upload_file`, 5 MiB threshold and
 * parts), s3cmd (`--multipart-chunk-size-mb=5`) and rclone (5 MiB cutoff and chunks) — read back byte for byte
 * through the Kodo API, with the `"<md5 of md5s>-<n>"` ETag; UploadPartCopy with a range; ListParts,
 * ListMultipartUploads, abort; and every error code of the multipart operations.
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
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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
    expect(await codeOf(s3.send(new UploadPartCopyCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 3, CopySource: `${bucket}/sdk/twenty.bin`, CopySourceRange: 'bytes=0-999999999' })))).toBe('InvalidArgument');
    // A single small part is a valid (last) part: the upload still completes after the refusals.
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }] } }));
    expect(done.ETag).toBe(expectedEtag(small, small.length));
    expect((await kodoRead(key)).equals(small)).toBe(true);
    expect(await codeOf(complete([{ PartNumber: 1, ETag: p1.ETag! }]))).toBe('NoSuchUpload');
  });
});
