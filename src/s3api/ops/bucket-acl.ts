/**
 * GetBucketAcl / PutBucketAcl (`GET|PUT /<bucket>?acl`) and GetObjectAcl / PutObjectAcl (`GET|PUT
 * /<bucket>/<key>?acl`), docs/development/kodo-protocol.md §18.10: S3 ACLs (acl.ts, acl-request.ts).
 *
 * - A bucket's grants are kept in its settings (`acl`); its Kodo private flag stays in step: a bucket is public
 *   exactly when its grants give AllUsers READ (public-read, public-read-write, or a grant), and a flag switched
 *   through the Kodo API shows in GetBucketAcl (acl.ts `bucketGrants`).
 * - An object's grants are kept in its reserved metadata `@s3-acl`, independent of the bucket's; an object without
 *   its own answers the owner's FULL_CONTROL, plus AllUsers READ in a public bucket (what its readers get).
 * - Get needs READ_ACP, Put WRITE_ACP (the owner always has both); the answer lists every grant, Owner ID and
 *   DisplayName the owner's canonical id (its AccessKey).
 * - With ownership BucketOwnerEnforced (bucket-ownership.ts) ACLs are off: a Put other than `x-amz-acl:
 *   bucket-owner-full-control` (or a body granting the owner FULL_CONTROL only) → AccessControlListNotSupported
 *   (400).
 * - With the bucket's BlockPublicAcls (public-access-block.ts) a public ACL is refused (AccessDenied), on Put…Acl
 *   and on uploads; with IgnorePublicAcls its public grants give nothing (still listed by Get…Acl).
 * - A Put with neither `x-amz-acl`, grant headers nor a body → MalformedACLError (400); errors of the grants:
 *   acl-request.ts.
 */
import type { Granary } from '../../context.js';
import { setBucketPrivate } from '../../buckets/buckets.js';
import { changeMeta } from '../../objects/manage/update.js';
import type { BucketRecord, ObjectRecord, S3Grant } from '../../ports/meta.js';
import { accessBucket, bucketAclOf, objectKey, requesterOf } from '../access.js';
import { aclAllows, cannedGrants, publicRead, type Acl } from '../acl.js';
import { ACL_META, aclXml, bodyGrants, encodeObjectAcl, headerGrants, objectAclOf, type KnownId } from '../acl-request.js';
import { effectiveAcl, refusePublicAcl } from '../public-access-block.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { readXmlBody } from '../xml.js';
import { Errors } from '../../errors.js';

/** Whether a canonical id names an account of this server. */
export function knownIdOf(g: Granary): KnownId {
  return (id) => g.keyIndex.secretOf(id) !== undefined;
}

/** AccessControlListNotSupported unless `grants` are just the owner's FULL_CONTROL (BucketOwnerEnforced). */
export function checkAclsEnabled(bucket: BucketRecord, grants: S3Grant[], canned: string | undefined): void {
  if (bucket.settings.ownership !== 'BucketOwnerEnforced') return;
  if (canned === 'bucket-owner-full-control') return;
  const onlyOwner = canned === undefined && grants.every((g) => g.grantee.type === 'CanonicalUser' && g.grantee.id === bucket.owner && g.permission === 'FULL_CONTROL');
  if (!onlyOwner) throw S3Errors.AccessControlListNotSupported();
}

/** The grants a Put…Acl request asks for (headers, else the body), checked against the bucket's ownership. */
async function requestedGrants(g: Granary, req: S3Request, bucket: BucketRecord, owner: string, forObject: boolean): Promise<S3Grant[]> {
  const fromHeaders = headerGrants(req, owner, knownIdOf(g), forObject ? bucket.owner : undefined);
  if (fromHeaders) {
    checkAclsEnabled(bucket, fromHeaders.grants, fromHeaders.canned);
    refusePublicAcl(bucket.settings.publicAccessBlock, fromHeaders.grants);
    return fromHeaders.grants;
  }
  const text = await readXmlBody(req.body());
  if (text.trim() === '') throw S3Errors.MalformedACLError();
  const grants = bodyGrants(text, owner, knownIdOf(g));
  checkAclsEnabled(bucket, grants, undefined);
  refusePublicAcl(bucket.settings.publicAccessBlock, grants);
  return grants;
}

/** The object ACL of an entry: its own, else its bucket's access (owner FULL_CONTROL, AllUsers READ if public). */
function objectAcl(bucket: BucketRecord, rec: ObjectRecord): Acl {
  const own = bucket.settings.ownership === 'BucketOwnerEnforced' ? undefined : objectAclOf(rec.meta);
  return own ?? { owner: bucket.owner, grants: cannedGrants(bucket.private ? 'private' : 'public-read', bucket.owner) };
}

/** The entry the request names in a bucket the caller may reach for `need` on objects; NoSuchKey. */
async function entryOf(g: Granary, req: S3Request): Promise<{ bucket: BucketRecord; rec: ObjectRecord }> {
  // Object ACL operations are decided by the object's ACL: the bucket is only looked up here.
  const bucket = await g.meta.getBucket(req.bucket ?? '');
  if (!bucket) throw S3Errors.NoSuchBucket();
  const rec = await g.meta.getObject(bucket.name, objectKey(req));
  if (!rec || (rec.expireAt !== undefined && rec.expireAt <= Math.floor(g.clock.nowMs() / 1000))) throw S3Errors.NoSuchKey();
  return { bucket, rec };
}

/** AccessDenied unless the caller is the bucket's owner (or root) or the ACL gives it `need`. */
function checkAcl(g: Granary, req: S3Request, bucket: BucketRecord, acl: Acl, need: 'READ_ACP' | 'WRITE_ACP'): void {
  const ak = req.caller.accessKey;
  // The root key, the owner, or a sub-user the route table's IAM step authorised (auth-step.ts).
  if (ak !== undefined && (g.keyIndex.isRoot(ak) || ak === bucket.owner || req.authorized?.name === bucket.name)) return;
  if (!aclAllows(effectiveAcl(bucket.settings.publicAccessBlock, acl), requesterOf(req), need)) throw S3Errors.AccessDenied();
}

export async function getBucketAcl(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req, 'READ_ACP');
  return xmlResponse(aclXml(bucketAclOf(bucket)));
}

export async function putBucketAcl(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req, 'WRITE_ACP');
  const grants = await requestedGrants(g, req, bucket, bucket.owner, false);
  const updated = await g.meta.updateBucketSettings(bucket.name, (cur) => ({ ...cur, acl: grants }));
  if (!updated) throw Errors.noSuchBucket(bucket.name);
  await setBucketPrivate(g, bucket.name, !publicRead(grants));
  return { status: 200 };
}

export async function getObjectAcl(g: Granary, req: S3Request): Promise<S3Response> {
  const { bucket, rec } = await entryOf(g, req);
  const acl = objectAcl(bucket, rec);
  checkAcl(g, req, bucket, acl, 'READ_ACP');
  return xmlResponse(aclXml(acl));
}

export async function putObjectAcl(g: Granary, req: S3Request): Promise<S3Response> {
  const { bucket, rec } = await entryOf(g, req);
  const current = objectAcl(bucket, rec);
  checkAcl(g, req, bucket, current, 'WRITE_ACP');
  const grants = await requestedGrants(g, req, bucket, current.owner, true);
  await changeMeta(g, { bucket: rec.bucket, key: rec.key }, { meta: { [ACL_META]: encodeObjectAcl({ owner: current.owner, grants }) } });
  return { status: 200 };
}

/**
 * The `@s3-acl` metadata an upload's `x-amz-acl` / `x-amz-grant-*` headers ask for (PutObject,
 * CreateMultipartUpload), owned by `writer`; undefined when the request has none. AccessControlListNotSupported
 * under BucketOwnerEnforced (but for bucket-owner-full-control, which then sets nothing).
 */
export function uploadAclMeta(g: Granary, req: S3Request, bucket: BucketRecord, writer: string): string | undefined {
  const asked = headerGrants(req, writer, knownIdOf(g), bucket.owner);
  if (!asked) return undefined;
  checkAclsEnabled(bucket, asked.grants, asked.canned);
  refusePublicAcl(bucket.settings.publicAccessBlock, asked.grants);
  if (bucket.settings.ownership === 'BucketOwnerEnforced') return undefined;
  return encodeObjectAcl({ owner: writer, grants: asked.grants });
}

/** Whether a request carries ACL headers (`x-amz-acl`, `x-amz-grant-*`). */
export function hasAclHeaders(req: S3Request): boolean {
  return Object.keys(req.headers).some((h) => h === 'x-amz-acl' || h.startsWith('x-amz-grant-'));
}
