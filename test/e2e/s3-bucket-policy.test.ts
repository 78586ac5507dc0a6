/**
 * S3 bucket policies (docs/reference/bucket-policies.md) through the AWS SDK v3 and raw HTTP: the document stored
 * as sent, malformed ones refused with MalformedPolicy, GetBucketPolicyStatus, and the policy applied on every S3
 * request — anonymous reads on a prefix, a Deny refusing the owner's account keys (not the root key, and never the
 * policy operations themselves), aws:SourceIp, aws:SecureTransport, s3:prefix, another account granted by
 * principal, a sub-user granted by the bucket policy alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CreateBucketCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { boto3 } from '../helpers/boto3.js';
import { iamCall } from '../helpers/iam.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let root: S3Client;
let owner: S3Client;
let ownerPair: { accessKey: string; secretKey: string };
let other: S3Client;
let otherAk: string;
let sub: S3Client;

beforeAll(async () => {
  s = await startTestServer();
  root = s3Client(s.s3Url!, AK, SK);
  const now = Math.floor(Date.now() / 1000);
  ownerPair = await s.running.g.keyIndex.create(now);
  owner = s3Client(s.s3Url!, ownerPair.accessKey, ownerPair.secretKey);
  const o = await s.running.g.keyIndex.create(now);
  otherAk = o.accessKey;
  other = s3Client(s.s3Url!, o.accessKey, o.secretKey);
  expect((await iamCall(s, ownerPair, 'POST', '/iam/v1/users', { alias: 'alice', password: 'correct-horse' })).status).toBe(200);
  const key = await iamCall(s, ownerPair, 'POST', '/iam/v1/users/alice/keypairs');
  expect(key.status, key.text).toBe(200);
  const data = (key.json as { data: { access_key: string; secret_key: string } }).data;
  sub = s3Client(s.s3Url!, data.access_key, data.secret_key);
}, 60_000);

afterAll(async () => {
  for (const c of [root, owner, other, sub]) c?.destroy();
  await s?.stop();
});

const policy = (bucket: string, ...statements: object[]): string => JSON.stringify({ Version: '2012-10-17', Statement: statements });
const put = (bucket: string, text: string, c: S3Client = owner) => c.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: text }));
const anonGet = (bucket: string, key: string): Promise<number> => fetch(`${s.s3Url}/${bucket}/${key}`).then((r) => r.status);

async function bucketWith(name: string, keys: string[]): Promise<void> {
  await owner.send(new CreateBucketCommand({ Bucket: name }));
  for (const k of keys) await owner.send(new PutObjectCommand({ Bucket: name, Key: k, Body: `body of ${k}` }));
}

describe('the document', () => {
  it('is stored as sent, answered exactly, and deleted', async () => {
    await bucketWith('bp-doc', []);
    expect(await codeOf(owner.send(new GetBucketPolicyCommand({ Bucket: 'bp-doc' })))).toBe('NoSuchBucketPolicy');
    const text = `{ "Version": "2012-10-17", "Id": "mine",\n "Statement": {"Sid": "A", "Effect": "Deny", "Principal": {"AWS": ["${otherAk}"]}, "Action": "s3:*", "Resource": ["arn:aws:s3:::bp-doc", "arn:aws:s3:::bp-doc/*"]} }`;
    await put('bp-doc', text);
    expect((await owner.send(new GetBucketPolicyCommand({ Bucket: 'bp-doc' }))).Policy).toBe(text);
    expect((await owner.send(new GetBucketPolicyStatusCommand({ Bucket: 'bp-doc' }))).PolicyStatus?.IsPublic).toBe(false);
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'bp-doc' }));
    expect(await codeOf(owner.send(new GetBucketPolicyCommand({ Bucket: 'bp-doc' })))).toBe('NoSuchBucketPolicy');
  });

  it('refuses malformed policies with MalformedPolicy', async () => {
    await bucketWith('bp-bad', []);
    const st = { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-bad/*' };
    for (const text of [
      'not json',
      policy('bp-bad', { ...st, Resource: 'arn:aws:s3:::another-bucket/*' }),
      policy('bp-bad', { ...st, Condition: { StringSortOf: { 'aws:UserAgent': 'x' } } }),
      policy('bp-bad', { ...st, Effect: 'Maybe' }),
      policy('bp-bad', { Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-bad/*' }),
      policy('bp-bad', { ...st, NotPrincipal: { AWS: '*' } }),
      policy('bp-bad', { ...st, Action: 'ec2:RunInstances' }),
      JSON.stringify({ Statement: [st], Padding: 'x'.repeat(21 * 1024) }),
    ]) {
      expect(await codeOf(put('bp-bad', text)), text.slice(0, 80)).toBe('MalformedPolicy');
    }
    expect(await codeOf(owner.send(new GetBucketPolicyCommand({ Bucket: 'bp-bad' })))).toBe('NoSuchBucketPolicy');
  });
});

describe('evaluation', () => {
  it('lets anyone read a prefix only, and reports the policy public', async () => {
    await bucketWith('bp-anon', ['public/a.txt', 'secret/b.txt']);
    expect(await anonGet('bp-anon', 'public/a.txt')).toBe(403);
    await put('bp-anon', policy('bp-anon', { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-anon/public/*' }));
    expect(await anonGet('bp-anon', 'public/a.txt')).toBe(200);
    expect(await anonGet('bp-anon', 'secret/b.txt')).toBe(403);
    expect((await owner.send(new GetBucketPolicyStatusCommand({ Bucket: 'bp-anon' }))).PolicyStatus?.IsPublic).toBe(true);
    // The Kodo private flag is untouched by a policy other than the anonymous-read one.
    expect((await s.running.g.meta.getBucket('bp-anon'))?.private).toBe(true);
  });

  it('lets anyone list a private bucket the policy opens to listing, on the prefix it names', async () => {
    await bucketWith('bp-anonlist', ['pub/a', 'priv/b']);
    const list = (prefix: string) => fetch(`${s.s3Url}/bp-anonlist?list-type=2&prefix=${prefix}`);
    expect((await list('pub/')).status).toBe(403);
    await put('bp-anonlist', policy('bp-anonlist', { Effect: 'Allow', Principal: '*', Action: 's3:ListBucket', Resource: 'arn:aws:s3:::bp-anonlist', Condition: { StringEquals: { 's3:prefix': 'pub/' } } }));
    const ok = await list('pub/');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('<Key>pub/a</Key>');
    expect((await list('priv/')).status).toBe(403);
  });

  it('keeps the anonymous-read policy opening the Kodo flag', async () => {
    await bucketWith('bp-kodo', ['x']);
    await put('bp-kodo', policy('bp-kodo', { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-kodo/*' }));
    expect((await s.running.g.meta.getBucket('bp-kodo'))?.private).toBe(false);
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'bp-kodo' }));
    expect((await s.running.g.meta.getBucket('bp-kodo'))?.private).toBe(true);
  });

  it('denies DeleteObject to the owner, not to the root key, and never the policy operations', async () => {
    await bucketWith('bp-deny', ['keep', 'root-may']);
    await put('bp-deny', policy('bp-deny', { Sid: 'NoDelete', Effect: 'Deny', Principal: '*', Action: ['s3:DeleteObject', 's3:*Policy'], Resource: ['arn:aws:s3:::bp-deny/*', 'arn:aws:s3:::bp-deny'] }));
    expect(await codeOf(owner.send(new DeleteObjectCommand({ Bucket: 'bp-deny', Key: 'keep' })))).toBe('AccessDenied');
    await root.send(new DeleteObjectCommand({ Bucket: 'bp-deny', Key: 'root-may' }));
    expect((await owner.send(new GetBucketPolicyCommand({ Bucket: 'bp-deny' }))).Policy).toContain('NoDelete');
    await owner.send(new DeleteBucketPolicyCommand({ Bucket: 'bp-deny' }));
    await owner.send(new DeleteObjectCommand({ Bucket: 'bp-deny', Key: 'keep' }));
  });

  it('applies aws:SourceIp and aws:SecureTransport', async () => {
    await bucketWith('bp-ip', ['k']);
    const allowFrom = (cidr: string) => put('bp-ip', policy('bp-ip', { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-ip/*', Condition: { IpAddress: { 'aws:SourceIp': [cidr, '::1/128'] } } }));
    await allowFrom('127.0.0.0/8');
    expect(await anonGet('bp-ip', 'k')).toBe(200);
    await allowFrom('203.0.113.0/24');
    expect(await anonGet('bp-ip', 'k')).toBe(403);
    await put('bp-ip', policy('bp-ip', { Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: 'arn:aws:s3:::bp-ip/*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    expect(await codeOf(owner.send(new GetObjectCommand({ Bucket: 'bp-ip', Key: 'k' })))).toBe('AccessDenied');
  });

  it('applies s3:prefix to listings and grants another account by principal', async () => {
    await bucketWith('bp-list', ['home/a', 'other/b']);
    expect(await codeOf(other.send(new ListObjectsV2Command({ Bucket: 'bp-list', Prefix: 'home/' })))).toBe('AccessDenied');
    await put('bp-list', policy('bp-list',
      { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${otherAk}:root` }, Action: 's3:ListBucket', Resource: 'arn:aws:s3:::bp-list', Condition: { StringLike: { 's3:prefix': 'home/*' } } },
      { Effect: 'Allow', Principal: { AWS: otherAk }, Action: 's3:Get*', Resource: 'arn:aws:s3:::bp-list/home/*' }));
    const listed = await other.send(new ListObjectsV2Command({ Bucket: 'bp-list', Prefix: 'home/' }));
    expect(listed.Contents?.map((c) => c.Key)).toEqual(['home/a']);
    expect(await codeOf(other.send(new ListObjectsV2Command({ Bucket: 'bp-list', Prefix: 'other/' })))).toBe('AccessDenied');
    expect(await (await other.send(new GetObjectCommand({ Bucket: 'bp-list', Key: 'home/a' }))).Body?.transformToString()).toBe('body of home/a');
    expect(await codeOf(other.send(new GetObjectCommand({ Bucket: 'bp-list', Key: 'other/b' })))).toBe('AccessDenied');
  });

  it('applies s3:ExistingObjectTag to object reads', async () => {
    await owner.send(new CreateBucketCommand({ Bucket: 'bp-tags' }));
    await owner.send(new PutObjectCommand({ Bucket: 'bp-tags', Key: 'shared', Body: 'x', Tagging: 'share=yes' }));
    await owner.send(new PutObjectCommand({ Bucket: 'bp-tags', Key: 'kept', Body: 'y', Tagging: 'share=no' }));
    await put('bp-tags', policy('bp-tags', { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-tags/*', Condition: { StringEquals: { 's3:ExistingObjectTag/share': 'yes' } } }));
    expect(await anonGet('bp-tags', 'shared')).toBe(200);
    expect(await anonGet('bp-tags', 'kept')).toBe(403);
    expect(await anonGet('bp-tags', 'missing')).toBe(403);
  });

  it('grants a sub-user of the account through the bucket policy alone', async () => {
    await bucketWith('bp-sub', ['doc']);
    expect(await codeOf(sub.send(new GetObjectCommand({ Bucket: 'bp-sub', Key: 'doc' })))).toBe('AccessDenied');
    await put('bp-sub', policy('bp-sub', { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ownerPair.accessKey}:user/alice` }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::bp-sub/*' }));
    expect(await (await sub.send(new GetObjectCommand({ Bucket: 'bp-sub', Key: 'doc' }))).Body?.transformToString()).toBe('body of doc');
    expect(await codeOf(sub.send(new DeleteObjectCommand({ Bucket: 'bp-sub', Key: 'doc' })))).toBe('AccessDenied');
    // An explicit Deny of the sub-user's IAM policies wins over the bucket policy's Allow.
    const statement = [{ action: ['kodo/Get'], resource: ['qrn:kodo:::bp-sub/*'], effect: 'Deny' }];
    expect((await iamCall(s, ownerPair, 'POST', '/iam/v1/policies', { alias: 'nogets', description: 'no gets', edit_type: 1, statement })).status).toBe(200);
    expect((await iamCall(s, ownerPair, 'POST', '/iam/v1/users/alice/policies', { policy_aliases: ['nogets'] })).status).toBe(200);
    expect(await codeOf(sub.send(new GetObjectCommand({ Bucket: 'bp-sub', Key: 'doc' })))).toBe('AccessDenied');
  });

  it('works from boto3: put, get, status, and the MalformedPolicy answer', async () => {
    await bucketWith('bp-boto', ['pub/a']);
    await boto3(s.s3Url!, { ak: ownerPair.accessKey, sk: ownerPair.secretKey }, 'bp-boto', `
import json
doc = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::bp-boto/pub/*"}]})
c.put_bucket_policy(Bucket=BUCKET, Policy=doc)
assert c.get_bucket_policy(Bucket=BUCKET)["Policy"] == doc
assert c.get_bucket_policy_status(Bucket=BUCKET)["PolicyStatus"]["IsPublic"] is True
expect_error(400, "MalformedPolicy", c.put_bucket_policy, Bucket=BUCKET, Policy='{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bp-boto/*", "Condition": {"StringLooksLike": {"aws:UserAgent": "x"}}}]}')
c.delete_bucket_policy(Bucket=BUCKET)
expect_error(404, "NoSuchBucketPolicy", c.get_bucket_policy, Bucket=BUCKET)
`);
    expect(await anonGet('bp-boto', 'pub/a')).toBe(403);
  });
});
