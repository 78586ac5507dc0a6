/**
 * Bucket access of S3 operations (docs/development/kodo-protocol.md §18.3): a signed caller acts on a bucket as on
 * the Kodo API (auth/authorize.ts: the root key on every bucket, an account key on its own; another account's →
 * AccessDenied, a missing bucket → NoSuchBucket); beyond that, the S3 ACLs decide (acl.ts: other accounts and
 * anonymous callers get what the bucket's or object's grants give them; a public bucket's objects are anyone's).
 * With the bucket's IgnorePublicAcls (public-access-block.ts) the public grants of these ACLs, and the Kodo public
 * flag, give nothing here. An IAM sub-user's access, and any access the bucket policy grants (anonymous callers, other accounts), was decided
 * by the route table's step (auth-step.ts), which leaves the bucket on the request (`authorized`).
 */
import { mayAccess } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { parseBucketPolicy, policyIsPublic } from './bucket-policy-doc.js';
import { aclAllows, bucketGrants, cannedGrants, type Acl, type AskedPermission, type Requester } from './acl.js';
import { objectAclOf } from './acl-request.js';
import { effectiveAcl } from './public-access-block.js';
import { S3Errors } from './errors.js';
import type { S3Request } from './types.js';

/** The bucket the request names; InvalidRequest when it names none (a service-level path). */
export function bucketName(req: S3Request): string {
  if (req.bucket === undefined) throw S3Errors.InvalidRequest('This operation needs a bucket');
  return req.bucket;
}

/** The key the request names; InvalidRequest when none. */
export function objectKey(req: S3Request): string {
  if (req.key === undefined) throw S3Errors.InvalidRequest('This operation needs an object key');
  return req.key;
}

/** The signed caller's AccessKey; AccessDenied for an anonymous request. */
export function signedCaller(req: S3Request): string {
  if (req.caller.accessKey === undefined) throw S3Errors.AccessDenied();
  return req.caller.accessKey;
}

/**
 * What an operation needs of a bucket: `OWNER` — to act on it (its account's key or the root key only; the
 * default) — or an S3 ACL permission, which the bucket's ACL may also give other accounts and anonymous callers
 * (READ: list it; WRITE: put objects; READ_ACP / WRITE_ACP: read / change its ACL).
 */
export type BucketNeed = 'OWNER' | AskedPermission;

/** The bucket of the request if the caller has `need` on it (see `BucketNeed`). NoSuchBucket (404), AccessDenied (403). */
export async function accessBucket(g: Granary, req: S3Request, need: BucketNeed = 'OWNER'): Promise<BucketRecord> {
  const name = bucketName(req);
  const rec = 'prefetched' in req && (req.prefetched === undefined || req.prefetched.name === name) ? req.prefetched : await g.meta.getBucket(name);
  return checkBucketAccess(g, req, rec, need);
}

/**
 * `accessBucket` for a bucket record already read (`undefined`: it does not exist): the record when the caller
 * may act on it (its owner or root), or when `need` is an ACL permission the bucket's ACL gives the caller
 * (s3api/acl.ts, signed or anonymous); else NoSuchBucket (404) or AccessDenied (403).
 */
export function checkBucketAccess(g: Granary, req: S3Request, rec: BucketRecord | undefined, need: BucketNeed = 'OWNER'): BucketRecord {
  if (!rec) throw S3Errors.NoSuchBucket(undefined);
  const ak = req.caller.accessKey;
  if (req.authorized?.name === rec.name || (ak !== undefined && mayAccess(g, ak, rec))) return rec;
  // Other accounts and anonymous callers: the bucket's ACL decides (acl.ts).
  if (need !== 'OWNER' && aclAllows(deciding(rec), requesterOf(req), need)) return rec;
  throw ak !== undefined ? S3Errors.AccessDenied(`no permission on bucket ${rec.name}`) : S3Errors.AccessDenied();
}

/**
 * GetObject/HeadObject: the bucket when the caller may read `object` (undefined: no such entry) — its owner or
 * root; else the object's own ACL when it has one (and the bucket's ownership is not BucketOwnerEnforced, which
 * turns object ACLs off), else the bucket's Kodo public flag (a public bucket's objects are anyone's to read, as on
 * the Kodo door). NoSuchBucket (404), AccessDenied (403).
 */
export function checkObjectRead(g: Granary, req: S3Request, rec: BucketRecord | undefined, object: ObjectRecord | undefined): BucketRecord {
  if (!rec) throw S3Errors.NoSuchBucket(undefined);
  const ak = req.caller.accessKey;
  if (req.authorized?.name === rec.name || (ak !== undefined && mayAccess(g, ak, rec))) return rec;
  const own = object && rec.settings.ownership !== 'BucketOwnerEnforced' ? objectAclOf(object.meta) : undefined;
  const pab = rec.settings.publicAccessBlock;
  // A public bucket's objects are anyone's (AllUsers READ of its ACL) — unless the bucket ignores public ACLs.
  if (own ? aclAllows(effectiveAcl(pab, own), requesterOf(req), 'READ') : !rec.private && !pab?.ignorePublicAcls && !restrictedPolicy(rec)) return rec;
  throw ak !== undefined ? S3Errors.AccessDenied(`no permission on bucket ${rec.name}`) : S3Errors.AccessDenied();
}

/** The requester of an S3 request, for ACL decisions (a signed caller's canonical id is its AccessKey). */
export function requesterOf(req: S3Request): Requester {
  return req.caller.accessKey === undefined ? { kind: 'anonymous' } : { kind: 'user', id: req.caller.accessKey };
}

/**
 * Whether the bucket's RestrictPublicBuckets applies: set, and its stored policy is public (an unparsable one counts
 * as public: fail closed). The Kodo public flag a public policy opened then gives nothing (public-access-block.ts).
 */
function restrictedPolicy(rec: BucketRecord): boolean {
  const text = rec.settings.policy;
  if (!rec.settings.publicAccessBlock?.restrictPublicBuckets || text === undefined) return false;
  try {
    return policyIsPublic(parseBucketPolicy(text, rec.name));
  } catch {
    return true;
  }
}

/**
 * The bucket ACL that decides access: its grants without the Kodo flag's AllUsers READ when RestrictPublicBuckets
 * applies (`restrictedPolicy`), without any public grant when it ignores public ACLs.
 */
function deciding(rec: BucketRecord): Acl {
  const acl = restrictedPolicy(rec) ? { owner: rec.owner, grants: rec.settings.acl ?? cannedGrants('private', rec.owner) } : bucketAclOf(rec);
  return effectiveAcl(rec.settings.publicAccessBlock, acl);
}

/** A bucket's ACL, in step with its Kodo private flag (acl.ts `bucketGrants`). */
export function bucketAclOf(rec: BucketRecord): Acl {
  return { owner: rec.owner, grants: bucketGrants(rec.settings.acl, rec.owner, rec.private) };
}
