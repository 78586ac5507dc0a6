/**
 * The bucket quota rule (docs/development/kodo-protocol.md §8.6 `setbucketquota`), pure so that every MetaStore implementation applies
 * the same one inside its commit transaction: a change is refused when it grows a dimension (entries or bytes)
 * past that dimension's limit. A change that does not grow it is always allowed, even in a bucket already over
 * its quota (a quota lowered below the usage): overwrites with smaller content, deletes and moves within the
 * bucket free room and never fail. A negative limit is no limit.
 */
import type { BucketQuota, BucketUsage, QuotaRefusal } from '../ports/meta.js';

/**
 * The refusal for a change of a bucket from `before` to `after` under `quota` (undefined = no quota), or
 * undefined when the change is allowed. The count limit is checked first.
 */
export function quotaRefusal(quota: BucketQuota | undefined, before: BucketUsage, after: BucketUsage): QuotaRefusal | undefined {
  if (!quota) return undefined;
  if (quota.count >= 0 && after.count > before.count && after.count > quota.count) return { limit: 'count', max: quota.count };
  if (quota.size >= 0 && after.bytes > before.bytes && after.bytes > quota.size) return { limit: 'size', max: quota.size };
  return undefined;
}
