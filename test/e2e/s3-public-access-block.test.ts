/**
 * S3 Block Public Access of a bucket (s3api/public-access-block.ts; AWS API_PublicAccessBlockConfiguration) through
 * the AWS SDK v3, boto3 and anonymous HTTP: Put/Get/Delete (NoSuchPublicAccessBlockConfiguration, MalformedXML,
 * absent settings false), BlockPublicAcls refusing public ACLs on Put…Acl and uploads (AccessDenied, nothing stored),
 * IgnorePublicAcls voiding public grants for access (still listed), BlockPublicPolicy refusing a public policy, and
 * RestrictPublicBuckets limiting a public policy to the owner's account.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeletePublicAccessBlockCommand,
  GetBucketAclCommand,
  GetPublicAccessBlockCommand,
  HeadObjectCommand,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let owner: S3Client;
let ownerPair: { accessKey: string; secretKey: string };
let other: S3Client;

const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';
const ALL_OFF = { BlockPublicAcls: false, IgnorePublicAcls: false, BlockPublicPolicy: false, RestrictPublicBuckets: false };

beforeAll(async () => {
  s = await startTestServer();
  const now = Math.floor(Date.now() / 1000);
  ownerPair = await s.running.g.keyIndex.create(now);
  owner = s3Client(s.s3Url!, ownerPair.accessKey, ownerPair.secretKey);
  const o = await s.running.g.keyIndex.create(now);
  other = s3Client(s.s3Url!, o.accessKey, o.secretKey);
}, 60_000);

afterAll(async () => {
  for (const c of [owner, other]) c?.destroy();
  await s?.stop();
});

/** The HTTP status of an SDK call (HEAD answers carry no S3 code). */
async function statusOf(p: Promise<{ $metadata: { httpStatusCode?: number } }>): Promise<number | undefined> {
  try {
    return (await p).$metadata.httpStatusCode;
  } catch (err) {
    return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  }
}

const anonGet = (bucket: string, key: string): Promise<number> => fetch(`${s.s3Url}/${bucket}/${key}`).then((r) => r.status);
const anonList = (bucket: string): Promise<number> => fetch(`${s.s3Url}/${bucket}?list-type=2`).then((r) => r.status);
const block = (bucket: string, conf: Partial<typeof ALL_OFF>) => owner.send(new PutPublicAccessBlockCommand({ Bucket: bucket, PublicAccessBlockConfiguration: conf }));
const publicReadPolicy = (bucket: string): string =>
  JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` }] });

async function bucketWith(name: string, keys: string[]): Promise<void> {
  await owner.send(new CreateBucketCommand({ Bucket: name }));
  for (const k of keys) await owner.send(new PutObjectCommand({ Bucket: name, Key: k, Body: `body of ${k}` }));
}

describe('the configuration', () => {
  it('is put, answered with every setting, and deleted', async () => {
    await bucketWith('pab-doc', []);
    expect(await codeOf(owner.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-doc' })))).toBe('NoSuchPublicAccessBlockConfiguration');
    await block('pab-doc', { BlockPublicAcls: true, RestrictPublicBuckets: true });
    const got = await owner.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-doc' }));
    expect(got.PublicAccessBlockConfiguration).toEqual({ ...ALL_OFF, BlockPublicAcls: true, RestrictPublicBuckets: true });
    // A Put replaces the whole configuration.
    await block('pab-doc', { IgnorePublicAcls: true });
    expect((await owner.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-doc' }))).PublicAccessBlockConfiguration).toEqual({ ...ALL_OFF, IgnorePublicAcls: true });
    expect((await owner.send(new DeletePublicAccessBlockCommand({ Bucket: 'pab-doc' }))).$metadata.httpStatusCode).toBe(204);
    expect(await codeOf(owner.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-doc' })))).toBe('NoSuchPublicAccessBlockConfiguration');
    // Another account may neither read nor change it; a missing bucket is NoSuchBucket.
    expect(await codeOf(other.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-doc' })))).toBe('AccessDenied');
    expect(await codeOf(other.send(new PutPublicAccessBlockCommand({ Bucket: 'pab-doc', PublicAccessBlockConfiguration: ALL_OFF })))).toBe('AccessDenied');
    expect(await codeOf(owner.send(new GetPublicAccessBlockCommand({ Bucket: 'pab-none' })))).toBe('NoSuchBucket');
  });

  it('refuses a body that is not a PublicAccessBlockConfiguration with MalformedXML (raw, as boto3 sends it)', async () => {
    await bucketWith('pab-bad', []);
    const out = await boto3(s.s3Url!, { ak: ownerPair.accessKey, sk: ownerPair.secretKey }, 'pab-bad', `
def put_raw(xml):
    def swap(request, **kw):
        request.data = xml.encode()
        request.headers['Content-Length'] = str(len(request.data))
        for h in [h for h in request.headers.keys() if h.lower() == 'content-md5' or h.lower().startswith('x-amz-checksum-') or h.lower() == 'x-amz-sdk-checksum-algorithm']:
            del request.headers[h]
    c.meta.events.register('before-sign.s3.PutPublicAccessBlock', swap)
    try:
        c.put_public_access_block(Bucket=BUCKET, PublicAccessBlockConfiguration={'BlockPublicAcls': True})
    finally:
        c.meta.events.unregister('before-sign.s3.PutPublicAccessBlock', swap)
for bad in ['<Nope/>', '<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls></PublicAccessBlockConfiguration>',
            '<PublicAccessBlockConfiguration><Other>true</Other></PublicAccessBlockConfiguration>', 'not xml']:
    expect_error(400, 'MalformedXML', put_raw, bad)
expect_error(404, 'NoSuchPublicAccessBlockConfiguration', c.get_public_access_block, Bucket=BUCKET)
c.put_public_access_block(Bucket=BUCKET, PublicAccessBlockConfiguration={'BlockPublicPolicy': True})
got = c.get_public_access_block(Bucket=BUCKET)['PublicAccessBlockConfiguration']
assert got == {'BlockPublicAcls': False, 'IgnorePublicAcls': False, 'BlockPublicPolicy': True, 'RestrictPublicBuckets': False}, got
c.delete_public_access_block(Bucket=BUCKET)
expect_error(404, 'NoSuchPublicAccessBlockConfiguration', c.get_public_access_block, Bucket=BUCKET)
print('ok')
`);
    expect(out.trim()).toBe('ok');
  });
});

describe('BlockPublicAcls', () => {
  it('refuses public ACLs on Put…Acl and uploads, canned or granted, storing nothing; private ones pass', async () => {
    await bucketWith('pab-acls', ['a']);
    await block('pab-acls', { BlockPublicAcls: true });
    const denied = async (p: Promise<unknown>): Promise<void> => expect(await codeOf(p)).toBe('AccessDenied');
    await denied(owner.send(new PutBucketAclCommand({ Bucket: 'pab-acls', ACL: 'public-read' })));
    await denied(owner.send(new PutBucketAclCommand({ Bucket: 'pab-acls', GrantRead: `uri="${ALL_USERS}"` })));
    await denied(owner.send(new PutObjectAclCommand({ Bucket: 'pab-acls', Key: 'a', ACL: 'authenticated-read' })));
    await denied(
      owner.send(
        new PutObjectAclCommand({
          Bucket: 'pab-acls',
          Key: 'a',
          AccessControlPolicy: { Owner: { ID: ownerPair.accessKey }, Grants: [{ Grantee: { Type: 'Group', URI: ALL_USERS }, Permission: 'READ' }] },
        }),
      ),
    );
    await denied(owner.send(new PutObjectCommand({ Bucket: 'pab-acls', Key: 'new', Body: 'x', ACL: 'public-read' })));
    await denied(owner.send(new CopyObjectCommand({ Bucket: 'pab-acls', Key: 'copy', CopySource: 'pab-acls/a', ACL: 'public-read-write' })));
    await denied(owner.send(new CreateMultipartUploadCommand({ Bucket: 'pab-acls', Key: 'mp', ACL: 'public-read' })));
    expect(await codeOf(owner.send(new HeadObjectCommand({ Bucket: 'pab-acls', Key: 'new' })))).toBe('NotFound');
    expect(await codeOf(owner.send(new HeadObjectCommand({ Bucket: 'pab-acls', Key: 'copy' })))).toBe('NotFound');
    expect(await anonGet('pab-acls', 'a')).toBe(403);
    // Private ACLs are not public: accepted.
    await owner.send(new PutObjectCommand({ Bucket: 'pab-acls', Key: 'private', Body: 'x', ACL: 'private' }));
    await owner.send(new PutBucketAclCommand({ Bucket: 'pab-acls', ACL: 'private' }));
    // Removed, public ACLs are accepted again.
    await owner.send(new DeletePublicAccessBlockCommand({ Bucket: 'pab-acls' }));
    await owner.send(new PutObjectCommand({ Bucket: 'pab-acls', Key: 'new', Body: 'x', ACL: 'public-read' }));
    expect(await anonGet('pab-acls', 'new')).toBe(200);
  });
});

describe('IgnorePublicAcls', () => {
  it('voids public grants of the bucket and its objects for access; they are still listed', async () => {
    await bucketWith('pab-ignore', ['b']);
    await owner.send(new PutObjectCommand({ Bucket: 'pab-ignore', Key: 'pub', Body: 'x', ACL: 'public-read' }));
    await owner.send(new PutBucketAclCommand({ Bucket: 'pab-ignore', ACL: 'public-read' }));
    expect(await anonGet('pab-ignore', 'pub')).toBe(200);
    expect(await anonGet('pab-ignore', 'b')).toBe(200);
    expect(await anonList('pab-ignore')).toBe(200);
    await block('pab-ignore', { IgnorePublicAcls: true });
    expect(await anonGet('pab-ignore', 'pub')).toBe(403);
    expect(await anonGet('pab-ignore', 'b')).toBe(403);
    expect(await anonList('pab-ignore')).toBe(403);
    // The grants are kept (and a new public ACL may still be set: it is ignored, not blocked).
    const acl = await owner.send(new GetBucketAclCommand({ Bucket: 'pab-ignore' }));
    expect(acl.Grants?.some((g) => g.Grantee?.URI === ALL_USERS)).toBe(true);
    await owner.send(new PutObjectAclCommand({ Bucket: 'pab-ignore', Key: 'b', ACL: 'public-read' }));
    expect(await anonGet('pab-ignore', 'b')).toBe(403);
    // The owner still reads everything.
    expect((await owner.send(new HeadObjectCommand({ Bucket: 'pab-ignore', Key: 'pub' }))).$metadata.httpStatusCode).toBe(200);
    await owner.send(new DeletePublicAccessBlockCommand({ Bucket: 'pab-ignore' }));
    expect(await anonGet('pab-ignore', 'pub')).toBe(200);
  });
});

describe('BlockPublicPolicy and RestrictPublicBuckets', () => {
  it('BlockPublicPolicy refuses a public policy, accepts one limited to an account', async () => {
    await bucketWith('pab-policy', ['c']);
    await block('pab-policy', { BlockPublicPolicy: true });
    expect(await codeOf(owner.send(new PutBucketPolicyCommand({ Bucket: 'pab-policy', Policy: publicReadPolicy('pab-policy') })))).toBe('AccessDenied');
    expect(await anonGet('pab-policy', 'c')).toBe(403);
    const accountOnly = JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: { AWS: AK }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::pab-policy/*' }],
    });
    await owner.send(new PutBucketPolicyCommand({ Bucket: 'pab-policy', Policy: accountOnly }));
  });

  it('RestrictPublicBuckets limits a public policy to the owner account: anonymous callers and other accounts get nothing', async () => {
    await bucketWith('pab-restrict', ['d']);
    const anyone = JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: '*', Action: ['s3:GetObject', 's3:ListBucket'], Resource: ['arn:aws:s3:::pab-restrict', 'arn:aws:s3:::pab-restrict/*'] }],
    });
    await owner.send(new PutBucketPolicyCommand({ Bucket: 'pab-restrict', Policy: anyone }));
    expect(await anonGet('pab-restrict', 'd')).toBe(200);
    expect((await other.send(new HeadObjectCommand({ Bucket: 'pab-restrict', Key: 'd' }))).$metadata.httpStatusCode).toBe(200);
    await block('pab-restrict', { RestrictPublicBuckets: true });
    expect(await anonGet('pab-restrict', 'd')).toBe(403);
    expect(await anonList('pab-restrict')).toBe(403);
    expect(await statusOf(other.send(new HeadObjectCommand({ Bucket: 'pab-restrict', Key: 'd' })))).toBe(403);
    expect((await owner.send(new HeadObjectCommand({ Bucket: 'pab-restrict', Key: 'd' }))).$metadata.httpStatusCode).toBe(200);
    // The anonymous-read policy (which opens the bucket's Kodo flag) is restricted too.
    await owner.send(new PutBucketPolicyCommand({ Bucket: 'pab-restrict', Policy: publicReadPolicy('pab-restrict') }));
    expect(await anonGet('pab-restrict', 'd')).toBe(403);
    await owner.send(new DeletePublicAccessBlockCommand({ Bucket: 'pab-restrict' }));
    expect(await anonGet('pab-restrict', 'd')).toBe(200);
  });
});
