/**
 * Headers and authentication of the S3 door as Ceph s3-tests probe them (boto3, the AWS SDK v3, `requests` and raw
 * sockets): non-ASCII `x-amz-meta-*` values signed as each client signs them (raw UTF-8 bytes from botocore, one
 * latin1 byte per character from the AWS SDK for JavaScript) and answered RFC 2047-encoded as S3 does;
 * `Expect: 100-continue` answered with the final error before the body; `X-Amz-Expires` out of range and expired
 * presigned URLs → 403; Content-Encoding kept verbatim (aws-chunked left out); `x-amz-tagging-count`; ListBuckets
 * paging; NoSuchBucket for an anonymous DELETE in a deleted bucket; BucketAlreadyOwnedByYou vs BucketAlreadyExists.
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { CreateBucketCommand, HeadObjectCommand, ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, sdk, SK, startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

let s: TestServer;
let s3: ReturnType<typeof s3Client>;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

const PRELUDE = `
import json, os
import boto3, requests
from botocore import UNSIGNED
from botocore.config import Config
EP, AK, SK, B = os.environ['EP'], os.environ['AK'], os.environ['SK'], os.environ['BUCKET']
cfg = Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1})
c = boto3.client('s3', endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name='cn-east-1', config=cfg)
anon = boto3.client('s3', endpoint_url=EP, region_name='cn-east-1', config=cfg.merge(Config(signature_version=UNSIGNED)))
c.create_bucket(Bucket=B)
def err(f, **kw):
    try:
        f(**kw)
        return None
    except c.exceptions.ClientError as e:
        return [e.response['ResponseMetadata']['HTTPStatusCode'], e.response['Error']['Code']]
out = {}
`;

async function py<T>(bucket: string, script: string): Promise<T> {
  const { stdout } = await run('python3', ['-c', PRELUDE + script + '\nprint(json.dumps(out))'], {
    env: { ...process.env, EP: s.s3Url!, AK, SK, BUCKET: bucket },
    timeout: 120_000,
  });
  return JSON.parse(stdout) as T;
}

/** The Kodo metadata of an entry. */
async function kodoMeta(bucket: string, key: string): Promise<Record<string, string> | undefined> {
  return (await sdk<{ 'x-qn-meta'?: Record<string, string> }>(s.bucketManager().stat(bucket, key))).data['x-qn-meta'];
}

describe('non-ASCII metadata', () => {
  it('boto3 sending UTF-8 bytes (s3-tests before-call hook) signs and stores the text; S3 answers it RFC 2047-encoded', async () => {
    const out = await py<Record<string, unknown>>('meta-utf8', `
def hook(**kw):
    kw['params']['headers']['x-amz-meta-meta1'] = 'Hello World\\xe9 \\u4e2d\\u6587'
c.meta.events.register('before-call.s3.PutObject', hook)
c.put_object(Bucket=B, Key='foo', Body=b'bar')
out['got'] = c.head_object(Bucket=B, Key='foo')['Metadata']['meta1']
c.meta.events.unregister('before-call.s3.PutObject', hook)
c.put_object(Bucket=B, Key='encoded', Body=b'bar', Metadata={'m': '=?UTF-8?B?5Lit5paH?='})
`);
    const text = 'Hello World\u00e9 \u4e2d\u6587';
    expect(out.got).toBe(`=?UTF-8?B?${Buffer.from(text).toString('base64')}?=`);
    expect(await kodoMeta('meta-utf8', 'foo')).toEqual({ meta1: text });
    expect(await kodoMeta('meta-utf8', 'encoded')).toEqual({ m: '\u4e2d\u6587' });
  });

  it('the AWS SDK v3 (latin1 on the wire, UTF-8 signed) stores é; HeadObject answers it encoded', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'meta-sdk' }));
    await s3.send(new PutObjectCommand({ Bucket: 'meta-sdk', Key: 'k', Body: 'x', Metadata: { city: 'Montréal' } }));
    expect(await kodoMeta('meta-sdk', 'k')).toEqual({ city: 'Montréal' });
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'meta-sdk', Key: 'k' }));
    expect(head.Metadata).toEqual({ city: `=?UTF-8?B?${Buffer.from('Montréal').toString('base64')}?=` });
  });
});

/** Sends a request head with `Expect: 100-continue` (no body) and resolves the first status line's code. */
function firstStatus(head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(s.s3Url!);
    const sock = connect(Number(url.port), url.hostname, () => sock.write(head));
    let got = '';
    sock.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const line = got.indexOf('\r\n');
      if (line >= 0) {
        sock.destroy();
        resolve(got.slice(0, line).split(' ')[1] ?? '');
      }
    });
    sock.on('error', reject);
  });
}

describe('Expect: 100-continue', () => {
  it('a refused request is answered with its error before the body; an accepted one with 100 Continue; other expectations are ignored', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'expect-100' }));
    const host = new URL(s.s3Url!).host;
    expect(await firstStatus(`PUT /expect-100/testobj HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`)).toBe('403');
    expect(await firstStatus(`PUT /no-such-bucket-here/testobj HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`)).toBe('404');
    const out = await py<Record<string, unknown>>('expect-100b', `
for name, value in [('mismatch', '200'), ('empty', '')]:
    def hook(**kw):
        kw['params']['headers']['Expect'] = value
    c.meta.events.register('before-call.s3.PutObject', hook)
    c.put_object(Bucket=B, Key=name, Body=b'other expectation')
    c.meta.events.unregister('before-call.s3.PutObject', hook)
    out[name] = c.get_object(Bucket=B, Key=name)['Body'].read().decode()
out['missing'] = err(c.put_object, Bucket=B + '-but-doesnt-exist', Key='foo', Body=b'bar')
c.put_object(Bucket=B, Key='foo', Body=b'bar')
out['body'] = c.get_object(Bucket=B, Key='foo')['Body'].read().decode()
`);
    expect(out).toEqual({ mismatch: 'other expectation', empty: 'other expectation', missing: [404, 'NoSuchBucket'], body: 'bar' });
  });
});

describe('request headers (s3-tests test_headers shapes)', () => {
  it('SigV2 request times: bad, empty or pre-1970 x-amz-date → AccessDenied, far off → RequestTimeTooSkewed; an empty Content-Type is accepted; boto3 SigV2 bucket operations (signed as /<bucket>/)', async () => {
    const out = await py<Record<string, unknown>>('hdr-probe', `
v2 = boto3.client('s3', endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name='cn-east-1',
                  config=cfg.merge(Config(signature_version='s3')))
def put_with(client, headers, key='foo'):
    def hook(**kw):
        kw['params']['headers'].update(headers)
    client.meta.events.register('before-call.s3.PutObject', hook)
    try:
        return err(client.put_object, Bucket=B, Key=key, Body=b'bar')
    finally:
        client.meta.events.unregister('before-call.s3.PutObject', hook)
for name, value in [('bad', 'Bad Date'), ('empty', ''), ('1950', 'Tue, 07 Jul 1950 21:53:04 GMT'), ('2010', 'Tue, 07 Jul 2010 21:53:04 GMT'), ('9999', 'Tue, 07 Jul 9999 21:53:04 GMT')]:
    out['date ' + name] = put_with(v2, {'x-amz-date': value})
out['md5 garbage'] = put_with(v2, {'Content-MD5': 'AWS HAHAHA'})
out['type empty v4'] = put_with(c, {'Content-Type': ''}, 'typeless-v4')
out['type empty v2'] = put_with(v2, {'Content-Type': ''}, 'typeless-v2')
out['stored'] = c.get_object(Bucket=B, Key='typeless-v4')['Body'].read().decode()
v2.create_bucket(Bucket=B + '-v2')
v2.put_object(Bucket=B + '-v2', Key='k', Body=b'v')
out['v2 bucket ops'] = [[o['Key'] for o in v2.list_objects(Bucket=B + '-v2')['Contents']], v2.delete_object(Bucket=B + '-v2', Key='k')['ResponseMetadata']['HTTPStatusCode'], v2.delete_bucket(Bucket=B + '-v2')['ResponseMetadata']['HTTPStatusCode']]
`);
    expect(out).toEqual({
      'date bad': [403, 'AccessDenied'],
      'date empty': [403, 'AccessDenied'],
      'date 1950': [403, 'AccessDenied'],
      'date 2010': [403, 'RequestTimeTooSkewed'],
      'date 9999': [403, 'RequestTimeTooSkewed'],
      'md5 garbage': [400, 'InvalidDigest'],
      'type empty v4': null,
      'type empty v2': null,
      stored: 'bar',
      'v2 bucket ops': [['k'], 204, 204],
    });
  });
});

describe('presigned URL expiry', () => {
  it('X-Amz-Expires 0, negative or over a week → 403; an expired presigned PUT → 403 and nothing stored', async () => {
    const out = await py<Record<string, unknown>>('presign-expiry', `
c.put_object(Bucket=B, Key='foo', Body=b'kept')
def get(expires):
    u = c.generate_presigned_url(ClientMethod='get_object', Params={'Bucket': B, 'Key': 'foo'}, ExpiresIn=expires, HttpMethod='GET')
    r = requests.get(u)
    return r.status_code
out['ok'] = get(100000)
out['zero'] = get(0)
out['overWeek'] = get(609901)
out['negative'] = get(-7)
u = c.generate_presigned_url(ClientMethod='put_object', Params={'Bucket': B, 'Key': 'foo'}, ExpiresIn=-1000, HttpMethod='PUT')
out['expiredPut'] = requests.put(u, data='foo').status_code
out['body'] = c.get_object(Bucket=B, Key='foo')['Body'].read().decode()
`);
    expect(out).toEqual({ ok: 200, zero: 403, overWeek: 403, negative: 403, expiredPut: 403, body: 'kept' });
  });
});

describe('object headers', () => {
  it('Content-Encoding is kept verbatim without aws-chunked; x-amz-tagging-count on GET and HEAD', async () => {
    const out = await py<Record<string, unknown>>('obj-headers', `
enc = {}
for sent in ['gzip', 'deflate, gzip', 'gzip, aws-chunked', 'aws-chunked, gzip', 'aws-chunked', 'aws-chunked, aws-chunked']:
    c.put_object(Bucket=B, Key='encoding', ContentEncoding=sent)
    enc[sent] = c.head_object(Bucket=B, Key='encoding').get('ContentEncoding')
out['encoding'] = enc
c.put_object(Bucket=B, Key='tagged', Body=b'x')
out['untagged'] = c.head_object(Bucket=B, Key='tagged')['ResponseMetadata']['HTTPHeaders'].get('x-amz-tagging-count')
c.put_object_tagging(Bucket=B, Key='tagged', Tagging={'TagSet': [{'Key': '0', 'Value': '0'}, {'Key': '1', 'Value': '1'}]})
out['head'] = c.head_object(Bucket=B, Key='tagged')['ResponseMetadata']['HTTPHeaders'].get('x-amz-tagging-count')
out['get'] = c.get_object(Bucket=B, Key='tagged')['TagCount']
`);
    expect(out).toEqual({
      encoding: { gzip: 'gzip', 'deflate, gzip': 'deflate, gzip', 'gzip, aws-chunked': 'gzip', 'aws-chunked, gzip': 'gzip', 'aws-chunked': null, 'aws-chunked, aws-chunked': null },
      untagged: null,
      head: '2',
      get: 2,
    });
  });
});

describe('buckets', () => {
  it('ListBuckets pages with MaxBuckets and ContinuationToken within a Prefix (boto3 and the AWS SDK v3)', async () => {
    const out = await py<Record<string, unknown>>('pg-zzz-0', `
def names(r):
    return [b['Name'] for b in r['Buckets']]
r = c.list_buckets(MaxBuckets=1, Prefix='pg-zzz-')
out['one'] = [names(r), 'ContinuationToken' in r]
c.create_bucket(Bucket='pg-zzz-1')
r = c.list_buckets(MaxBuckets=1, Prefix='pg-zzz-')
token = r['ContinuationToken']
r2 = c.list_buckets(MaxBuckets=1, Prefix='pg-zzz-', ContinuationToken=token)
out['pages'] = [names(r), names(r2), 'ContinuationToken' in r2, r.get('Prefix')]
out['all'] = 'pg-zzz-1' in names(c.list_buckets())
`);
    expect(out).toEqual({ one: [['pg-zzz-0'], false], pages: [['pg-zzz-0'], ['pg-zzz-1'], false, 'pg-zzz-'], all: true });
    const first = await s3.send(new ListBucketsCommand({ MaxBuckets: 1, Prefix: 'pg-zzz-' }));
    expect(first.Buckets?.map((b) => b.Name)).toEqual(['pg-zzz-0']);
    const second = await s3.send(new ListBucketsCommand({ MaxBuckets: 1, Prefix: 'pg-zzz-', ContinuationToken: first.ContinuationToken }));
    expect([second.Buckets?.map((b) => b.Name), second.ContinuationToken]).toEqual([['pg-zzz-1'], undefined]);
  });

  it('an anonymous DELETE or GET in a deleted bucket is NoSuchBucket; in a live private bucket AccessDenied', async () => {
    const out = await py<Record<string, unknown>>('gone-bucket', `
c.put_object(Bucket=B, Key='foo', Body=b'x')
out['live'] = err(anon.delete_object, Bucket=B, Key='foo')
c.delete_object(Bucket=B, Key='foo')
c.delete_bucket(Bucket=B)
out['delete'] = err(anon.delete_object, Bucket=B, Key='foo')
out['get'] = err(anon.get_object, Bucket=B, Key='foo')
`);
    expect(out).toEqual({ live: [403, 'AccessDenied'], delete: [404, 'NoSuchBucket'], get: [404, 'NoSuchBucket'] });
  });

  it('creating an existing bucket: BucketAlreadyOwnedByYou for its owner, BucketAlreadyExists for another account; periods are refused', async () => {
    const a = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
    const b = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
    const ca = s3Client(s.s3Url!, a.accessKey, a.secretKey);
    const cb = s3Client(s.s3Url!, b.accessKey, b.secretKey);
    try {
      await ca.send(new CreateBucketCommand({ Bucket: 'owned-once' }));
      expect(await codeOf(ca.send(new CreateBucketCommand({ Bucket: 'owned-once' })))).toBe('BucketAlreadyOwnedByYou');
      expect(await codeOf(cb.send(new CreateBucketCommand({ Bucket: 'owned-once' })))).toBe('BucketAlreadyExists');
      expect(await codeOf(s3.send(new CreateBucketCommand({ Bucket: 'aaa.111' })))).toBe('InvalidBucketName');
    } finally {
      ca.destroy();
      cb.destroy();
    }
  });
});
