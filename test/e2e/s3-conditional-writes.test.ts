/**
 * S3 conditional writes (AWS S3 User Guide "How to prevent object overwrites with conditional writes";
 * API_PutObject and API_CompleteMultipartUpload `If-None-Match`, `If-Match`): `If-None-Match: *` refuses an
 * existing key with 412 PreconditionFailed; `If-Match: <etag>` refuses another ETag with 412 and a missing key with
 * 404 NoSuchKey — on PutObject and CompleteMultipartUpload, through the AWS SDK v3 and boto3 (the calls of Ceph's
 * s3-tests `test_put_object_if_match`, `test_multipart_put_object_if_match`, `test_atomic_dual_conditional_write`).
 * Atomic: the condition is decided in the commit, so of concurrent `If-None-Match: *` writers that all got past
 * the early check exactly one wins, and an `If-Match` writer overtaken by another write fails.
 */
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const MiB = 1024 * 1024;
const bucket = 's3-conditional';
let s: TestServer;
let s3: S3Client;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  await createBucket(s, bucket);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

/** The bytes of `<bucket>/<key>` through the S3 API. */
async function read(key: string): Promise<Buffer> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

/**
 * A body of `size` bytes of `fill` whose last MiB is held back until `gate` resolves; `reached` resolves once every
 * byte before it was taken. Bodies of 16 MiB cannot fit in the loopback socket buffers, so a body that reached its
 * gate was being read by the server: the request is past its early condition check and waits for its commit.
 */
function gatedBody(size: number, fill: number, gate: Promise<void>): { body: Readable; reached: Promise<void> } {
  let sent = 0;
  let release!: () => void;
  const reached = new Promise<void>((r) => (release = r));
  const body = new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const n = Math.min(MiB, size - sent);
      if (sent + n === size && sent > 0) {
        release();
        void gate.then(() => {
          sent += n;
          this.push(Buffer.alloc(n, fill));
        });
        return;
      }
      sent += n;
      this.push(Buffer.alloc(n, fill));
    },
  });
  return { body, reached };
}

/** Uploads `body` as a one-part multipart upload; the complete is sent with `conditions`. */
async function multipartPut(key: string, body: Buffer, conditions: { IfMatch?: string; IfNoneMatch?: string }): Promise<string> {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const part = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: body }));
  const done = await s3.send(new CompleteMultipartUploadCommand({
    Bucket: bucket, Key: key, UploadId, ...conditions, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] },
  }));
  return done.ETag!;
}

describe('AWS SDK v3', () => {
  it('PutObject: If-None-Match * creates once; If-Match takes the current ETag (quoted as answered), refuses others', async () => {
    const key = 'sdk/put';
    const first = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'one', IfNoneMatch: '*' }));
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'two', IfNoneMatch: '*' })))).toBe('PreconditionFailed');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'two', IfMatch: '"0123456789abcdef0123456789abcdef"' })))).toBe('PreconditionFailed');
    expect((await read(key)).toString()).toBe('one');
    const second = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'two', IfMatch: first.ETag! }));
    expect((await read(key)).toString()).toBe('two');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'three', IfMatch: first.ETag! })))).toBe('PreconditionFailed');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'three', IfMatch: second.ETag! }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'four', IfMatch: second.ETag! })))).toBe('NoSuchKey');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: bucket, Key: key })))).toBe('NoSuchKey');
  });

  it('CompleteMultipartUpload: the same conditions, the upload left for a retry when refused', async () => {
    const key = 'sdk/multipart';
    const etag = await multipartPut(key, Buffer.from('first'), { IfNoneMatch: '*' });
    expect(await codeOf(multipartPut(key, Buffer.from('second'), { IfNoneMatch: '*' }))).toBe('PreconditionFailed');
    expect(await codeOf(multipartPut(key, Buffer.from('second'), { IfMatch: '"feedface"' }))).toBe('PreconditionFailed');
    expect((await read(key)).toString()).toBe('first');
    await multipartPut(key, Buffer.from('second'), { IfMatch: etag });
    expect((await read(key)).toString()).toBe('second');
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    expect(await codeOf(multipartPut(key, Buffer.from('third'), { IfMatch: etag }))).toBe('NoSuchKey');
  });

  it('concurrent If-None-Match * writers, all past the early check: exactly one wins', async () => {
    const key = 'sdk/race';
    const writers = 4;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const bodies = Array.from({ length: writers }, (_, i) => gatedBody(16 * MiB, 0x41 + i, gate));
    const puts = bodies.map(({ body }) =>
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: 16 * MiB, IfNoneMatch: '*' })).then(
        () => 'ok',
        (err: unknown) => (err as { name?: string }).name ?? 'error',
      ),
    );
    await Promise.all(bodies.map((b) => b.reached));
    open();
    const outcomes = await Promise.all(puts);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'PreconditionFailed')).toHaveLength(writers - 1);
    const winner = outcomes.indexOf('ok');
    const stored = await read(key);
    expect(stored.length).toBe(16 * MiB);
    expect(stored.equals(Buffer.alloc(16 * MiB, 0x41 + winner))).toBe(true);
  });

  it('an If-Match writer overtaken by another write fails at its commit; the other write stays', async () => {
    const key = 'sdk/overtaken';
    const a = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: Buffer.alloc(MiB, 0x41) }));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const c = gatedBody(16 * MiB, 0x43, gate);
    const slow = codeOf(s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: c.body, ContentLength: 16 * MiB, IfMatch: a.ETag! })));
    await c.reached;
    const b = randomBytes(MiB);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: b }));
    open();
    expect(await slow).toBe('PreconditionFailed');
    expect((await read(key)).equals(b)).toBe(true);
  });
});

describe('boto3 (Ceph s3-tests test_put_object_if_match, test_multipart_put_object_if_match)', () => {
  it('PutObject and CompleteMultipartUpload with IfMatch / IfNoneMatch', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, bucket, `
key = 'boto3/obj'
etag = c.put_object(Bucket=BUCKET, Key=key, Body=b'x', IfNoneMatch='*')['ETag']
expect_error(412, 'PreconditionFailed', c.put_object, Bucket=BUCKET, Key=key, IfNoneMatch='*')
expect_error(412, 'PreconditionFailed', c.put_object, Bucket=BUCKET, Key=key, IfNoneMatch=etag)
assert c.put_object(Bucket=BUCKET, Key=key, IfNoneMatch='badetag')['ResponseMetadata']['HTTPStatusCode'] == 200
etag = c.head_object(Bucket=BUCKET, Key=key)['ETag']
c.put_object(Bucket=BUCKET, Key=key, IfMatch=etag)
# an unquoted ETag, as s3-tests' before-call headers send it
etag = c.head_object(Bucket=BUCKET, Key=key)['ETag']
c2 = boto3.client('s3', endpoint_url=os.environ['EP'], aws_access_key_id=os.environ['AK'], aws_secret_access_key=os.environ['SK'], region_name='cn-east-1', config=Config(s3={'addressing_style': 'path'}))
with_headers(c2, 'PutObject', {'If-Match': etag.strip('"')})
c2.put_object(Bucket=BUCKET, Key=key, Body=b'zar')
assert body(c.get_object(Bucket=BUCKET, Key=key)) == b'zar'
c.delete_object(Bucket=BUCKET, Key=key)
expect_error(404, 'NoSuchKey', c.put_object, Bucket=BUCKET, Key=key, IfMatch='*')
expect_error(404, 'NoSuchKey', c.put_object, Bucket=BUCKET, Key=key, IfMatch='badetag')
assert c.put_object(Bucket=BUCKET, Key=key, IfNoneMatch=etag)['ResponseMetadata']['HTTPStatusCode'] == 200
assert c.put_object(Bucket=BUCKET, Key=key, IfMatch='*')['ResponseMetadata']['HTTPStatusCode'] == 200
expect_error(412, 'PreconditionFailed', c.put_object, Bucket=BUCKET, Key=key, IfMatch='badetag')

def multipart(key, data, **cond):
    uid = c.create_multipart_upload(Bucket=BUCKET, Key=key)['UploadId']
    p = c.upload_part(UploadId=uid, Bucket=BUCKET, Key=key, PartNumber=1, Body=data)
    return lambda: c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={'Parts': [{'ETag': p['ETag'].strip('"'), 'PartNumber': 1}]}, **cond)

key = 'boto3/mp'
etag = multipart(key, b'abc', IfNoneMatch='*')()['ETag']
expect_error(412, 'PreconditionFailed', multipart(key, b'abc', IfNoneMatch='*'))
expect_error(412, 'PreconditionFailed', multipart(key, b'abc', IfNoneMatch=etag))
etag = multipart(key, b'abc', IfNoneMatch='badetag')()['ETag']
etag = multipart(key, b'abc', IfMatch=etag)()['ETag']
c.delete_object(Bucket=BUCKET, Key=key)
expect_error(404, 'NoSuchKey', multipart(key, b'abc', IfMatch='*'))
expect_error(404, 'NoSuchKey', multipart(key, b'abc', IfMatch='badetag'))
etag = multipart(key, b'abc', IfNoneMatch=etag)()['ETag']
etag = multipart(key, b'abc', IfMatch='*')()['ETag']
expect_error(412, 'PreconditionFailed', multipart(key, b'abc', IfMatch='badetag'))
multipart(key, b'abc', IfMatch=etag)()
`);
  });
});
