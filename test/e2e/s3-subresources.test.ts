/**
 * S3 sub-resources over Kodo's bucket settings, through the AWS SDK: bucket ACL ↔ the private flag (checked with
 * an anonymous read), bucket tagging ↔ Kodo's bucketTagging (read back through the Kodo API), object tagging
 * (kept through a copy), versioning (never enabled), and the refusals: a grant ACL, an invalid tag.
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CopyObjectCommand,
  DeleteBucketCorsCommand,
  GetBucketCorsCommand,
  PutBucketCorsCommand,
  DeleteBucketPolicyCommand,
  GetBucketPolicyCommand,
  PutBucketPolicyCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectTaggingCommand,
  GetBucketAclCommand,
  GetBucketTaggingCommand,
  GetBucketVersioningCommand,
  GetObjectAclCommand,
  GetObjectTaggingCommand,
  PutBucketAclCommand,
  PutBucketTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { codeOf, s3Client } from '../helpers/s3.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { createBucket } from '../helpers/upload.js';

const bucket = 's3-subresources';
let s: TestServer;
let s3: S3Client;

beforeAll(async () => {
  s = await startTestServer();
  s3 = s3Client(s.s3Url!, AK, SK);
  await createBucket(s, bucket);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'doc.txt', Body: 'tagged' }));
});

afterAll(async () => {
  s3?.destroy();
  await s?.stop();
});

describe('bucket ACL ↔ the private flag', () => {
  it('public-read opens anonymous reads, private closes them; the ACL answers each', async () => {
    const anonymous = (): Promise<number> => fetch(`${s.s3Url}/${bucket}/doc.txt`).then((r) => r.status);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'public-read' }));
    expect(await anonymous()).toBe(200);
    const open = await s3.send(new GetBucketAclCommand({ Bucket: bucket }));
    expect(open.Grants?.map((g) => [g.Grantee?.Type, g.Grantee?.URI ?? g.Grantee?.ID, g.Permission])).toEqual([
      ['CanonicalUser', AK, 'FULL_CONTROL'],
      ['Group', 'http://acs.amazonaws.com/groups/global/AllUsers', 'READ'],
    ]);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
    expect(await anonymous()).toBe(403);
    const closed = await s3.send(new GetObjectAclCommand({ Bucket: bucket, Key: 'doc.txt' }));
    expect(closed.Grants?.map((g) => g.Permission)).toEqual(['FULL_CONTROL']);
    // A grant of AllUsers READ is a public bucket too (grants in detail: s3-acl.test.ts).
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, GrantRead: 'uri=http://acs.amazonaws.com/groups/global/AllUsers' }));
    expect(await anonymous()).toBe(200);
    await s3.send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
  });
});

describe('tagging', () => {
  it('bucket tags round-trip and are Kodo bucketTagging', async () => {
    expect(await codeOf(s3.send(new GetBucketTaggingCommand({ Bucket: bucket })))).toBe('NoSuchTagSet');
    await s3.send(new PutBucketTaggingCommand({ Bucket: bucket, Tagging: { TagSet: [{ Key: 'team', Value: 'media' }, { Key: 'env', Value: 'prod' }] } }));
    const got = await s3.send(new GetBucketTaggingCommand({ Bucket: bucket }));
    expect(got.TagSet).toEqual([{ Key: 'team', Value: 'media' }, { Key: 'env', Value: 'prod' }]);
    const url = `${s.url}/bucketTagging?bucket=${bucket}`;
    const kodo = await fetch(url, { headers: { authorization: qiniu.util.generateAccessToken(s.mac, url) } });
    expect(await kodo.json()).toEqual({ Tags: [{ Key: 'team', Value: 'media' }, { Key: 'env', Value: 'prod' }] });
    expect(await codeOf(s3.send(new PutBucketTaggingCommand({ Bucket: bucket, Tagging: { TagSet: [{ Key: 'kodo-reserved', Value: 'x' }] } })))).toBe('InvalidTag');
    await s3.send(new DeleteBucketTaggingCommand({ Bucket: bucket }));
    expect(await codeOf(s3.send(new GetBucketTaggingCommand({ Bucket: bucket })))).toBe('NoSuchTagSet');
  });

  it('object tags round-trip, survive a copy, and are refused past the limits', async () => {
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'doc.txt' }))).TagSet).toEqual([]);
    await s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'doc.txt', Tagging: { TagSet: [{ Key: 'state', Value: 'draft & new' }] } }));
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy.txt', CopySource: `${bucket}/doc.txt`, MetadataDirective: 'REPLACE', Metadata: { a: 'b' } }));
    for (const key of ['doc.txt', 'copy.txt']) {
      expect((await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: key }))).TagSet).toEqual([{ Key: 'state', Value: 'draft & new' }]);
    }
    const eleven = Array.from({ length: 11 }, (_, i) => ({ Key: `k${i}`, Value: 'v' }));
    expect(await codeOf(s3.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'doc.txt', Tagging: { TagSet: eleven } })))).toBe('InvalidTag');
    await s3.send(new DeleteObjectTaggingCommand({ Bucket: bucket, Key: 'doc.txt' }));
    expect((await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'doc.txt' }))).TagSet).toEqual([]);
    expect(await codeOf(s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'missing.txt' })))).toBe('NoSuchKey');
  });
});

describe('bucket policy ↔ the private flag', () => {
  it('the anonymous-read policy makes the bucket public; replacing or deleting it makes it private', async () => {
    const statement = { Effect: 'Allow', Principal: { AWS: ['*'] }, Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${bucket}/*`] };
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: JSON.stringify({ Version: '2012-10-17', Statement: [statement] }) }));
    expect((await fetch(`${s.s3Url}/${bucket}/doc.txt`)).status).toBe(200);
    // Answered as sent (the document stored with the bucket).
    expect(JSON.parse((await s3.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy!)).toEqual({ Version: '2012-10-17', Statement: [statement] });
    const write = { ...statement, Action: ['s3:PutObject'] };
    // Another policy is stored and applied on the S3 door (docs/reference/bucket-policies.md); the Kodo flag closes.
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: JSON.stringify({ Statement: [write] }) }));
    expect((await s.running.g.meta.getBucket(bucket))?.private).toBe(true);
    expect(JSON.parse((await s3.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy!)).toEqual({ Statement: [write] });
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: JSON.stringify({ Version: '2012-10-17', Statement: [statement] }) }));
    expect((await fetch(`${s.s3Url}/${bucket}/doc.txt`)).status).toBe(200);
    expect(await codeOf(s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: '{not json' })))).toBe('MalformedPolicy');
    await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }));
    expect((await fetch(`${s.s3Url}/${bucket}/doc.txt`)).status).toBe(403);
    expect(await codeOf(s3.send(new GetBucketPolicyCommand({ Bucket: bucket })))).toBe('NoSuchBucketPolicy');
  });
});

describe('CORS ↔ Kodo CORS rules', () => {
  it('round-trips (rule IDs included), is what Kodo corsRules/get answers, refuses a bad method', async () => {
    expect(await codeOf(s3.send(new GetBucketCorsCommand({ Bucket: bucket })))).toBe('NoSuchCORSConfiguration');
    const rule = { AllowedOrigins: ['https://app.example'], AllowedMethods: ['GET', 'PUT'], AllowedHeaders: ['content-type'], ExposeHeaders: ['etag'], MaxAgeSeconds: 600 };
    await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [rule] } }));
    expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual([rule]);
    const url = `${s.url}/corsRules/get/${bucket}`;
    const kodo = await fetch(url, { headers: { authorization: qiniu.util.generateAccessToken(s.mac, url) } });
    expect(await kodo.json()).toEqual([{ allowed_origin: ['https://app.example'], allowed_method: ['GET', 'PUT'], allowed_header: ['content-type'], exposed_header: ['etag'], max_age: 600 }]);
    expect(await codeOf(s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ ...rule, AllowedMethods: ['PATCH'] }] } })))).toBe('InvalidRequest');
    // S3's rule IDs are kept for GetBucketCors; Kodo's view has no place for them.
    await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ ID: 'r1', ...rule }] } }));
    expect((await s3.send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toEqual([{ ID: 'r1', ...rule }]);
    const withId = await fetch(url, { headers: { authorization: qiniu.util.generateAccessToken(s.mac, url) } });
    expect(await withId.json()).toEqual([{ allowed_origin: ['https://app.example'], allowed_method: ['GET', 'PUT'], allowed_header: ['content-type'], exposed_header: ['etag'], max_age: 600 }]);
    await s3.send(new DeleteBucketCorsCommand({ Bucket: bucket }));
    expect(await codeOf(s3.send(new GetBucketCorsCommand({ Bucket: bucket })))).toBe('NoSuchCORSConfiguration');
  });
});

describe('versioning', () => {
  it('answers an empty VersioningConfiguration', async () => {
    const v = await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }));
    expect(v.Status).toBeUndefined();
    expect(v.$metadata.httpStatusCode).toBe(200);
  });
});
