/**
 * S3 server-side encryption over encryption at rest (s3api/sse.ts, docs/reference/encryption.md): SSE-S3 and SSE-C
 * round trips with ranges and multipart through the AWS SDK v3 and boto3, copies between keys, the bucket default
 * (Put/Get/DeleteBucketEncryption) applied to a Kodo SDK upload, fops on SSE-S3 objects and their refusal on SSE-C
 * ones, the errors of missing and wrong keys (never bytes), no plaintext under the data dir, and a server without a
 * master key refusing to claim encryption.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketEncryptionCommand,
  GetBucketEncryptionCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boto3 } from '../helpers/boto3.js';
import { put } from '../helpers/rs.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const BUCKET = 'sse';
const MARKER = Buffer.from('SSE-PLAINTEXT-MARKER-51c2e8');
/** SSE-C keys as the SDK takes them (a 32-byte string: it sends its base64 and MD5). */
const KEY_A = 'A'.repeat(16) + 'customer-key-one';
const KEY_B = 'B'.repeat(16) + 'customer-key-two';
const ssec = (key: string): { SSECustomerAlgorithm: string; SSECustomerKey: string } => ({ SSECustomerAlgorithm: 'AES256', SSECustomerKey: key });
const md5b64 = (key: string): string => createHash('md5').update(key).digest('base64');

function content(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let at = 0; at < size; at += MARKER.length) MARKER.copy(b, at);
  for (let at = 0; at + 8 <= size; at += 4 * KiB) b.writeDoubleBE(at, at);
  return b;
}

let s: TestServer;
let s3: S3Client;
let keyFile: string;

async function bytesOf(p: Promise<{ Body?: { transformToByteArray(): Promise<Uint8Array> } }>): Promise<Buffer> {
  return Buffer.from(await (await p).Body!.transformToByteArray());
}

beforeAll(async () => {
  keyFile = join(tmpdir(), `granary-sse-${randomBytes(6).toString('hex')}.key`);
  await writeFile(keyFile, randomBytes(32).toString('base64'));
  s = await startTestServer({ GRANARY_MASTER_KEY_FILE: keyFile, GRANARY_INLINE_MAX: String(8 * KiB) });
  s3 = s3Client(s.s3Url!, AK, SK);
  // Created through Kodo: a public bucket, so Kodo downloads and fops need no signature.
  await createBucket(s, BUCKET);
});

afterAll(async () => {
  await s?.stop();
  await rm(keyFile, { force: true });
});

describe('SSE-S3', () => {
  it('is answered on PUT, GET and HEAD, whole and by ranges, single and multipart', async () => {
    for (const size of [100, 200 * KiB + 3]) {
      const body = content(size);
      const key = `s3-${size}`;
      const putAnswer = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body, ServerSideEncryption: 'AES256' }));
      expect(putAnswer.ServerSideEncryption).toBe('AES256');
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      expect(got.ServerSideEncryption).toBe('AES256');
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
      expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))).ServerSideEncryption).toBe('AES256');
      const a = Math.floor(size / 2);
      expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: `bytes=${a}-${size - 1}` })))).equals(body.subarray(a))).toBe(true);
    }
    const body = content(6 * MiB + 1);
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 's3-multi', ServerSideEncryption: 'AES256' }));
    expect(created.ServerSideEncryption).toBe('AES256');
    const p1 = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 's3-multi', UploadId: created.UploadId, PartNumber: 1, Body: body.subarray(0, 5 * MiB) }));
    const p2 = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 's3-multi', UploadId: created.UploadId, PartNumber: 2, Body: body.subarray(5 * MiB) }));
    expect(p1.ServerSideEncryption).toBe('AES256');
    const done = await s3.send(new CompleteMultipartUploadCommand({
      Bucket: BUCKET, Key: 's3-multi', UploadId: created.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }] },
    }));
    expect(done.ServerSideEncryption).toBe('AES256');
    const r = `bytes=${5 * MiB - 10}-${5 * MiB + 10}`;
    expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 's3-multi', Range: r })))).equals(body.subarray(5 * MiB - 10, 5 * MiB + 11))).toBe(true);
  });

  it('refuses KMS and unknown algorithms', async () => {
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'kms', Body: 'x', ServerSideEncryption: 'aws:kms' })))).toBe('NotImplemented');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'odd', Body: 'x', ServerSideEncryption: 'AES512' as 'AES256' })))).toBe('InvalidArgument');
  });

  it('runs fops on an SSE-S3 object transparently', async () => {
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 0, g: 90, b: 200 } } }).png().toBuffer();
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'blue.png', Body: png, ServerSideEncryption: 'AES256' }));
    const info = await fetch(`${s.url}/${BUCKET}/blue.png?imageInfo`);
    expect(await info.json()).toMatchObject({ width: 40, height: 30, format: 'png' });
    const thumb = await fetch(`${s.url}/${BUCKET}/blue.png?imageView2/2/w/20`);
    expect(thumb.status).toBe(200);
    expect((await sharp(Buffer.from(await thumb.arrayBuffer())).metadata()).width).toBe(20);
  });
});

describe('SSE-C', () => {
  it('round-trips with the key, whole and by ranges; refuses a missing (400) or wrong (403) key without bytes', async () => {
    for (const size of [100, 300 * KiB + 7]) {
      const body = content(size);
      const key = `c-${size}`;
      const putAnswer = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body, ...ssec(KEY_A) }));
      expect(putAnswer.SSECustomerAlgorithm).toBe('AES256');
      expect(putAnswer.SSECustomerKeyMD5).toBe(md5b64(KEY_A));
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...ssec(KEY_A) }));
      expect(got.SSECustomerKeyMD5).toBe(md5b64(KEY_A));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
      const a = Math.floor(size / 3);
      expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: `bytes=${a}-${a + 70000}`, ...ssec(KEY_A) })))).equals(body.subarray(a, a + 70001))).toBe(true);
      expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ...ssec(KEY_A) }))).ContentLength).toBe(size);
      expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key })))).toBe('InvalidRequest');
      expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...ssec(KEY_B) })))).toBe('AccessDenied');
      // Kodo downloads and fops have no way to give the key: refused, no bytes.
      const kodo = await fetch(`${s.url}/${BUCKET}/${key}`);
      expect(kodo.status).toBe(403);
      expect(Buffer.from(await kodo.arrayBuffer()).includes(MARKER)).toBe(false);
    }
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 's3-100', ...ssec(KEY_A) })))).toBe('InvalidRequest');
  });

  it('round-trips a multipart upload (the key on every part) with a range across parts', async () => {
    const body = content(5 * MiB + 4 * KiB);
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'c-multi', ...ssec(KEY_A) }));
    const p1 = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'c-multi', UploadId: created.UploadId, PartNumber: 1, Body: body.subarray(0, 5 * MiB), ...ssec(KEY_A) }));
    expect(p1.SSECustomerKeyMD5).toBe(md5b64(KEY_A));
    expect(await codeOf(s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'c-multi', UploadId: created.UploadId, PartNumber: 2, Body: body.subarray(5 * MiB) })))).toBe('InvalidRequest');
    const p2 = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'c-multi', UploadId: created.UploadId, PartNumber: 2, Body: body.subarray(5 * MiB), ...ssec(KEY_A) }));
    await s3.send(new CompleteMultipartUploadCommand({
      Bucket: BUCKET, Key: 'c-multi', UploadId: created.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag! }, { PartNumber: 2, ETag: p2.ETag! }] },
    }));
    expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'c-multi', ...ssec(KEY_A) })))).equals(body)).toBe(true);
    const r = `bytes=${5 * MiB - 100}-${5 * MiB + 100}`;
    expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'c-multi', Range: r, ...ssec(KEY_A) })))).equals(body.subarray(5 * MiB - 100, 5 * MiB + 101))).toBe(true);
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'c-multi', Range: r, ...ssec(KEY_B) })))).toBe('AccessDenied');
  });

  it('copies between keys: SSE-C to another customer key, to SSE-S3, and plain to SSE-C', async () => {
    const body = content(150 * KiB);
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'copy-src', Body: body, ...ssec(KEY_A) }));
    // Without the source's key: refused.
    expect(await codeOf(s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'copy-x', CopySource: `${BUCKET}/copy-src` })))).toBe('InvalidRequest');
    const src = { CopySourceSSECustomerAlgorithm: 'AES256', CopySourceSSECustomerKey: KEY_A };
    await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'copy-b', CopySource: `${BUCKET}/copy-src`, ...src, ...ssec(KEY_B) }));
    expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copy-b', ...ssec(KEY_B) })))).equals(body)).toBe(true);
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copy-b', ...ssec(KEY_A) })))).toBe('AccessDenied');
    const toS3 = await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'copy-s3', CopySource: `${BUCKET}/copy-src`, ...src, ServerSideEncryption: 'AES256' }));
    expect(toS3.ServerSideEncryption).toBe('AES256');
    const plain = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copy-s3' }));
    expect(plain.ServerSideEncryption).toBe('AES256');
    expect(Buffer.from(await plain.Body!.transformToByteArray()).equals(body)).toBe(true);
    await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'copy-c', CopySource: `${BUCKET}/copy-s3`, ...ssec(KEY_A) }));
    expect((await bytesOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copy-c', ...ssec(KEY_A) })))).equals(body)).toBe(true);
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'copy-c' })))).toBe('InvalidRequest');
  });

  it('refuses fops on an SSE-C object', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer();
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'c.png', Body: png, ...ssec(KEY_A) }));
    const info = await fetch(`${s.url}/${BUCKET}/c.png?imageInfo`);
    expect(info.status).toBe(403);
  });

  it('boto3: SSE-C and SSE-S3 round trips with a range; a wrong key is 403, none is 400', async () => {
    const out = await boto3(s.s3Url!, { ak: AK, sk: SK }, BUCKET, `
key = b'k' * 32
data = os.urandom(200 * 1024)
c.put_object(Bucket=BUCKET, Key='boto-c', Body=data, SSECustomerAlgorithm='AES256', SSECustomerKey=key)
r = c.get_object(Bucket=BUCKET, Key='boto-c', SSECustomerAlgorithm='AES256', SSECustomerKey=key, Range='bytes=65530-131080')
assert body(r) == data[65530:131081]
assert r['SSECustomerAlgorithm'] == 'AES256'
expect_error(403, 'AccessDenied', c.get_object, Bucket=BUCKET, Key='boto-c', SSECustomerAlgorithm='AES256', SSECustomerKey=b'x' * 32)
expect_error(400, 'InvalidRequest', c.get_object, Bucket=BUCKET, Key='boto-c')
expect_error(400, '400', c.head_object, Bucket=BUCKET, Key='boto-c')
r = c.put_object(Bucket=BUCKET, Key='boto-s3', Body=data, ServerSideEncryption='AES256')
assert r['ServerSideEncryption'] == 'AES256'
assert c.head_object(Bucket=BUCKET, Key='boto-s3')['ServerSideEncryption'] == 'AES256'
assert body(c.get_object(Bucket=BUCKET, Key='boto-s3')) == data
print('ok')
`);
    expect(out.trim()).toBe('ok');
  });
});

describe('bucket default encryption', () => {
  it('is set, read and removed, and applies to a Kodo SDK upload', async () => {
    expect(await codeOf(s3.send(new GetBucketEncryptionCommand({ Bucket: BUCKET })))).toBe('ServerSideEncryptionConfigurationNotFoundError');
    await s3.send(new PutBucketEncryptionCommand({
      Bucket: BUCKET,
      ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
    }));
    const got = await s3.send(new GetBucketEncryptionCommand({ Bucket: BUCKET }));
    expect(got.ServerSideEncryptionConfiguration?.Rules?.[0]?.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).toBe('AES256');
    await put(s, BUCKET, 'kodo-default', content(5000));
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'kodo-default' }))).ServerSideEncryption).toBe('AES256');
    expect((await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 's3-default', Body: 'x' }))).ServerSideEncryption).toBe('AES256');
    await s3.send(new DeleteBucketEncryptionCommand({ Bucket: BUCKET }));
    expect(await codeOf(s3.send(new GetBucketEncryptionCommand({ Bucket: BUCKET })))).toBe('ServerSideEncryptionConfigurationNotFoundError');
    expect((await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 's3-nodefault', Body: 'x' }))).ServerSideEncryption).toBeUndefined();
  });
});

describe('at rest', () => {
  it('leaves no plaintext of the marker anywhere under the data dir', async () => {
    const files = (await readdir(s.dataDir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    const found: string[] = [];
    for (const f of files) if ((await readFile(f)).includes(MARKER)) found.push(f);
    expect(found).toEqual([]);
  });
});

describe('without a master key', () => {
  it('refuses SSE-S3, SSE-C and a bucket default (501) rather than claim encryption', async () => {
    const plain = await startTestServer();
    try {
      const c = s3Client(plain.s3Url!, AK, SK);
      await c.send(new CreateBucketCommand({ Bucket: 'plain' }));
      expect(await codeOf(c.send(new PutObjectCommand({ Bucket: 'plain', Key: 'a', Body: 'x', ServerSideEncryption: 'AES256' })))).toBe('NotImplemented');
      expect(await codeOf(c.send(new PutObjectCommand({ Bucket: 'plain', Key: 'a', Body: 'x', ...ssec(KEY_A) })))).toBe('NotImplemented');
      expect(await codeOf(c.send(new PutBucketEncryptionCommand({
        Bucket: 'plain',
        ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      })))).toBe('NotImplemented');
      expect(await codeOf(c.send(new PutObjectCommand({ Bucket: 'plain', Key: 'a', Body: 'x' })))).toBe('no error');
    } finally {
      await plain.stop();
    }
  });
});
