/**
 * Per-bucket usage and the quota guard of the PostgreSQL MetaStore (the port of store/sqlite/bucket-usage.ts).
 *
 * Usage: `bucket_usage (bucket, shard, bytes, count)` is kept by triggers on `objects` (schema.ts) in the very
 * transaction that inserts, replaces, moves or deletes an entry, sharded by the writing connection so concurrent
 * commits do not queue on one row; a bucket's usage is the SUM over its shards (bytes, entries).
 *
 * Quota (docs/development/kodo-protocol.md §8.6 `setbucketquota`): a change that may grow a bucket with a quota runs with that bucket's
 * advisory lock held EXCLUSIVE (entry-locks.ts), so no other change of its entries runs meanwhile (every one holds
 * it at least shared); `QuotaGuard.run` then removes the bucket's expired entries (they are gone for Kodo, so they
 * must not hold room), measures the usage, applies the change, measures again, and throws `OverQuota` when
 * store/quota-rule.ts refuses it; the transaction then rolls back, so nothing of the change is ever visible. The expiry
 * sweeps do not take bucket locks (they only delete): their rows are taken with `FOR UPDATE SKIP LOCKED` here too.
 */
import type { BucketQuota, BucketUsage, QuotaRefusal } from '../../ports/meta.js';
import { quotaRefusal } from '../quota-rule.js';
import type { Queryable } from './db.js';
import type { ObjectRow } from './rows.js';
import { sweptEntries } from './versions.js';

/**
 * Keys of the expired entries of a bucket (`$1` the bucket, `$2` now in Unix seconds), on the partial expiry index
 * `objects_expire`: few rows, since the sweeper removes them every minute.
 */
export const EXPIRED_IN_BUCKET = 'SELECT key FROM objects WHERE expire_at IS NOT NULL AND expire_at <= $2 AND bucket = $1';

/** Thrown inside a transaction to roll it back when a change would pass the bucket's quota. */
export class OverQuota extends Error {
  constructor(readonly refusal: QuotaRefusal) {
    super(`bucket quota exceeded (${refusal.limit} ${refusal.max})`);
    this.name = 'OverQuota';
  }
}

/** The usage of `bucket` (zeros when it has no entries; the bucket's existence is the caller's to check). */
export async function bucketUsage(c: Queryable, bucket: string): Promise<BucketUsage> {
  const { rows } = await c.query<{ bytes: number | null; count: number | null }>(
    'SELECT SUM(bytes) AS bytes, SUM(count) AS count FROM bucket_usage WHERE bucket = $1',
    [bucket],
  );
  return { bytes: rows[0]?.bytes ?? 0, count: rows[0]?.count ?? 0 };
}

/** The quota in a bucket's settings column (JSON text), or undefined when none is set (or both limits are -1). */
export function quotaOf(settings: string | null | undefined): BucketQuota | undefined {
  if (!settings) return undefined;
  const q = (JSON.parse(settings) as { quota?: Partial<BucketQuota> }).quota;
  if (!q) return undefined;
  const quota = { size: q.size ?? -1, count: q.count ?? -1 };
  return quota.size < 0 && quota.count < 0 ? undefined : quota;
}

/**
 * Inside a transaction holding `bucket`'s advisory lock exclusive when `quota` is set: runs `apply` (which adds or
 * replaces entries of `bucket`) under the quota. Throws OverQuota when the change is refused (the caller rolls
 * back). Expired entries of the bucket (expire_at ≤ `nowSec`, Unix seconds; on the expiry index) are removed first,
 * their blob references released into `freed`. Without a quota, just `apply`.
 */
export async function underQuota<T>(
  c: Queryable,
  bucket: string,
  quota: BucketQuota | undefined,
  nowSec: number,
  freed: string[],
  apply: () => Promise<T>,
): Promise<T> {
  if (!quota) return apply();
  const gone = await c.query<ObjectRow>(
    `DELETE FROM objects WHERE bucket = $1 AND key IN (${EXPIRED_IN_BUCKET} FOR UPDATE SKIP LOCKED) RETURNING *`,
    [bucket, nowSec],
  );
  // Released, or in a versioned bucket kept as noncurrent versions under delete markers (not counted either).
  await sweptEntries(c, gone.rows, nowSec, freed);
  const before = await bucketUsage(c, bucket);
  const out = await apply();
  const refusal = quotaRefusal(quota, before, await bucketUsage(c, bucket));
  if (refusal) throw new OverQuota(refusal);
  return out;
}
