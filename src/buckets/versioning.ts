/**
 * A bucket's versioning state (ports/versions.ts, docs/reference/versioning.md), set by S3 PutBucketVersioning: once
 * Enabled or Suspended, a bucket never returns to unversioned (AWS: "Once you version-enable a bucket, it can never
 * return to an unversioned state. But you can suspend versioning on that bucket.").
 */
import type { Granary } from '../context.js';
import type { BucketRecord } from '../ports/meta.js';
import type { VersioningState } from '../ports/versions.js';

/**
 * Sets `bucket`'s versioning to `state`. 'unsupported' when the metadata store keeps no versions (`keepsVersions`;
 * both stores keep them), 'no-bucket' when the bucket is gone, 'object-lock' for Suspended on a bucket with object
 * lock (its versioning stays Enabled: ports/object-lock.ts); nothing changes then.
 */
export async function setBucketVersioning(g: Granary, bucket: string, state: VersioningState): Promise<'set' | 'unsupported' | 'no-bucket' | 'object-lock'> {
  if (!g.meta.keepsVersions) return 'unsupported';
  let locked = false;
  const out = await g.meta.updateBucketSettings(bucket, (current) => {
    if (current.objectLock && state !== 'Enabled') {
      locked = true;
      return current;
    }
    return { ...current, versioning: state };
  });
  if (!out) return 'no-bucket';
  return locked ? 'object-lock' : 'set';
}

/** The bucket's versioning state, undefined when it was never versioned. */
export function versioningOf(bucket: BucketRecord): VersioningState | undefined {
  return bucket.settings.versioning;
}
