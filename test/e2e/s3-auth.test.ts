/**
 * Signatures, body checks and the error answers of the S3 listener, over raw HTTP where the AWS SDK would not send
 * the request: SigV4 header (plain, aws-chunked signed, with signed and unsigned trailers), presigned URLs (GET and
 * PUT by plain fetch, expiry), SigV2 header and query, anonymous access, and one request per error code.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { toS3Error } from '../../src/s3api/errors.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { chunkedBody, codeOf, crc32Base64, errorCode, payloadHash, rawRequest, s3Client, signV2, signV4, type RawAnswer } from '../helpers/s3.js';

let s: TestServer;
let s3: S3Client;
let base: string;
let host: string;
const bucket = 's3-auth';
const MAX_OBJECT = 1024 * 1024;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_MAX_OBJECT_SIZE: String(MAX_OBJECT), GRANARY_S3_DOMAIN: 's3.granary.test' });
  base = s.s3Url!;
  host = new URL(base).host;
  s3 = s3Client(base, AK, SK);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'kept', Body: 'old verified value' }));
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

/** A SigV4-signed raw request (body hashed unless `hash` says otherwise). */
function v4(method: string, path: string, opts: { body?: Buffer | string; hash?: string; headers?: Record<string, string>; ak?: string; sk?: string; region?: string; nowMs?: number; host?: string } = {}): Promise<RawAnswer> {
  const body = opts.body ?? '';
  const signed = signV4({
    method,
    path,
    host: opts.host ?? host,
    headers: opts.headers ?? {},
    payloadHash: opts.hash ?? payloadHash(body),
    ak: opts.ak ?? AK,
    sk: opts.sk ?? SK,
    ...(opts.region ? { region: opts.region } : {}),
    ...(opts.nowMs ? { nowMs: opts.nowMs } : {}),
  });
  return rawRequest(base, method, path, signed.headers, body);
}

async function readKept(): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'kept' }));
  return got.Body!.transformToString();
}

describe('SigV4 header', () => {
  it('accepts a signed request and answers request ids on success and error', async () => {
    const ok = await v4('PUT', `/${bucket}/plain.txt`, { body: 'plain' });
    expect(ok.status).toBe(200);
    expect(ok.headers.etag).toBe(`"${createHash('md5').update('plain').digest('hex')}"`);
    expect(ok.headers['x-amz-request-id']).toBeTruthy();
    const missing = await v4('GET', `/${bucket}/nothing-here`);
    expect([missing.status, errorCode(missing)]).toEqual([404, 'NoSuchKey']);
    expect(missing.body).toMatch(/<Resource>\/s3-auth\/nothing-here<\/Resource><RequestId>[^<]+<\/RequestId>/);
    expect(missing.headers['x-amz-id-2']).toBeTruthy();
  });

  it.each([
    ['InvalidAccessKeyId', 403, { ak: 'nobody' }],
    ['SignatureDoesNotMatch', 403, { sk: 'wrong' }],
    ['AuthorizationHeaderMalformed', 400, { region: 'eu-west-9' }],
    ['RequestTimeTooSkewed', 403, { nowMs: Date.now() - 3600_000 }],
  ])('%s', async (code, status, opts) => {
    const r = await v4('GET', `/${bucket}/kept`, opts);
    expect([r.status, errorCode(r)]).toEqual([status, code]);
  });

  it('serves virtual-hosted buckets under GRANARY_S3_DOMAIN', async () => {
    const vhost = `${bucket}.s3.granary.test:${new URL(base).port}`;
    const got = await v4('GET', '/kept', { host: vhost });
    expect([got.status, got.body]).toEqual([200, 'old verified value']);
    const list = await v4('GET', '/?list-type=2&prefix=kep', { host: vhost });
    expect(list.body).toMatch(/<Name>s3-auth<\/Name>.*<Key>kept<\/Key>/s);
  });

  it('accepts us-east-1 as the signing region too', async () => {
    expect((await v4('GET', `/${bucket}/kept`, { region: 'us-east-1' })).status).toBe(200);
  });

  it('XAmzContentSHA256Mismatch leaves the object as it was', async () => {
    const r = await v4('PUT', `/${bucket}/kept`, { body: 'new value', hash: payloadHash('other') });
    expect([r.status, errorCode(r)]).toEqual([400, 'XAmzContentSHA256Mismatch']);
    expect(await readKept()).toBe('old verified value');
  });

  it('BadDigest for a wrong Content-MD5 or x-amz-checksum-crc32, InvalidDigest for a malformed one', async () => {
    const wrongMd5 = createHash('md5').update('other').digest('base64');
    const a = await v4('PUT', `/${bucket}/kept`, { body: 'new value', headers: { 'content-md5': wrongMd5 } });
    expect([a.status, errorCode(a)]).toEqual([400, 'BadDigest']);
    const b = await v4('PUT', `/${bucket}/kept`, { body: 'new value', headers: { 'x-amz-checksum-crc32': crc32Base64(Buffer.from('other')) } });
    expect([b.status, errorCode(b)]).toEqual([400, 'BadDigest']);
    const c = await v4('PUT', `/${bucket}/kept`, { body: 'new value', headers: { 'content-md5': 'not-base64!' } });
    expect([c.status, errorCode(c)]).toEqual([400, 'InvalidDigest']);
    expect(await readKept()).toBe('old verified value');
  });

  it('echoes a verified checksum', async () => {
    const body = Buffer.from('checked');
    const r = await v4('PUT', `/${bucket}/checked`, { body, headers: { 'x-amz-checksum-crc32': crc32Base64(body) } });
    expect(r.status).toBe(200);
    expect(r.headers['x-amz-checksum-crc32']).toBe(crc32Base64(body));
  });
});

describe('aws-chunked bodies', () => {
  const data = Buffer.alloc(200_000, 'abcdefghij');

  async function putChunked(key: string, mode: string, make: (signed: ReturnType<typeof signV4>) => Buffer, extra: Record<string, string> = {}): Promise<RawAnswer> {
    const headers = { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(data.length), ...extra };
    const signed = signV4({ method: 'PUT', path: `/${bucket}/${key}`, host, headers, payloadHash: mode, ak: AK, sk: SK });
    const body = make(signed);
    return rawRequest(base, 'PUT', `/${bucket}/${key}`, { ...signed.headers, 'content-length': String(body.length) }, body);
  }

  it('stores signed chunks, signed trailers and unsigned trailers', async () => {
    const a = await putChunked('chunked-a', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', (sg) => chunkedBody(data, 65536, { signed: sg }));
    expect(a.status, a.body).toBe(200);
    const trailer = { 'x-amz-trailer': 'x-amz-checksum-crc32' };
    const b = await putChunked('chunked-b', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', (sg) => chunkedBody(data, 65536, { signed: sg, trailers: { 'x-amz-checksum-crc32': crc32Base64(data) } }), trailer);
    expect(b.status, b.body).toBe(200);
    expect(b.headers['x-amz-checksum-crc32']).toBe(crc32Base64(data));
    const c = await putChunked('chunked-c', 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', () => chunkedBody(data, 8192, { trailers: { 'x-amz-checksum-crc32': crc32Base64(data) } }), trailer);
    expect(c.status, c.body).toBe(200);
    for (const key of ['chunked-a', 'chunked-b', 'chunked-c']) {
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    }
  });

  it('refuses a tampered chunk, a wrong trailer checksum and a short body, keeping the object', async () => {
    const bad = await putChunked('kept', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', (sg) => chunkedBody(data, 65536, { signed: sg, tamper: 1 }));
    expect([bad.status, errorCode(bad)]).toEqual([403, 'SignatureDoesNotMatch']);
    const trailer = { 'x-amz-trailer': 'x-amz-checksum-crc32' };
    const wrong = await putChunked('kept', 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', () => chunkedBody(data, 65536, { trailers: { 'x-amz-checksum-crc32': crc32Base64(Buffer.from('x')) } }), trailer);
    expect([wrong.status, errorCode(wrong)]).toEqual([400, 'BadDigest']);
    const short = await putChunked('kept', 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD', (sg) => chunkedBody(data, 65536, { signed: sg }).subarray(0, 70_000));
    expect(short.status).toBeGreaterThanOrEqual(400);
    expect(await readKept()).toBe('old verified value');
  });
});

describe('presigned URLs, SigV2 and anonymous access', () => {
  it('GET and PUT by plain fetch; an expired URL is AccessDenied', async () => {
    const putUrl = await getSignedUrl(s3, new PutObjectCommand({ Bucket: bucket, Key: 'presigned.txt' }), { expiresIn: 300 });
    const put = await fetch(putUrl, { method: 'PUT', body: 'sent by fetch' });
    expect(put.status).toBe(200);
    const getUrl = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'presigned.txt' }), { expiresIn: 300 });
    const got = await fetch(getUrl);
    expect([got.status, await got.text()]).toEqual([200, 'sent by fetch']);
    const old = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: 'presigned.txt' }), { expiresIn: 1, signingDate: new Date(Date.now() - 60_000) });
    const expired = await fetch(old);
    expect(expired.status).toBe(403);
    expect(await expired.text()).toMatch(/<Code>AccessDenied<\/Code><Message>Request has expired/);
  });

  it('SigV2 header and query signatures', async () => {
    const date = new Date().toUTCString();
    const headers = { date, 'content-type': 'text/plain' };
    const auth = signV2('PUT', `/${bucket}/v2.txt`, headers, AK, SK);
    const put = await rawRequest(base, 'PUT', `/${bucket}/v2.txt`, { ...headers, authorization: auth }, 'by sigv2');
    expect(put.status, put.body).toBe(200);
    const expires = String(Math.floor(Date.now() / 1000) + 300);
    const sig = signV2('GET', `/${bucket}/v2.txt`, { date: expires }, AK, SK).split(':')[1]!;
    const get = await rawRequest(base, 'GET', `/${bucket}/v2.txt?AWSAccessKeyId=${AK}&Expires=${expires}&Signature=${encodeURIComponent(sig)}`, {});
    expect([get.status, get.body]).toEqual([200, 'by sigv2']);
    const bad = await rawRequest(base, 'GET', `/${bucket}/v2.txt`, { date, authorization: signV2('GET', `/${bucket}/v2.txt`, { date }, AK, 'wrong') });
    expect([bad.status, errorCode(bad)]).toEqual([403, 'SignatureDoesNotMatch']);
  });

  it('anonymous callers read and list public buckets only, and write none of them', async () => {
    const denied = await rawRequest(base, 'GET', `/${bucket}/kept`, {});
    expect([denied.status, errorCode(denied)]).toEqual([403, 'AccessDenied']);
    await s3.send(new CreateBucketCommand({ Bucket: 's3-auth-public', ACL: 'public-read' }));
    await s3.send(new PutObjectCommand({ Bucket: 's3-auth-public', Key: 'open.txt', Body: 'open' }));
    const open = await rawRequest(base, 'GET', '/s3-auth-public/open.txt', {});
    expect([open.status, open.body]).toEqual([200, 'open']);
    const list = await rawRequest(base, 'GET', '/s3-auth-public', {});
    expect([list.status, /<Key>open.txt<\/Key>/.test(list.body)]).toEqual([200, true]);
    const closed = await rawRequest(base, 'GET', `/${bucket}?list-type=2`, {});
    expect([closed.status, errorCode(closed)]).toEqual([403, 'AccessDenied']);
    const write = await rawRequest(base, 'PUT', '/s3-auth-public/x', { 'content-length': '1' }, 'x');
    expect([write.status, errorCode(write)]).toEqual([403, 'AccessDenied']);
  });

  it('an account key acts on its own buckets only', async () => {
    const pair = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
    const other = s3Client(base, pair.accessKey, pair.secretKey);
    try {
      expect(await codeOf(other.send(new GetObjectCommand({ Bucket: bucket, Key: 'kept' })))).toBe('AccessDenied');
      await other.send(new CreateBucketCommand({ Bucket: 's3-auth-account' }));
      expect(await codeOf(s3.send(new CreateBucketCommand({ Bucket: 's3-auth-account' })))).toBe('BucketAlreadyExists');
    } finally {
      other.destroy();
    }
  });
});

describe('error answers', () => {
  it.each([
    ['MalformedXML', 400, 'POST', `/${bucket}?delete`, '<Delete><Object><Key>a</Key>'],
    ['MalformedXML', 400, 'POST', `/${bucket}?delete`, '<Delete></Delete>'],
    ['InvalidArgument', 400, 'GET', `/${bucket}?max-keys=abc`, ''],
    ['MethodNotAllowed', 405, 'PATCH', `/${bucket}/kept`, ''],
    ['NotImplemented', 501, 'GET', `/${bucket}?website`, ''],
    ['NoSuchBucket', 404, 'GET', '/no-such-bucket-here?list-type=2', ''],
    ['InvalidLocationConstraint', 400, 'PUT', '/s3-auth-elsewhere', '<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>'],
  ])('%s (%i) for %s %s', async (code, status, method, path, body) => {
    const r = await v4(method, path, { body });
    expect([r.status, errorCode(r)]).toEqual([status, code]);
  });

  it('EntityTooLarge before reading a body past GRANARY_MAX_OBJECT_SIZE', async () => {
    const body = Buffer.alloc(MAX_OBJECT + 1);
    const r = await v4('PUT', `/${bucket}/too-large`, { body, hash: 'UNSIGNED-PAYLOAD' });
    expect([r.status, errorCode(r)]).toEqual([400, 'EntityTooLarge']);
  });

  it('InternalError for an unexpected failure, without its message', () => {
    const { error } = toS3Error(new Error('secret /path/in/server'));
    expect([error.code, error.status, error.message]).toEqual(['InternalError', 500, 'We encountered an internal error. Please try again.']);
  });
});
