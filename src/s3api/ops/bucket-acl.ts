/**
 * GetBucketAcl / PutBucketAcl (`GET|PUT /<bucket>?acl`) and GetObjectAcl (`GET /<bucket>/<key>?acl`): Kodo has one
 * access switch per bucket, its private flag (docs/development/kodo-protocol.md §18.10), so the ACL is canned:
 * `private` ↔ private bucket, `public-read` ↔ public bucket (objects answer their bucket's ACL).
 * PutBucketAcl takes `x-amz-acl: private|public-read`; any other canned ACL, `x-amz-grant-*` headers or an
 * AccessControlPolicy body → NotImplemented (501). The answer is an AccessControlPolicy: the owner with
 * FULL_CONTROL, plus the AllUsers group with READ for a public bucket.
 */
import type { Granary } from '../../context.js';
import { setBucketPrivate } from '../../buckets/buckets.js';
import type { BucketRecord } from '../../ports/meta.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';

const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

/** The AccessControlPolicy of a bucket. */
function aclXml(bucket: BucketRecord): string {
  const owner = el('ID', bucket.owner) + el('DisplayName', bucket.owner);
  const grants =
    `<Grant><Grantee xmlns:xsi="${XSI}" xsi:type="CanonicalUser">${owner}</Grantee>${el('Permission', 'FULL_CONTROL')}</Grant>` +
    (bucket.private ? '' : `<Grant><Grantee xmlns:xsi="${XSI}" xsi:type="Group">${el('URI', 'http://acs.amazonaws.com/groups/global/AllUsers')}</Grantee>${el('Permission', 'READ')}</Grant>`);
  return xmlDocument('AccessControlPolicy', `<Owner>${owner}</Owner><AccessControlList>${grants}</AccessControlList>`);
}

export async function getBucketAcl(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  return xmlResponse(aclXml(await accessBucket(g, req)));
}

export async function getObjectAcl(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  if (!(await g.meta.getObject(bucket.name, objectKey(req)))) throw S3Errors.NoSuchKey();
  return xmlResponse(aclXml(bucket));
}

export async function putBucketAcl(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  if (Object.keys(req.headers).some((h) => h.startsWith('x-amz-grant-'))) throw S3Errors.NotImplemented('Only the canned ACLs private and public-read are supported');
  const acl = headerOf(req, 'x-amz-acl');
  if (acl !== 'private' && acl !== 'public-read') throw S3Errors.NotImplemented('Only the canned ACLs private and public-read are supported');
  await setBucketPrivate(g, bucket.name, acl === 'private');
  return { status: 200 };
}
