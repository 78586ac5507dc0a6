/**
 * Bucket authorisation, decided in one place: the root key may act on every bucket; any other key only on the
 * buckets its account owns. Every operation calls this for every bucket it touches (upload scope, private
 * download, management source and target).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord } from '../ports/meta.js';

/** Whether `accessKey` may act on `bucket`. */
export function mayAccess(g: Granary, accessKey: string, bucket: BucketRecord): boolean {
  return g.keyIndex.isRoot(accessKey) || bucket.owner === accessKey;
}

/** The bucket, if `accessKey` may act on it: 631 when it does not exist, 403 when it belongs to another account. */
export async function authorizeBucket(g: Granary, accessKey: string, bucket: string): Promise<BucketRecord> {
  const rec = await g.meta.getBucket(bucket);
  if (!rec) throw Errors.noSuchBucket(bucket);
  if (!mayAccess(g, accessKey, rec)) throw Errors.forbidden(`no permission on bucket ${bucket}`);
  return rec;
}
