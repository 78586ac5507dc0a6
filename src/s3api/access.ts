/**
 * Bucket access of S3 operations (docs/development/kodo-protocol.md §18.3): a signed caller's access was decided by
 * the route table's IAM step (auth-step.ts, which leaves the bucket on the request; without it only the root key
 * and the bucket's owner pass: fail closed for sub-users); an anonymous caller only reads objects of public buckets.
 */
import { mayAccess } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import type { BucketRecord } from '../ports/meta.js';
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
 * The bucket of the request if the caller may act on it (signed), or read it (anonymous: public buckets only).
 * NoSuchBucket (404), AccessDenied (403).
 */
export async function accessBucket(g: Granary, req: S3Request): Promise<BucketRecord> {
  return checkBucketAccess(g, req, await g.meta.getBucket(bucketName(req)));
}

/**
 * `accessBucket` for a bucket record already read (`undefined`: it does not exist): the same answers — the record
 * when the caller may act on it (signed) or read it (anonymous, public buckets), else NoSuchBucket (404) or
 * AccessDenied (403).
 */
export function checkBucketAccess(g: Granary, req: S3Request, rec: BucketRecord | undefined): BucketRecord {
  if (!rec) throw S3Errors.NoSuchBucket(undefined);
  if (req.caller.accessKey !== undefined) {
    // Decided by the route table's IAM step (auth-step.ts); a bucket it did not authorise is refused (fail closed).
    if (req.authorized?.name === rec.name) return rec;
    if (!mayAccess(g, req.caller.accessKey, rec)) throw S3Errors.AccessDenied(`no permission on bucket ${rec.name}`);
    return rec;
  }
  if (rec.private) throw S3Errors.AccessDenied();
  return rec;
}
