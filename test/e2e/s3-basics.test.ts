/**
 * The S3 listener driven by the AWS SDK for JavaScript v3 (default checksums on, path style): buckets, PutObject,
 * HeadObject, GetObject (whole and ranges), listings v1/v2 with a delimiter, CopyObject with REPLACE metadata,
 * DeleteObject, DeleteObjects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BucketLocationConstraint,
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let s3: S3Client;
const bucket = 's3-basics';

/** The S3 error code of a rejected SDK call. */
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof S3ServiceException) return err.name;
    throw err;
  }
  return 'no error';
}

beforeAll(async () => {
  s = await startTestServer();
  s3 = new S3Client({
    endpoint: s.s3Url,
    region: 'cn-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: AK, secretAccessKey: SK },
  });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

describe('buckets', () => {
  it('lists, heads and locates the bucket; a second create is BucketAlreadyOwnedByYou', async () => {
    const list = await s3.send(new ListBucketsCommand({}));
    expect(list.Buckets?.map((b) => b.Name)).toContain(bucket);
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    const loc = await s3.send(new GetBucketLocationCommand({ Bucket: bucket }));
    expect(loc.LocationConstraint).toBe('cn-east-1');
    expect(await codeOf(s3.send(new CreateBucketCommand({ Bucket: bucket })))).toBe('BucketAlreadyOwnedByYou');
    expect(await codeOf(s3.send(new CreateBucketCommand({ Bucket: 'Bad_Name' })))).toBe('InvalidBucketName');
    expect(await codeOf(s3.send(new HeadBucketCommand({ Bucket: 'no-such-bucket' })))).toBe('NotFound');
  });

  it('refuses to delete a bucket that holds objects (BucketNotEmpty), deletes an empty one', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 's3-basics-drop', CreateBucketConfiguration: { LocationConstraint: 'cn-east-1' as BucketLocationConstraint } }));
    await s3.send(new PutObjectCommand({ Bucket: 's3-basics-drop', Key: 'x', Body: 'x' }));
    expect(await codeOf(s3.send(new DeleteBucketCommand({ Bucket: 's3-basics-drop' })))).toBe('BucketNotEmpty');
    await s3.send(new DeleteObjectCommand({ Bucket: 's3-basics-drop', Key: 'x' }));
    await s3.send(new DeleteBucketCommand({ Bucket: 's3-basics-drop' }));
    expect(await codeOf(s3.send(new HeadBucketCommand({ Bucket: 's3-basics-drop' })))).toBe('NotFound');
  });
});

describe('objects', () => {
  const body = Buffer.from('hello, granary over s3 — ünïcödé');
  const md5 = createHash('md5').update(body).digest('hex');

  it('puts, heads and gets an object (ETag = MD5, metadata, type, ranges)', async () => {
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'dir/hello.txt',
        Body: body,
        ContentType: 'text/plain; charset=utf-8',
        Metadata: { color: 'blue' },
        CacheControl: 'max-age=60',
      }),
    );
    expect(put.ETag).toBe(`"${md5}"`);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt' }));
    expect(head.ContentLength).toBe(body.length);
    expect(head.ETag).toBe(`"${md5}"`);
    expect(head.ContentType).toBe('text/plain; charset=utf-8');
    expect(head.Metadata).toEqual({ color: 'blue' });
    expect(head.CacheControl).toBe('max-age=60');
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt' }));
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(body);
    const part = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt', Range: 'bytes=7-13' }));
    expect(part.ContentRange).toBe(`bytes 7-13/${body.length}`);
    expect(Buffer.from(await part.Body!.transformToByteArray()).toString()).toBe('granary');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt', Range: `bytes=${body.length}-` })))).toBe('InvalidRange');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'missing' })))).toBe('NoSuchKey');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt', IfMatch: '"0000"' })))).toBe('PreconditionFailed');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'dir/hello.txt', Body: 'x', IfNoneMatch: '*' })))).toBe('PreconditionFailed');
  });

  it('puts and reads a 6 MiB stream (Expect: 100-continue, the SDK\'s CRC32)', async () => {
    const big = Buffer.alloc(6 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big.writeUInt32BE(i, i);
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'big.bin', Body: Readable.from([big.subarray(0, 1 << 20), big.subarray(1 << 20)]), ContentLength: big.length }));
    expect(put.ETag).toBe(`"${createHash('md5').update(big).digest('hex')}"`);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'big.bin' }));
    expect(createHash('md5').update(await got.Body!.transformToByteArray()).digest('hex')).toBe(createHash('md5').update(big).digest('hex'));
  });

  it('lists with v1 and v2, a delimiter and pages', async () => {
    for (const k of ['list/a/1', 'list/a/2', 'list/b', 'list/c/3', 'list/d']) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: k }));
    }
    const v2 = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', Delimiter: '/' }));
    expect(v2.Contents?.map((c) => c.Key)).toEqual(['list/b', 'list/d']);
    expect(v2.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['list/a/', 'list/c/']);
    expect(v2.KeyCount).toBe(4);
    // Pages of two: every entry once, in order.
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/', Delimiter: '/', MaxKeys: 2, ContinuationToken: token }));
      seen.push(...(page.Contents ?? []).map((c) => c.Key!), ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
      token = page.NextContinuationToken;
    } while (token);
    expect(seen.sort()).toEqual(['list/a/', 'list/b', 'list/c/', 'list/d']);
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'list/', MaxKeys: 3 }));
    expect(v1.Contents?.map((c) => c.Key)).toEqual(['list/a/1', 'list/a/2', 'list/b']);
    expect(v1.IsTruncated).toBe(true);
    const rest = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: 'list/', Marker: v1.NextMarker }));
    expect(rest.Contents?.map((c) => c.Key)).toEqual(['list/c/3', 'list/d']);
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: 'list/b' }));
    expect(versions.Versions?.map((v) => [v.Key, v.VersionId, v.IsLatest])).toEqual([['list/b', 'null', true]]);
  });

  it('copies with REPLACE metadata, deletes one and many', async () => {
    const copy = await s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: 'copy/hello.txt',
        CopySource: `${bucket}/dir/hello.txt`,
        MetadataDirective: 'REPLACE',
        Metadata: { shape: 'round' },
        ContentType: 'text/markdown',
      }),
    );
    expect(copy.CopyObjectResult?.ETag).toBe(`"${md5}"`);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'copy/hello.txt' }));
    expect(head.Metadata).toEqual({ shape: 'round' });
    expect(head.ContentType).toBe('text/markdown');
    expect(head.CacheControl).toBeUndefined();
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'copy/hello.txt' }));
    // Deleting a missing key is a success, as S3 answers.
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'copy/hello.txt' }));
    expect(await codeOf(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'copy/hello.txt' })))).toBe('NotFound');
    const many = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: 'list/a/1' }, { Key: 'list/a/2' }, { Key: 'never-there' }] } }),
    );
    expect(many.Deleted?.map((d) => d.Key).sort()).toEqual(['list/a/1', 'list/a/2', 'never-there']);
    const left = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'list/a/' }));
    expect(left.KeyCount).toBe(0);
  });
});
