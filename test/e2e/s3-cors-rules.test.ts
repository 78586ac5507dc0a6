/**
 * S3 CORS with S3's own rules (the shape of Ceph s3-tests' `test_cors_*` and `test_set_cors`): origins without a
 * scheme and with one `*` anywhere (`*suffix`, `start*end`, `prefix*`, `*.put`, `*`), header wildcards
 * (`x-amz-*`), rule IDs, ExposeHeader and MaxAgeSeconds — set and read back exactly through boto3 and the AWS SDK
 * v3, the rules shown by Kodo's `corsRules/get`, then preflights and actual requests sent with Python's
 * `requests` (as s3-tests sends them), presigned GET and PUT URLs' preflights included.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CreateBucketCommand, GetBucketCorsCommand, PutBucketCorsCommand } from '@aws-sdk/client-s3';
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
from botocore.config import Config
EP, AK, SK, B = os.environ['EP'], os.environ['AK'], os.environ['SK'], os.environ['BUCKET']
c = boto3.client('s3', endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name='cn-east-1',
                 config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
c.create_bucket(Bucket=B, ACL='public-read')
url = EP + '/' + B
def check(func, u, headers=None):
    r = func(u, headers=headers)
    return [r.status_code, r.headers.get('access-control-allow-origin'), r.headers.get('access-control-allow-methods')]
out = {}
`;

async function py<T>(bucket: string, script: string): Promise<T> {
  const { stdout } = await run('python3', ['-c', PRELUDE + script + '\nprint(json.dumps(out))'], {
    env: { ...process.env, EP: s.s3Url!, AK, SK, BUCKET: bucket },
    timeout: 120_000,
  });
  return JSON.parse(stdout) as T;
}

describe('PutBucketCors with S3 rules', () => {
  it('boto3: origins without scheme round-trip exactly; Delete brings back 404', async () => {
    const out = await py<Record<string, unknown>>('cors-set', `
try:
    c.get_bucket_cors(Bucket=B)
except c.exceptions.ClientError as e:
    out['before'] = e.response['ResponseMetadata']['HTTPStatusCode']
rules = [{'AllowedMethods': ['GET', 'PUT'], 'AllowedOrigins': ['*.get', '*.put']},
         {'ID': 'uploads', 'AllowedMethods': ['PUT', 'POST', 'DELETE', 'HEAD'], 'AllowedOrigins': ['http://*.example.com', 'example.origin'],
          'AllowedHeaders': ['x-amz-*', 'Content-Type'], 'ExposeHeaders': ['ETag', 'x-amz-meta-header1'], 'MaxAgeSeconds': 3000}]
c.put_bucket_cors(Bucket=B, CORSConfiguration={'CORSRules': rules})
out['rules'] = c.get_bucket_cors(Bucket=B)['CORSRules']
c.delete_bucket_cors(Bucket=B)
try:
    c.get_bucket_cors(Bucket=B)
except c.exceptions.ClientError as e:
    out['after'] = [e.response['ResponseMetadata']['HTTPStatusCode'], e.response['Error']['Code']]
`);
    expect(out).toEqual({
      before: 404,
      rules: [
        { AllowedMethods: ['GET', 'PUT'], AllowedOrigins: ['*.get', '*.put'] },
        { ID: 'uploads', AllowedMethods: ['PUT', 'POST', 'DELETE', 'HEAD'], AllowedOrigins: ['http://*.example.com', 'example.origin'], AllowedHeaders: ['x-amz-*', 'Content-Type'], ExposeHeaders: ['ETag', 'x-amz-meta-header1'], MaxAgeSeconds: 3000 },
      ],
      after: [404, 'NoSuchCORSConfiguration'],
    });
  });

  it('AWS SDK v3: the rules round-trip; Kodo corsRules/get shows them; bad methods and wildcards are refused', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'cors-sdk' }));
    const CORSRules = [{ ID: 'r1', AllowedOrigins: ['*'], AllowedMethods: ['GET'], ExposeHeaders: ['x-amz-meta-header1'] }];
    await s3.send(new PutBucketCorsCommand({ Bucket: 'cors-sdk', CORSConfiguration: { CORSRules } }));
    expect((await s3.send(new GetBucketCorsCommand({ Bucket: 'cors-sdk' }))).CORSRules).toEqual(CORSRules);
    expect((await sdk(s.bucketManager().getCorsRules('cors-sdk'))).data).toEqual([{ allowed_origin: ['*'], allowed_method: ['GET'], exposed_header: ['x-amz-meta-header1'] }]);
    const put = (rule: { AllowedOrigins: string[]; AllowedMethods: string[]; AllowedHeaders?: string[] }) =>
      codeOf(s3.send(new PutBucketCorsCommand({ Bucket: 'cors-sdk', CORSConfiguration: { CORSRules: [rule] } })));
    expect(await put({ AllowedOrigins: ['*'], AllowedMethods: ['get'] })).toBe('InvalidRequest');
    expect(await put({ AllowedOrigins: ['*'], AllowedMethods: ['PATCH'] })).toBe('InvalidRequest');
    expect(await put({ AllowedOrigins: ['*.*.example'], AllowedMethods: ['GET'] })).toBe('InvalidRequest');
    expect(await put({ AllowedOrigins: ['*'], AllowedMethods: ['GET'], AllowedHeaders: ['x-*-*'] })).toBe('InvalidRequest');
    expect((await s3.send(new GetBucketCorsCommand({ Bucket: 'cors-sdk' }))).CORSRules).toEqual(CORSRules);
  });

  it('a rule set through Kodo answers GetBucketCors in S3 shape', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 'cors-kodo' }));
    const set = await sdk(s.bucketManager().putCorsRules('cors-kodo', [{ allowed_origin: ['https://app.example'], allowed_method: ['GET', 'HEAD'], max_age: 60 }]));
    expect(set.status).toBe(200);
    expect((await s3.send(new GetBucketCorsCommand({ Bucket: 'cors-kodo' }))).CORSRules).toEqual([{ AllowedOrigins: ['https://app.example'], AllowedMethods: ['GET', 'HEAD'], MaxAgeSeconds: 60 }]);
  });
});

describe('CORS answers to requests (s3-tests shape)', () => {
  it('origin patterns with a wildcard anywhere match preflights and actual requests', async () => {
    const out = await py<Record<string, unknown>>('cors-origins', `
c.put_bucket_cors(Bucket=B, CORSConfiguration={'CORSRules': [
    {'AllowedMethods': ['GET'], 'AllowedOrigins': ['*suffix']},
    {'AllowedMethods': ['GET'], 'AllowedOrigins': ['start*end']},
    {'AllowedMethods': ['GET'], 'AllowedOrigins': ['prefix*']},
    {'AllowedMethods': ['PUT'], 'AllowedOrigins': ['*.put']}]})
c.put_object(Bucket=B, Key='obj', Body=b'public', ACL='public-read')
obj = url + '/obj'
bar = url + '/bar'
for o in ['foo.suffix', 'foo.bar', 'foo.suffix.get', 'startend', 'start1end', 'start12end', '0start12end', 'prefix', 'prefix.suffix', 'bla.prefix']:
    out['get ' + o] = check(requests.get, obj, {'Origin': o})
    out['options ' + o] = check(requests.options, url, {'Origin': o, 'Access-Control-Request-Method': 'GET'})
out['get none'] = check(requests.get, obj)
out['get missing'] = check(requests.get, bar, {'Origin': 'foo.suffix'})
out['put asks GET'] = check(requests.put, bar, {'Origin': 'foo.suffix', 'Access-Control-Request-Method': 'GET', 'content-length': '0'})
out['put asks PUT'] = check(requests.put, bar, {'Origin': 'foo.suffix', 'Access-Control-Request-Method': 'PUT', 'content-length': '0'})
out['put plain'] = check(requests.put, bar, {'Origin': 'foo.suffix', 'content-length': '0'})
out['put foo.put'] = check(requests.put, bar, {'Origin': 'foo.put', 'content-length': '0'})
out['options no origin'] = check(requests.options, url)
out['options no method'] = check(requests.options, url, {'Origin': 'foo.suffix'})
out['options obj'] = check(requests.options, bar, {'Origin': 'foo.suffix', 'Access-Control-Request-Method': 'GET'})
out['options foo.put GET'] = check(requests.options, url, {'Origin': 'foo.put', 'Access-Control-Request-Method': 'GET'})
out['options foo.put PUT'] = check(requests.options, url, {'Origin': 'foo.put', 'Access-Control-Request-Method': 'PUT'})
`);
    const yes = (o: string, m = 'GET') => [o, m];
    const no = [null, null];
    const want: Record<string, unknown> = { 'get none': [200, null, null] };
    for (const [o, ok] of [['foo.suffix', true], ['foo.bar', false], ['foo.suffix.get', false], ['startend', true], ['start1end', true], ['start12end', true], ['0start12end', false], ['prefix', true], ['prefix.suffix', true], ['bla.prefix', false]] as const) {
      want[`get ${o}`] = [200, ...(ok ? yes(o) : no)];
      want[`options ${o}`] = ok ? [200, ...yes(o)] : [403, ...no];
    }
    Object.assign(want, {
      'get missing': [404, 'foo.suffix', 'GET'],
      'put asks GET': [403, 'foo.suffix', 'GET'],
      'put asks PUT': [403, ...no],
      'put plain': [403, ...no],
      'put foo.put': [403, 'foo.put', 'PUT'],
      'options no origin': [400, ...no],
      'options no method': [400, ...no],
      'options obj': [200, 'foo.suffix', 'GET'],
      'options foo.put GET': [403, ...no],
      'options foo.put PUT': [200, 'foo.put', 'PUT'],
    });
    expect(out).toEqual(want);
  });

  it('an origin * answers Access-Control-Allow-Origin *; requested headers must be allowed (x-amz-* wildcard)', async () => {
    const out = await py<Record<string, unknown>>('cors-star', `
c.put_bucket_cors(Bucket=B, CORSConfiguration={'CORSRules': [
    {'AllowedMethods': ['GET'], 'AllowedOrigins': ['*'], 'ExposeHeaders': ['x-amz-meta-header1']},
    {'AllowedMethods': ['PUT'], 'AllowedOrigins': ['https://*.example.com'], 'AllowedHeaders': ['x-amz-*', 'content-type'], 'MaxAgeSeconds': 90}]})
c.put_object(Bucket=B, Key='obj', Body=b'public', ACL='public-read')
r = requests.get(url + '/obj', headers={'Origin': 'example.origin'})
out['get'] = [r.status_code, r.headers.get('access-control-allow-origin'), r.headers.get('access-control-expose-headers'), r.headers.get('access-control-allow-credentials')]
out['header not allowed'] = check(requests.options, url + '/bar', {'Origin': 'example.origin', 'Access-Control-Request-Headers': 'x-amz-meta-header2', 'Access-Control-Request-Method': 'GET'})
r = requests.options(url + '/bar', headers={'Origin': 'https://app.example.com', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'X-Amz-Meta-A, x-amz-date, Content-Type'})
out['wildcard headers'] = [r.status_code, r.headers.get('access-control-allow-origin'), r.headers.get('access-control-allow-headers'), r.headers.get('access-control-max-age'), r.headers.get('access-control-allow-credentials')]
out['header outside'] = check(requests.options, url + '/bar', {'Origin': 'https://app.example.com', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'x-custom'})
`);
    expect(out).toEqual({
      get: [200, '*', 'x-amz-meta-header1', null],
      'header not allowed': [403, null, null],
      'wildcard headers': [200, 'https://app.example.com', 'x-amz-meta-a, x-amz-date, content-type', '90', 'true'],
      'header outside': [403, null, null],
    });
  });

  it('preflights of presigned GET and PUT URLs (SigV4 and SigV2) are answered from the rules, unauthenticated', async () => {
    const out = await py<Record<string, unknown>>('cors-presigned', `
c.put_object(Bucket=B, Key='foo', Body=b'x', ACL='public-read')
v2 = boto3.client('s3', endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name='cn-east-1',
                  config=Config(signature_version='s3', s3={'addressing_style': 'path'}))
urls = {}
for name, client in [('v4', c), ('v2', v2)]:
    for method, http in [('get_object', 'GET'), ('put_object', 'PUT')]:
        urls[name + ' ' + http] = (http, client.generate_presigned_url(ClientMethod=method, Params={'Bucket': B, 'Key': 'foo'}, ExpiresIn=100000, HttpMethod=http))
for k, (http, u) in urls.items():
    out['bare ' + k] = requests.options(u).status_code
c.put_bucket_cors(Bucket=B, CORSConfiguration={'CORSRules': [{'AllowedMethods': ['GET', 'PUT'], 'AllowedOrigins': ['example']}]})
for k, (http, u) in urls.items():
    out[k] = check(requests.options, u, {'Origin': 'example', 'Access-Control-Request-Method': http})
r = requests.put(urls['v4 PUT'][1], data=b'through cors', headers={'Origin': 'example'})
out['put'] = [r.status_code, r.headers.get('access-control-allow-origin'), c.get_object(Bucket=B, Key='foo')['Body'].read().decode()]
`);
    expect(out).toEqual({
      'bare v4 GET': 400,
      'bare v4 PUT': 400,
      'bare v2 GET': 400,
      'bare v2 PUT': 400,
      'v4 GET': [200, 'example', 'GET, PUT'],
      'v4 PUT': [200, 'example', 'GET, PUT'],
      'v2 GET': [200, 'example', 'GET, PUT'],
      'v2 PUT': [200, 'example', 'GET, PUT'],
      put: [200, 'example', 'through cors'],
    });
  });
});
