/**
 * S3 POST Object: browser form uploads (plain fetch with FormData, as a browser sends them) with a policy signed
 * by SigV4 and by SigV2 — success_action_status 201 (PostResponse XML), 204, success_action_redirect (303),
 * `${filename}` in the key, metadata fields — read back through the Kodo API; a policy violation, an extra field,
 * an expired policy, a bad signature and a file outside content-length-range are refused and store nothing.
 */
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { amzDate } from '../helpers/s3.js';
import { AK, SK, sdk, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const bucket = 's3-post';
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
  await createBucket(s, bucket);
});

afterAll(async () => {
  await s?.stop();
});

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/** The SigV4 fields of a form whose policy has `conditions` (the signing fields added), expiring in `seconds`. */
function v4Fields(conditions: unknown[], seconds = 600, sk = SK): Record<string, string> {
  const now = s.clock.nowMs();
  const date = amzDate(now);
  const credential = `${AK}/${date.slice(0, 8)}/cn-east-1/s3/aws4_request`;
  const policy = Buffer.from(JSON.stringify({
    expiration: new Date(now + seconds * 1000).toISOString(),
    conditions: [...conditions, { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' }, { 'x-amz-credential': credential }, { 'x-amz-date': date }],
  })).toString('base64');
  const key = hmac(hmac(hmac(hmac(`AWS4${sk}`, date.slice(0, 8)), 'cn-east-1'), 's3'), 'aws4_request');
  return { 'x-amz-algorithm': 'AWS4-HMAC-SHA256', 'x-amz-credential': credential, 'x-amz-date': date, policy, 'x-amz-signature': hmac(key, policy).toString('hex') };
}

/** Posts a form: `fields` in order, then the file. */
async function post(fields: Record<string, string>, file: Buffer, filename = 'photo.jpg'): Promise<Response> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([file]), filename);
  return fetch(`${s.s3Url}/${bucket}`, { method: 'POST', body: form, redirect: 'manual' });
}

/** The bytes of a key through the Kodo API, or the status when absent. */
async function kodoRead(key: string): Promise<Buffer | number> {
  const res = await fetch(s.bucketManager().privateDownloadUrl(`${s.url}/${bucket}`, key, Math.floor(s.clock.nowMs() / 1000) + 600));
  return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : res.status;
}

const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

describe('POST Object with a SigV4 policy', () => {
  it('201 answers the PostResponse XML; the file and its metadata are stored; ${filename} fills the key', async () => {
    const file = Buffer.from('a photo from a browser form');
    const fields = {
      key: 'uploads/${filename}',
      'Content-Type': 'image/jpeg',
      'x-amz-meta-album': 'summer',
      success_action_status: '201',
      ...v4Fields([{ bucket }, ['starts-with', '$key', 'uploads/'], ['starts-with', '$Content-Type', 'image/'], { 'x-amz-meta-album': 'summer' }, { success_action_status: '201' }, ['content-length-range', 1, 1024]]),
    };
    const res = await post(fields, file);
    expect(res.status).toBe(201);
    const xml = await res.text();
    expect(xml).toContain('<PostResponse');
    expect(xml).toContain(`<Bucket>${bucket}</Bucket>`);
    expect(xml).toContain('<Key>uploads/photo.jpg</Key>');
    expect(xml).toContain(`<ETag>&quot;${md5(file)}&quot;</ETag>`);
    expect(res.headers.get('etag')).toBe(`"${md5(file)}"`);
    expect(await kodoRead('uploads/photo.jpg')).toEqual(file);
    const stat = await sdk<{ mimeType: string; 'x-qn-meta'?: Record<string, string> }>(s.bucketManager().stat(bucket, 'uploads/photo.jpg'));
    expect(stat.data.mimeType).toBe('image/jpeg');
    expect(stat.data['x-qn-meta']).toEqual({ album: 'summer' });
  });

  it('success_action_redirect answers 303 to it with bucket, key and etag; no status field answers 204', async () => {
    const file = Buffer.from('redirected');
    const res = await post({ key: 'redir.txt', success_action_redirect: 'https://app.example/done?x=1', ...v4Fields([{ bucket }, { key: 'redir.txt' }, { success_action_redirect: 'https://app.example/done?x=1' }]) }, file);
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin + to.pathname).toBe('https://app.example/done');
    expect(Object.fromEntries(to.searchParams)).toEqual({ x: '1', bucket, key: 'redir.txt', etag: `"${md5(file)}"` });
    const plain = await post({ key: 'plain.txt', ...v4Fields([{ bucket }, { key: 'plain.txt' }]) }, file);
    expect(plain.status).toBe(204);
    expect(await kodoRead('plain.txt')).toEqual(file);
  });

  it('refuses a failed condition, an extra field, an expired policy, a wrong signature and a file out of range', async () => {
    const file = Buffer.from('refused');
    const code = async (res: Response): Promise<[number, string]> => [res.status, /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1] ?? ''];
    expect(await code(await post({ key: 'elsewhere/x.txt', ...v4Fields([{ bucket }, ['starts-with', '$key', 'uploads/']]) }, file))).toEqual([403, 'AccessDenied']);
    expect(await code(await post({ key: 'uploads/x.txt', 'x-amz-meta-extra': 'no', ...v4Fields([{ bucket }, ['starts-with', '$key', 'uploads/']]) }, file))).toEqual([403, 'AccessDenied']);
    expect(await code(await post({ key: 'uploads/x.txt', ...v4Fields([{ bucket }, ['starts-with', '$key', '']], -5) }, file))).toEqual([403, 'AccessDenied']);
    expect(await code(await post({ key: 'uploads/x.txt', ...v4Fields([{ bucket }, ['starts-with', '$key', '']], 600, 'wrong-secret') }, file))).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await code(await post({ key: 'uploads/x.txt', ...v4Fields([{ bucket: 'another-bucket' }, ['starts-with', '$key', '']]) }, file))).toEqual([403, 'AccessDenied']);
    expect(await code(await post({ key: 'uploads/x.txt', ...v4Fields([{ bucket }, ['starts-with', '$key', ''], ['content-length-range', 1, 3]]) }, file))).toEqual([400, 'EntityTooLarge']);
    expect(await code(await post({ key: 'uploads/x.txt', ...v4Fields([{ bucket }, ['starts-with', '$key', ''], ['content-length-range', 100, 200]]) }, file))).toEqual([400, 'EntityTooSmall']);
    expect(await code(await post({ key: 'uploads/x.txt', policy: 'not base64 json', 'x-amz-signature': '00' }, file))).toEqual([400, 'InvalidArgument']);
    expect(await kodoRead('uploads/x.txt')).toBe(404);
    expect(await kodoRead('elsewhere/x.txt')).toBe(404);
  });
});

describe('POST Object with a SigV2 policy', () => {
  it('AWSAccessKeyId + signature (base64 HMAC-SHA1 of the policy) stores the file', async () => {
    const policy = Buffer.from(JSON.stringify({ expiration: new Date(s.clock.nowMs() + 600_000).toISOString(), conditions: [{ bucket }, ['eq', '$key', 'v2.txt']] })).toString('base64');
    const signature = createHmac('sha1', SK).update(policy).digest('base64');
    const file = Buffer.from('signed the old way');
    const res = await post({ key: 'v2.txt', AWSAccessKeyId: AK, policy, signature }, file);
    expect(res.status).toBe(204);
    expect(await kodoRead('v2.txt')).toEqual(file);
  });
});
