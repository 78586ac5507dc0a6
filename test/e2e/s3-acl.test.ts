/**
 * S3 ACLs through the AWS SDK v3 and boto3, asserting what the AWS documentation says ("Access control list (ACL)
 * overview", PutBucketAcl, PutObjectAcl, PutBucketOwnershipControls): canned ACLs on buckets and objects, grants
 * by header (id, uri; emailAddress refused as AWS answers outside e-mail regions) and by AccessControlPolicy body,
 * object ACLs independent of the bucket's, Get…Acl listing the grants with the owner's canonical id, anonymous
 * listing of a public-read bucket, anonymous PUT and POST into a public-read-write one, the Kodo private flag in step,
 * BucketOwnerEnforced turning ACLs off, and x-amz-expected-bucket-owner.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketOwnershipControlsCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  type Grant,
  type S3Client,
} from '@aws-sdk/client-s3';
import { boto3 } from '../helpers/boto3.js';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

const ALL = 'http://acs.amazonaws.com/groups/global/AllUsers';
const AUTH = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';
let s: TestServer;
let s3: S3Client;
let other: S3Client;
let otherAk: string;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  const pair = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
  otherAk = pair.accessKey;
  other = s3Client(s.s3Url!, pair.accessKey, pair.secretKey);
});

afterAll(async () => {
  s3?.destroy();
  other?.destroy();
  await s?.stop();
});

/** Grants as [type, id or uri, permission]. */
const flat = (grants: Grant[] | undefined): Array<[string | undefined, string | undefined, string | undefined]> =>
  (grants ?? []).map((g) => [g.Grantee?.Type, g.Grantee?.URI ?? g.Grantee?.ID, g.Permission]);

/** An unsigned request's status. */
const anon = (method: string, path: string, body?: string): Promise<number> => fetch(`${s.s3Url}${path}`, { method, ...(body !== undefined ? { body } : {}) }).then((r) => r.status);

/** Whether the bucket is a Kodo private bucket. */
const kodoPrivate = async (bucket: string): Promise<boolean | undefined> => (await s.running.g.meta.getBucket(bucket))?.private;

describe('bucket ACLs (AWS SDK v3)', () => {
  const B = 's3-acl-bucket';
  beforeAll(async () => {
    await s3.send(new CreateBucketCommand({ Bucket: B }));
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'k', Body: 'v' }));
  });

  it('applies each canned ACL: the grants listed, who may list, and the Kodo private flag in step', async () => {
    const cases: Array<[string, Array<[string, string, string]>, { anonList: number; otherList: string; kodoPrivate: boolean }]> = [
      ['private', [], { anonList: 403, otherList: 'AccessDenied', kodoPrivate: true }],
      ['public-read', [['Group', ALL, 'READ']], { anonList: 200, otherList: 'no error', kodoPrivate: false }],
      ['public-read-write', [['Group', ALL, 'READ'], ['Group', ALL, 'WRITE']], { anonList: 200, otherList: 'no error', kodoPrivate: false }],
      ['authenticated-read', [['Group', AUTH, 'READ']], { anonList: 403, otherList: 'no error', kodoPrivate: true }],
      ['bucket-owner-read', [], { anonList: 403, otherList: 'AccessDenied', kodoPrivate: true }],
      ['bucket-owner-full-control', [], { anonList: 403, otherList: 'AccessDenied', kodoPrivate: true }],
    ];
    for (const [canned, extra, want] of cases) {
      await s3.send(new PutBucketAclCommand({ Bucket: B, ACL: canned as 'private' }));
      const got = await s3.send(new GetBucketAclCommand({ Bucket: B }));
      expect([canned, got.Owner]).toEqual([canned, { ID: AK, DisplayName: AK }]);
      expect([canned, flat(got.Grants)]).toEqual([canned, [['CanonicalUser', AK, 'FULL_CONTROL'], ...extra]]);
      expect([canned, await anon('GET', `/${B}?list-type=2`)]).toEqual([canned, want.anonList]);
      expect([canned, await codeOf(other.send(new ListObjectsV2Command({ Bucket: B })))]).toEqual([canned, want.otherList]);
      expect([canned, await kodoPrivate(B)]).toEqual([canned, want.kodoPrivate]);
    }
  });

  it('takes grants by header and by AccessControlPolicy body; refuses e-mail grantees and bad grants', async () => {
    await s3.send(new PutBucketAclCommand({ Bucket: B, GrantFullControl: `id="${AK}"`, GrantRead: `id="${otherAk}", uri="${ALL}"`, GrantReadACP: `id=${otherAk}` }));
    expect(flat((await s3.send(new GetBucketAclCommand({ Bucket: B }))).Grants)).toEqual([
      ['CanonicalUser', otherAk, 'READ'],
      ['Group', ALL, 'READ'],
      ['CanonicalUser', otherAk, 'READ_ACP'],
      ['CanonicalUser', AK, 'FULL_CONTROL'],
    ]);
    // The other account now lists the bucket and reads its ACL, but may not change it.
    expect(await codeOf(other.send(new ListObjectsV2Command({ Bucket: B })))).toBe('no error');
    expect(await codeOf(other.send(new GetBucketAclCommand({ Bucket: B })))).toBe('no error');
    expect(await codeOf(other.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read-write' })))).toBe('AccessDenied');
    expect(await kodoPrivate(B)).toBe(false);

    await s3.send(
      new PutBucketAclCommand({
        Bucket: B,
        AccessControlPolicy: {
          Owner: { ID: AK },
          Grants: [
            { Grantee: { Type: 'CanonicalUser', ID: AK }, Permission: 'FULL_CONTROL' },
            { Grantee: { Type: 'Group', URI: AUTH }, Permission: 'WRITE' },
          ],
        },
      }),
    );
    expect(flat((await s3.send(new GetBucketAclCommand({ Bucket: B }))).Grants)).toEqual([
      ['CanonicalUser', AK, 'FULL_CONTROL'],
      ['Group', AUTH, 'WRITE'],
    ]);
    expect(await kodoPrivate(B)).toBe(true);

    const refused: Array<[string, Promise<unknown>, string]> = [
      ['e-mail grantee', s3.send(new PutBucketAclCommand({ Bucket: B, GrantRead: 'emailAddress="someone@example.com"' })), 'UnresolvableGrantByEmailAddress'],
      ['unknown id', s3.send(new PutBucketAclCommand({ Bucket: B, GrantRead: 'id="nobody-has-this-id"' })), 'InvalidArgument'],
      ['other group', s3.send(new PutBucketAclCommand({ Bucket: B, GrantWrite: 'uri="http://acs.amazonaws.com/groups/s3/LogDelivery"' })), 'InvalidArgument'],
      ['canned and grants', s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'private', GrantRead: `id="${AK}"` })), 'InvalidRequest'],
      [
        'another owner',
        s3.send(new PutBucketAclCommand({ Bucket: B, AccessControlPolicy: { Owner: { ID: otherAk }, Grants: [{ Grantee: { Type: 'CanonicalUser', ID: otherAk }, Permission: 'FULL_CONTROL' }] } })),
        'AccessDenied',
      ],
    ];
    for (const [what, p, code] of refused) expect([what, await codeOf(p)]).toEqual([what, code]);
    // Nothing refused changed the ACL.
    expect(flat((await s3.send(new GetBucketAclCommand({ Bucket: B }))).Grants)).toEqual([
      ['CanonicalUser', AK, 'FULL_CONTROL'],
      ['Group', AUTH, 'WRITE'],
    ]);
  });

  it('creates buckets with a canned ACL; anonymous PUT and POST go into public-read-write buckets only', async () => {
    await s3.send(new CreateBucketCommand({ Bucket: 's3-acl-rw', ACL: 'public-read-write' }));
    await s3.send(new CreateBucketCommand({ Bucket: 's3-acl-ro', ACL: 'public-read' }));
    expect(await anon('PUT', '/s3-acl-rw/dropped', 'anonymous bytes')).toBe(200);
    expect(await (await s3.send(new GetObjectCommand({ Bucket: 's3-acl-rw', Key: 'dropped' }))).Body?.transformToString()).toBe('anonymous bytes');
    expect(await anon('PUT', '/s3-acl-ro/dropped', 'x')).toBe(403);
    // An anonymous POST form too (no policy to meet), with a canned ACL for the object.
    const form = (): FormData => {
      const f = new FormData();
      f.set('key', 'posted');
      f.set('acl', 'public-read');
      f.set('file', new Blob(['form bytes']), 'a.txt');
      return f;
    };
    expect((await fetch(`${s.s3Url}/s3-acl-rw`, { method: 'POST', body: form() })).status).toBe(204);
    expect(flat((await s3.send(new GetObjectAclCommand({ Bucket: 's3-acl-rw', Key: 'posted' }))).Grants)).toEqual([['CanonicalUser', AK, 'FULL_CONTROL'], ['Group', ALL, 'READ']]);
    expect((await fetch(`${s.s3Url}/s3-acl-ro`, { method: 'POST', body: form() })).status).toBe(403);

    // The Kodo API closes the public-read-write bucket: S3 sees a private ACL, anonymous writes stop.
    const url = `${s.url}/private`;
    const body = 'bucket=s3-acl-rw&private=1';
    const closed = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: qiniu.util.generateAccessToken(s.mac, url, body) },
    });
    expect(closed.status).toBe(200);
    expect(flat((await s3.send(new GetBucketAclCommand({ Bucket: 's3-acl-rw' }))).Grants)).toEqual([['CanonicalUser', AK, 'FULL_CONTROL']]);
    expect(await anon('PUT', '/s3-acl-rw/again', 'x')).toBe(403);
    expect(await anon('GET', '/s3-acl-rw?list-type=2')).toBe(403);
    expect(await anon('GET', '/s3-acl-ro?list-type=2')).toBe(200);
    expect(await kodoPrivate('s3-acl-ro')).toBe(false);
  });
});

describe('object ACLs, independent of the bucket’s (AWS SDK v3)', () => {
  const B = 's3-acl-objects';
  beforeAll(() => s3.send(new CreateBucketCommand({ Bucket: B })));

  it('opens one object of a private bucket, closes one of a public bucket, and lists each object’s grants', async () => {
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'open', Body: 'o', ACL: 'public-read' }));
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'closed', Body: 'c' }));
    expect(await anon('GET', `/${B}/open`)).toBe(200);
    expect(await anon('GET', `/${B}/closed`)).toBe(403);
    const got = await s3.send(new GetObjectAclCommand({ Bucket: B, Key: 'open' }));
    expect(got.Owner).toEqual({ ID: AK, DisplayName: AK });
    expect(flat(got.Grants)).toEqual([['CanonicalUser', AK, 'FULL_CONTROL'], ['Group', ALL, 'READ']]);
    expect(flat((await s3.send(new GetObjectAclCommand({ Bucket: B, Key: 'closed' }))).Grants)).toEqual([['CanonicalUser', AK, 'FULL_CONTROL']]);

    // PutObjectAcl: the other way round; the bucket's own ACL does not change.
    await s3.send(new PutObjectAclCommand({ Bucket: B, Key: 'open', ACL: 'private' }));
    await s3.send(new PutObjectAclCommand({ Bucket: B, Key: 'closed', GrantRead: `uri="${AUTH}"` }));
    expect(await anon('GET', `/${B}/open`)).toBe(403);
    expect(await anon('GET', `/${B}/closed`)).toBe(403);
    expect(await codeOf(other.send(new GetObjectCommand({ Bucket: B, Key: 'closed' })))).toBe('no error');
    expect(await codeOf(other.send(new GetObjectCommand({ Bucket: B, Key: 'open' })))).toBe('AccessDenied');
    expect(flat((await s3.send(new GetBucketAclCommand({ Bucket: B }))).Grants)).toEqual([['CanonicalUser', AK, 'FULL_CONTROL']]);

    // In a public bucket, an object with a private ACL stays closed on the S3 door.
    await s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read' }));
    await s3.send(new PutObjectCommand({ Bucket: B, Key: 'plain', Body: 'p' }));
    expect(await anon('GET', `/${B}/plain`)).toBe(200);
    expect(await anon('GET', `/${B}/open`)).toBe(403);
    expect(await codeOf(s3.send(new GetObjectAclCommand({ Bucket: B, Key: 'missing' })))).toBe('NoSuchKey');

    // A copy does not take its source's ACL: it gets the request's, or none (it follows its bucket).
    await s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'private' }));
    await s3.send(new PutObjectAclCommand({ Bucket: B, Key: 'open', ACL: 'public-read' }));
    await s3.send(new CopyObjectCommand({ Bucket: B, Key: 'copy-plain', CopySource: `${B}/open` }));
    await s3.send(new CopyObjectCommand({ Bucket: B, Key: 'copy-public', CopySource: `${B}/closed`, ACL: 'public-read' }));
    expect(await anon('GET', `/${B}/open`)).toBe(200);
    expect(await anon('GET', `/${B}/copy-plain`)).toBe(403);
    expect(await anon('GET', `/${B}/copy-public`)).toBe(200);
  });
});

describe('ownership controls and the expected bucket owner (AWS SDK v3)', () => {
  const B = 's3-acl-owner';
  beforeAll(() => s3.send(new CreateBucketCommand({ Bucket: B })));

  it('BucketOwnerEnforced turns ACLs off but bucket-owner-full-control; Delete turns them back on', async () => {
    expect(await codeOf(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: B })))).toBe('OwnershipControlsNotFoundError');
    await s3.send(new PutBucketOwnershipControlsCommand({ Bucket: B, OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] } }));
    expect((await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: B }))).OwnershipControls?.Rules).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
    expect(await codeOf(s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read' })))).toBe('AccessControlListNotSupported');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: B, Key: 'x', Body: 'x', ACL: 'public-read' })))).toBe('AccessControlListNotSupported');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: B, Key: 'x', Body: 'x', ACL: 'bucket-owner-full-control' })))).toBe('no error');
    expect(await codeOf(s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'bucket-owner-full-control' as 'private' })))).toBe('no error');
    expect(await codeOf(other.send(new PutBucketOwnershipControlsCommand({ Bucket: B, OwnershipControls: { Rules: [{ ObjectOwnership: 'ObjectWriter' }] } })))).toBe(
      'AccessDenied',
    );
    await s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket: B }));
    expect(await codeOf(s3.send(new GetBucketOwnershipControlsCommand({ Bucket: B })))).toBe('OwnershipControlsNotFoundError');
    expect(await codeOf(s3.send(new PutBucketAclCommand({ Bucket: B, ACL: 'public-read' })))).toBe('no error');
  });

  it('x-amz-expected-bucket-owner: the owner’s canonical id passes, another is AccessDenied', async () => {
    expect(await codeOf(s3.send(new ListObjectsV2Command({ Bucket: B, ExpectedBucketOwner: AK })))).toBe('no error');
    expect(await codeOf(s3.send(new ListObjectsV2Command({ Bucket: B, ExpectedBucketOwner: otherAk })))).toBe('AccessDenied');
    expect(await codeOf(s3.send(new PutObjectCommand({ Bucket: B, Key: 'y', Body: 'y', ExpectedBucketOwner: '111122223333' })))).toBe('AccessDenied');
    expect(await codeOf(s3.send(new GetObjectCommand({ Bucket: B, Key: 'y' })))).toBe('NoSuchKey');
  });
});

describe('ACLs through boto3', () => {
  const B = 's3-acl-boto3';

  it('canned and granted ACLs, anonymous listing and writing with an unsigned client, ownership controls', async () => {
    await boto3(s.s3Url!, { ak: AK, sk: SK }, B, `
from botocore import UNSIGNED
anon = boto3.client('s3', endpoint_url=os.environ['EP'], region_name='cn-east-1',
                    config=Config(signature_version=UNSIGNED, s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))
c.create_bucket(Bucket=BUCKET, ACL='public-read')
c.put_object(Bucket=BUCKET, Key='a', Body=b'1')
assert [o['Key'] for o in anon.list_objects(Bucket=BUCKET)['Contents']] == ['a']
assert [o['Key'] for o in anon.list_objects_v2(Bucket=BUCKET)['Contents']] == ['a']
expect_error(403, 'AccessDenied', anon.put_object, Bucket=BUCKET, Key='b', Body=b'2')
c.put_bucket_acl(Bucket=BUCKET, ACL='public-read-write')
anon.put_object(Bucket=BUCKET, Key='b', Body=b'2')
assert body(c.get_object(Bucket=BUCKET, Key='b')) == b'2'
acl = c.get_bucket_acl(Bucket=BUCKET)
assert acl['Owner']['ID'] == os.environ['AK'], acl['Owner']
assert [(g['Grantee']['Type'], g['Permission']) for g in acl['Grants']] == [('CanonicalUser', 'FULL_CONTROL'), ('Group', 'READ'), ('Group', 'WRITE')], acl['Grants']
c.put_bucket_acl(Bucket=BUCKET, ACL='private')
expect_error(403, 'AccessDenied', anon.list_objects, Bucket=BUCKET)
c.put_object_acl(Bucket=BUCKET, Key='a', ACL='public-read')
assert body(anon.get_object(Bucket=BUCKET, Key='a')) == b'1'
expect_error(403, 'AccessDenied', anon.get_object, Bucket=BUCKET, Key='b')
grants = c.get_object_acl(Bucket=BUCKET, Key='a')['Grants']
assert [g['Grantee'].get('URI', g['Grantee'].get('ID')) for g in grants] == [os.environ['AK'], 'http://acs.amazonaws.com/groups/global/AllUsers'], grants
c.put_object_acl(Bucket=BUCKET, Key='b', GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"')
assert body(anon.get_object(Bucket=BUCKET, Key='b')) == b'2'
expect_error(400, 'UnresolvableGrantByEmailAddress', c.put_object_acl, Bucket=BUCKET, Key='b', GrantRead='emailAddress="a@example.com"')
c.put_object_acl(Bucket=BUCKET, Key='b', AccessControlPolicy={
    'Owner': {'ID': os.environ['AK']},
    'Grants': [{'Grantee': {'Type': 'CanonicalUser', 'ID': os.environ['AK']}, 'Permission': 'FULL_CONTROL'}]})
expect_error(403, 'AccessDenied', anon.get_object, Bucket=BUCKET, Key='b')
c.put_bucket_ownership_controls(Bucket=BUCKET, OwnershipControls={'Rules': [{'ObjectOwnership': 'BucketOwnerEnforced'}]})
assert c.get_bucket_ownership_controls(Bucket=BUCKET)['OwnershipControls']['Rules'] == [{'ObjectOwnership': 'BucketOwnerEnforced'}]
expect_error(400, 'AccessControlListNotSupported', c.put_object_acl, Bucket=BUCKET, Key='a', ACL='public-read')
# Object ACLs are off: 'a' follows the (private) bucket again.
expect_error(403, 'AccessDenied', anon.get_object, Bucket=BUCKET, Key='a')
c.delete_bucket_ownership_controls(Bucket=BUCKET)
expect_error(404, 'OwnershipControlsNotFoundError', c.get_bucket_ownership_controls, Bucket=BUCKET)
expect_error(403, 'AccessDenied', c.get_bucket_acl, Bucket=BUCKET, ExpectedBucketOwner='111122223333')
`);
  });
});
