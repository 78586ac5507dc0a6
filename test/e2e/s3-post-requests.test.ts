/**
 * S3 POST Object as Python's `requests` sends it (the shape of Ceph s3-tests' `test_post_object_*`): every field is
 * a multipart part with a `filename` (`requests.post(url, files=OrderedDict(...))`), the part named `file` is the
 * file. Signed with a SigV2 policy built by hand and with boto3's `generate_presigned_post` (SigV4); what was
 * stored is read back through boto3. Checked: the status of each case (204/201/200 per success_action_status,
 * 303 for a redirect, 400 for a malformed policy or form, 403 for a refused signature or condition) and the
 * stored bytes, key, metadata and tags.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});

afterAll(async () => {
  await s?.stop();
});

/** The Python prelude: a boto3 client, a bucket, and `post(conditions, fields, ...)` sending a SigV2-signed form. */
const PRELUDE = `
import base64, datetime, hashlib, hmac, json, os, re
from collections import OrderedDict
import boto3, requests
from botocore.config import Config
EP, AK, SK, B = os.environ['EP'], os.environ['AK'], os.environ['SK'], os.environ['BUCKET']
c = boto3.client('s3', endpoint_url=EP, aws_access_key_id=AK, aws_secret_access_key=SK, region_name='cn-east-1',
                 config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
c.create_bucket(Bucket=B)
url = EP + '/' + B
def policy_of(doc):
    return base64.b64encode(json.JSONEncoder().encode(doc).encode())
def sign(policy, sk=SK):
    return base64.b64encode(hmac.new(sk.encode(), policy, hashlib.sha1).digest())
def expires(seconds=6000):
    return (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)).strftime('%Y-%m-%dT%H:%M:%SZ')
BASE = [{'bucket': B}, ['starts-with', '$key', 'foo'], {'acl': 'private'}, ['starts-with', '$Content-Type', 'text/plain'], ['content-length-range', 0, 1024]]
def signed(key, extra=(), file='bar', doc=None, ak=AK, signature=None, fields_after=()):
    doc = doc if doc is not None else {'expiration': expires(), 'conditions': BASE}
    policy = policy_of(doc)
    sig = signature if signature is not None else sign(policy)
    parts = [('key', key), ('AWSAccessKeyId', ak), ('acl', 'private'), ('signature', sig), ('policy', policy), ('Content-Type', 'text/plain')]
    parts = [p for p in parts if p[1] is not None] + list(extra) + [('file', file)] + list(fields_after)
    return requests.post(url, files=OrderedDict(parts), allow_redirects=False)
def code(r):
    m = re.search(r'<Code>([^<]*)</Code>', r.text)
    return [r.status_code, m.group(1) if m else r.text]
def body(key):
    return c.get_object(Bucket=B, Key=key)['Body'].read().decode()
out = {}
`;

/** Runs PRELUDE + `script` against a fresh bucket; the JSON it prints as `out`. */
async function py<T>(bucket: string, script: string): Promise<T> {
  const { stdout } = await run('python3', ['-c', PRELUDE + script + '\nprint(json.dumps(out))'], {
    env: { ...process.env, EP: s.s3Url!, AK, SK, BUCKET: bucket },
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as T;
}

describe('POST Object through requests (every field a file part)', () => {
  it('stores signed uploads: plain, no Content-Type, ${filename}, x-ignore-*, case-insensitive conditions, escaped values, metadata, tags', async () => {
    const out = await py<Record<string, unknown>>('post-req-ok', `
out['plain'] = [signed('foo.txt').status_code, body('foo.txt')]
policy = policy_of({'expiration': expires(), 'conditions': [{'bucket': B}, ['starts-with', '$key', 'foo'], {'acl': 'private'}, ['content-length-range', 0, 1024]]})
r = requests.post(url, files=OrderedDict([('key', 'foo2.txt'), ('AWSAccessKeyId', AK), ('acl', 'private'), ('signature', sign(policy)), ('policy', policy), ('file', 'bar2')]))
out['noType'] = [r.status_code, body('foo2.txt')]
out['filename'] = [signed('\${filename}', file=('foo-named.txt', 'from the name')).status_code, body('foo-named.txt')]
out['ignored'] = signed('foo3.txt', extra=[('x-ignore-foo', 'bar')]).status_code
ci = {'expiration': expires(), 'conditions': [{'bUcKeT': B}, ['StArTs-WiTh', '$KeY', 'foo'], {'AcL': 'private'}, ['StArTs-WiTh', '$CoNtEnT-TyPe', 'text/plain'], ['content-length-range', 0, 1024]]}
policy = policy_of(ci)
r = requests.post(url, files=OrderedDict([('kEy', 'foo4.txt'), ('AWSAccessKeyId', AK), ('aCl', 'private'), ('signature', sign(policy)), ('pOLICy', policy), ('Content-Type', 'text/plain'), ('file', 'bar4')]))
out['caseInsensitive'] = [r.status_code, body('foo4.txt')]
esc = {'expiration': expires(), 'conditions': [{'bucket': B}, ['starts-with', '$key', r'\\$foo'], {'acl': 'private'}, ['starts-with', '$Content-Type', 'text/plain'], ['content-length-range', 0, 1024]]}
out['escaped'] = [signed(r'\\$foo.txt', doc=esc).status_code, body(r'\\$foo.txt')]
meta = {'expiration': expires(), 'conditions': BASE + [['starts-with', '$x-amz-meta-foo', 'bar'], ['starts-with', '$tagging', '']]}
tagging = '<Tagging><TagSet><Tag><Key>0</Key><Value>0</Value></Tag><Tag><Key>1</Key><Value>1</Value></Tag></TagSet></Tagging>'
r = signed('foo-meta.txt', doc=meta, extra=[('x-amz-meta-foo', 'barclamp'), ('tagging', tagging)])
out['meta'] = [r.status_code, c.get_object(Bucket=B, Key='foo-meta.txt')['Metadata'], c.get_object_tagging(Bucket=B, Key='foo-meta.txt')['TagSet']]
big = 'foo' * 1024 * 1024
large = {'expiration': expires(), 'conditions': BASE[:4] + [['content-length-range', 0, 5 * 1024 * 1024]]}
out['large'] = [signed('foo-large.txt', doc=large, file=big).status_code, body('foo-large.txt') == big]
after = signed('foo-after.txt', fields_after=[('x-amz-meta-late', 'ignored')])
out['fieldsAfterFile'] = [after.status_code, c.head_object(Bucket=B, Key='foo-after.txt')['Metadata']]
`);
    expect(out.plain).toEqual([204, 'bar']);
    expect(out.noType).toEqual([204, 'bar2']);
    expect(out.filename).toEqual([204, 'from the name']);
    expect(out.ignored).toBe(204);
    expect(out.caseInsensitive).toEqual([204, 'bar4']);
    expect(out.escaped).toEqual([204, 'bar']);
    expect(out.meta).toEqual([204, { foo: 'barclamp' }, [{ Key: '0', Value: '0' }, { Key: '1', Value: '1' }]]);
    expect(out.large).toEqual([204, true]);
    expect(out.fieldsAfterFile).toEqual([204, {}]);
  });

  it('answers success_action_status 201 with PostResponse, 200 empty, an invalid one 204; a redirect is a 303 with bucket, key and etag', async () => {
    const out = await py<Record<string, unknown>>('post-req-status', `
def with_status(v, key):
    doc = {'expiration': expires(), 'conditions': BASE + [{'success_action_status': v}]}
    return signed(key, doc=doc, extra=[('success_action_status', v)])
r = with_status('201', 'foo201.txt')
out['201'] = [r.status_code, re.search(r'<Key>([^<]*)</Key>', r.text).group(1), r.headers.get('ETag')]
r = with_status('200', 'foo200.txt')
out['200'] = [r.status_code, r.text]
r = with_status('404', 'foo404.txt')
out['404'] = [r.status_code, r.text]
rurl = url
doc = {'expiration': expires(), 'conditions': BASE + [['eq', '$success_action_redirect', rurl]]}
r = signed('foo.txt', doc=doc, extra=[('success_action_redirect', rurl)])
etag = c.head_object(Bucket=B, Key='foo.txt')['ETag']
out['redirect'] = [r.status_code, r.headers['Location'] == '{}?bucket={}&key={}&etag=%22{}%22'.format(rurl, B, 'foo.txt', etag.strip('"'))]
`);
    expect(out['201']).toEqual([201, 'foo201.txt', expect.stringMatching(/^"[0-9a-f]{32}"$/)]);
    expect(out['200']).toEqual([200, '']);
    expect(out['404']).toEqual([204, '']);
    expect(out.redirect).toEqual([303, true]);
  });

  it('refuses bad signatures and unmet conditions with 403, malformed policies and forms with 400, and stores nothing', async () => {
    const out = await py<Record<string, unknown>>('post-req-refused', `
def doc(conditions=None, expiration=None, **over):
    d = {'expiration': expiration or expires(), 'conditions': BASE if conditions is None else conditions}
    d.update(over)
    return d
policy = policy_of(doc())
out['badAccessKey'] = code(signed('foo.txt', ak='foo'))
out['reversedAccessKey'] = code(signed('foo.txt', ak=AK[::-1]))
out['badSignature'] = code(signed('foo.txt', signature=sign(policy)[::-1]))
out['wrongSecret'] = code(signed('foo.txt', signature=sign(policy, 'not-the-secret')))
out['missingSignature'] = code(requests.post(url, files=OrderedDict([('key', 'foo.txt'), ('AWSAccessKeyId', AK), ('acl', 'private'), ('policy', policy), ('Content-Type', 'text/plain'), ('file', 'bar')])))
out['noKey'] = code(signed(None))
out['dateFormat'] = code(signed('foo.txt', doc={'expiration': str(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=6000)), 'conditions': BASE}))
out['expired'] = code(signed('foo.txt', doc=doc(expiration=expires(-6000))))
out['noExpiration'] = code(signed('foo.txt', doc={'conditions': BASE}))
out['noConditions'] = code(signed('foo.txt', doc={'expiration': expires()}))
out['CONDITIONS'] = code(signed('foo.txt', doc={'expiration': expires(), 'CONDITIONS': BASE}))
out['EXPIRATION'] = code(signed('foo.txt', doc={'EXPIRATION': expires(), 'conditions': BASE}))
out['emptyCondition'] = code(signed('foo.txt', doc=doc([{}])))
out['noBucketCondition'] = code(signed('foo.txt', doc=doc([['starts-with', '$key', r'\\$foo']] + BASE[2:])))
out['unmetStartsWith'] = code(signed('bar.txt'))
out['metaNotEmpty'] = code(signed('foo.txt', doc=doc(BASE + [['eq', '$x-amz-meta-foo', '']]), extra=[('x-amz-meta-foo', 'barclamp')]))
out['metaMissing'] = code(signed('foo.txt', doc=doc(BASE + [['starts-with', '$x-amz-meta-foo', 'bar']])))
out['extraField'] = code(signed('foo.txt', extra=[('x-amz-meta-extra', 'no')]))
out['tooLarge'] = code(signed('foo.txt', doc=doc(BASE[:4] + [['content-length-range', 0, 0]])))
out['tooSmall'] = code(signed('foo.txt', doc=doc(BASE[:4] + [['content-length-range', 512, 1000]])))
out['rangeOneBound'] = code(signed('foo.txt', doc=doc(BASE[:4] + [['content-length-range', 0]])))
out['rangeNegative'] = code(signed('foo.txt', doc=doc(BASE[:4] + [['content-length-range', -1, 0]])))
other = B + '-other'
c.create_bucket(Bucket=other)
wrong = requests.post(EP + '/' + other, files=OrderedDict([('key', '\${filename}'), ('bucket', B), ('AWSAccessKeyId', AK), ('acl', 'private'), ('signature', sign(policy)), ('policy', policy), ('Content-Type', 'text/plain'), ('file', ('foo.txt', 'bar'))]))
out['wrongBucket'] = code(wrong)
out['anonymous'] = code(requests.post(url, files=OrderedDict([('key', 'foo.txt'), ('acl', 'public-read'), ('Content-Type', 'text/plain'), ('file', 'bar')])))
out['keys'] = [o['Key'] for o in c.list_objects_v2(Bucket=B).get('Contents', [])] + [o['Key'] for o in c.list_objects_v2(Bucket=other).get('Contents', [])]
`);
    expect(out).toEqual({
      badAccessKey: [403, 'InvalidAccessKeyId'],
      reversedAccessKey: [403, 'InvalidAccessKeyId'],
      badSignature: [403, 'SignatureDoesNotMatch'],
      wrongSecret: [403, 'SignatureDoesNotMatch'],
      missingSignature: [400, 'InvalidArgument'],
      noKey: [400, 'InvalidArgument'],
      dateFormat: [400, 'InvalidPolicyDocument'],
      expired: [403, 'AccessDenied'],
      noExpiration: [400, 'InvalidPolicyDocument'],
      noConditions: [400, 'InvalidPolicyDocument'],
      CONDITIONS: [400, 'InvalidPolicyDocument'],
      EXPIRATION: [400, 'InvalidPolicyDocument'],
      emptyCondition: [400, 'InvalidPolicyDocument'],
      noBucketCondition: [403, 'AccessDenied'],
      unmetStartsWith: [403, 'AccessDenied'],
      metaNotEmpty: [403, 'AccessDenied'],
      metaMissing: [403, 'AccessDenied'],
      extraField: [403, 'AccessDenied'],
      tooLarge: [400, 'EntityTooLarge'],
      tooSmall: [400, 'EntityTooSmall'],
      rangeOneBound: [400, 'InvalidPolicyDocument'],
      rangeNegative: [400, 'InvalidPolicyDocument'],
      wrongBucket: [403, 'AccessDenied'],
      anonymous: [403, 'AccessDenied'],
      keys: [],
    });
  });

  it('checks an x-amz-checksum-sha256 field against the file: a match stores it, a malformed or wrong one is 400 and stores nothing', async () => {
    const out = await py<Record<string, unknown>>('post-req-sum', `
doc = {'expiration': expires(), 'conditions': [{'bucket': B}, ['starts-with', '$key', 'foo_cksum'], {'acl': 'private'}, ['starts-with', '$Content-Type', 'text/plain'], ['content-length-range', 0, 5 * 1024 * 1024]]}
data = b'x' * (2 * 1024 * 1024)
good = base64.b64encode(hashlib.sha256(data).digest()).decode()
out['good'] = [signed('foo_cksum_ok.txt', doc=doc, extra=[('x-amz-checksum-sha256', good)], file=data).status_code, good]
out['malformed'] = code(signed('foo_cksum_bad.txt', doc=doc, extra=[('x-amz-checksum-sha256', 'sailorjerry')], file=data))
wrong = base64.b64encode(hashlib.sha256(b'other').digest()).decode()
out['wrong'] = code(signed('foo_cksum_bad.txt', doc=doc, extra=[('x-amz-checksum-sha256', wrong)], file=data))
out['keys'] = [o['Key'] for o in c.list_objects_v2(Bucket=B).get('Contents', [])]
`);
    expect(out).toEqual({ good: [204, 'aTL9MeXa9HObn6eP93eygxsJlcwdCwCTysgGAZAgE7w='], malformed: [400, 'BadDigest'], wrong: [400, 'BadDigest'], keys: ['foo_cksum_ok.txt'] });
  });

  it("boto3's generate_presigned_post (SigV4) posted by requests stores the file", async () => {
    const out = await py<Record<string, unknown>>('post-req-v4', `
p = c.generate_presigned_post(B, 'v4/\${filename}', Fields={'Content-Type': 'text/plain', 'x-amz-meta-by': 'boto3'},
    Conditions=[['starts-with', '$key', 'v4/'], {'Content-Type': 'text/plain'}, {'x-amz-meta-by': 'boto3'}, ['content-length-range', 1, 100]], ExpiresIn=600)
r = requests.post(p['url'], data=p['fields'], files={'file': ('hello.txt', b'signed by boto3')})
got = c.get_object(Bucket=B, Key='v4/hello.txt')
out['v4'] = [r.status_code, got['Body'].read().decode(), got['ContentType'], got['Metadata']]
as_files = OrderedDict(list(p['fields'].items()) + [('file', ('again.txt', 'as files'))])
r = requests.post(p['url'], files=as_files)
out['v4Files'] = [r.status_code, body('v4/again.txt')]
`);
    expect(out.v4).toEqual([204, 'signed by boto3', 'text/plain', { by: 'boto3' }]);
    expect(out.v4Files).toEqual([204, 'as files']);
  });
});
