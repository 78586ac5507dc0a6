/**
 * One object model behind both doors: an object written through the S3 listener (AWS SDK) is read, stat'ed,
 * listed, copied and deleted through the Kodo API (the official `qiniu` SDK) with the same bytes, x-qn-meta and
 * MIME type, and objects written through Kodo (form upload, resumable v1) are read through S3 — ETag the MD5, or
 * the Kodo etag for an upload assembled from pieces.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { serveBytes, startOrigin, type Origin } from '../helpers/fetch-origin.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

let s: TestServer;
let s3: S3Client;
const bucket = 's3-interop';

let origin: Origin;

beforeAll(async () => {
  origin = await startOrigin();
  // The mirror origin below is on loopback, which the outbound guard refuses unless allowed.
  s = await startTestServer({ GRANARY_OUTBOUND_ALLOW: '127.0.0.1/32' });
  s3 = s3Client(s.s3Url!, AK, SK);
  // A bucket made through Kodo, used through both doors.
  await createBucket(s, bucket);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
  await origin?.close();
});

/** A Kodo download of `<bucket>/<key>` (signed URL, so private buckets work too). */
async function kodoDownload(key: string): Promise<Response> {
  return fetch(s.bucketManager().privateDownloadUrl(`${s.url}/${bucket}`, key, Math.floor(s.clock.nowMs() / 1000) + 600));
}

describe('S3 → Kodo', () => {
  const body = randomBytes(70_000);

  it('an object put through S3 reads through Kodo with its bytes, metadata and MIME type', async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'from-s3/photo.bin', Body: body, ContentType: 'image/x-test', Metadata: { camera: 'x100' } }));
    const stat = await sdk<{ fsize: number; mimeType: string; md5?: string; hash: string; 'x-qn-meta'?: Record<string, string> }>(s.bucketManager().stat(bucket, 'from-s3/photo.bin'));
    expect(stat.status).toBe(200);
    expect(stat.data.fsize).toBe(body.length);
    expect(stat.data.mimeType).toBe('image/x-test');
    expect(stat.data['x-qn-meta']).toEqual({ camera: 'x100' });
    const res = await kodoDownload('from-s3/photo.bin');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-qn-meta-camera')).toBe('x100');
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
  });

  it('Kodo lists, copies and deletes it; S3 sees the copy and the deletion', async () => {
    const list = await sdk<{ items: Array<{ key: string }> }>(s.bucketManager().listPrefix(bucket, { prefix: 'from-s3/' }));
    expect(list.data.items.map((i) => i.key)).toEqual(['from-s3/photo.bin']);
    expect((await sdk(s.bucketManager().copy(bucket, 'from-s3/photo.bin', bucket, 'from-s3/copy.bin', null))).status).toBe(200);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'from-s3/copy.bin' }));
    expect(head.ETag).toBe(`"${createHash('md5').update(body).digest('hex')}"`);
    expect(head.Metadata).toEqual({ camera: 'x100' });
    expect((await sdk(s.bucketManager().delete(bucket, 'from-s3/photo.bin'))).status).toBe(200);
    expect(await codeOf(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'from-s3/photo.bin' })))).toBe('NotFound');
  });
});

describe('Kodo → S3', () => {
  it('a form upload reads through S3 (ETag = MD5, x-qn-meta as x-amz-meta, MIME)', async () => {
    const content = Buffer.from('written by the qiniu SDK');
    const token = s.uploadToken({ scope: `${bucket}:from-kodo/form.txt` });
    const extra = new qiniu.form_up.PutExtra();
    extra.metadata = { 'x-qn-meta-color': 'red' };
    extra.mimeType = 'text/plain';
    const up = await sdk(new qiniu.form_up.FormUploader(s.zoneConfig()).put(token, 'from-kodo/form.txt', content, extra));
    expect(up.status).toBe(200);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'from-kodo/form.txt' }));
    expect(got.ETag).toBe(`"${createHash('md5').update(content).digest('hex')}"`);
    expect(got.ContentType).toBe('text/plain');
    expect(got.Metadata).toEqual({ color: 'red' });
    expect(await got.Body!.transformToString()).toBe('written by the qiniu SDK');
  });

  it('a resumable v1 upload (no whole MD5) answers its Kodo etag as ETag, and lists with it', async () => {
    const content = randomBytes(5 * 1024 * 1024);
    const token = s.uploadToken({ scope: `${bucket}:from-kodo/big.bin` });
    const extra = qiniu.resume_up.PutExtra.create(undefined, undefined, undefined, undefined, undefined, undefined, 'v1');
    const up = await sdk<{ hash: string }>(new qiniu.resume_up.ResumeUploader(s.zoneConfig()).putStream(token, 'from-kodo/big.bin', Readable.from([content]), content.length, extra));
    expect(up.status).toBe(200);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'from-kodo/big.bin' }));
    expect(head.ETag).toBe(`"${up.data.hash}"`);
    expect(head.ContentLength).toBe(content.length);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'from-kodo/big' }));
    expect(listed.Contents?.map((c) => [c.Key, c.ETag, c.Size])).toEqual([['from-kodo/big.bin', `"${up.data.hash}"`, content.length]]);
    const part = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'from-kodo/big.bin', Range: 'bytes=4194300-4194310' }));
    expect(Buffer.from(await part.Body!.transformToByteArray()).equals(content.subarray(4194300, 4194311))).toBe(true);
  });

  it('a Kodo chgm shows in S3, and an S3 delete is a Kodo 612', async () => {
    const op = qiniu.rs.changeMimeOp(bucket, 'from-kodo/form.txt', 'text/markdown');
    expect((await sdk(s.bucketManager().batch([op]))).status).toBe(200);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'from-kodo/form.txt' }));
    expect(head.ContentType).toBe('text/markdown');
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'from-kodo/form.txt' }));
    const stat = await sdk(s.bucketManager().stat(bucket, 'from-kodo/form.txt'));
    expect(stat.status).toBe(612);
  });
});

describe('mirror source', () => {
  it('an S3 GET of a missing key pulls it from the bucket\'s mirror origin once, as a Kodo download does', async () => {
    const mirrored = 's3-interop-mirror';
    await createBucket(s, mirrored);
    expect((await sdk(s.bucketManager().image(mirrored, `${origin.base}/assets`))).status).toBe(200);
    const bytes = randomBytes(90_000);
    origin.route('/assets/logo.png', serveBytes(bytes, 'image/png'));
    const got = await s3.send(new GetObjectCommand({ Bucket: mirrored, Key: 'logo.png' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(bytes)).toBe(true);
    expect(got.ContentType).toBe('image/png');
    const pulls = origin.requests.filter((r) => r.url === '/assets/logo.png').length;
    expect(pulls).toBe(1);
    // Stored now: read again through S3 and through Kodo's stat, without another pull.
    const again = await s3.send(new HeadObjectCommand({ Bucket: mirrored, Key: 'logo.png' }));
    expect(again.ContentLength).toBe(bytes.length);
    const stat = await sdk<{ fsize: number }>(s.bucketManager().stat(mirrored, 'logo.png'));
    expect(stat.data.fsize).toBe(bytes.length);
    expect(origin.requests.filter((r) => r.url === '/assets/logo.png').length).toBe(pulls);
    // A key the origin does not have either is NoSuchKey.
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: mirrored, Key: 'absent.png' })))).toBe('NoSuchKey');
  });
});
