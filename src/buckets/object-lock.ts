/**
 * A bucket's object lock configuration (ports/object-lock.ts, docs/reference/versioning.md "Object lock"): enabled
 * once, at creation (S3 CreateBucket `x-amz-bucket-object-lock-enabled: true`, the console, the CLI), which turns
 * versioning on for good; its default retention set or removed later (S3 PutObjectLockConfiguration).
 */
import type { Granary } from '../context.js';
import type { BucketRecord } from '../ports/meta.js';
import type { DefaultRetention, ObjectLockConfig } from '../ports/object-lock.js';

/**
 * Enables object lock on the just-created `bucket`: versioning Enabled, `objectLock` set. 'unsupported' when the
 * metadata store keeps no versions (PostgreSQL today; nothing changes), 'no-bucket' when it is gone.
 */
export async function enableObjectLock(g: Granary, bucket: string): Promise<'set' | 'unsupported' | 'no-bucket'> {
  if (!g.meta.keepsVersions) return 'unsupported';
  const out = await g.meta.updateBucketSettings(bucket, (cur) => ({ ...cur, versioning: 'Enabled', objectLock: { enabled: true, ...(cur.objectLock?.rule ? { rule: cur.objectLock.rule } : {}) } }));
  return out ? 'set' : 'no-bucket';
}

/**
 * Sets (or, `rule` undefined, removes) the default retention of a bucket with object lock. 'not-locked' when the
 * bucket has no object lock (nothing changes), 'no-bucket' when it is gone.
 */
export async function setDefaultRetention(g: Granary, bucket: string, rule: DefaultRetention | undefined): Promise<'set' | 'not-locked' | 'no-bucket'> {
  let locked = true;
  const out = await g.meta.updateBucketSettings(bucket, (cur) => {
    if (!cur.objectLock) {
      locked = false;
      return cur;
    }
    const objectLock: ObjectLockConfig = { enabled: true, ...(rule ? { rule } : {}) };
    return { ...cur, objectLock };
  });
  if (!out) return 'no-bucket';
  return locked ? 'set' : 'not-locked';
}

/** The bucket's object lock configuration, undefined when it has none. */
export function objectLockOf(bucket: BucketRecord): ObjectLockConfig | undefined {
  return bucket.settings.objectLock;
}
