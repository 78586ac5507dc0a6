/**
 * Per-bucket usage counters and the quota guard of the SQLite MetaStore.
 *
 * `bucket_usage (bucket, bytes, count)` holds, for every bucket, the sum of its entries' `fsize` (bytes) and their
 * number. Triggers on `objects` keep it exact in the very transaction that inserts, replaces (an upsert changing
 * `fsize`), moves or deletes an entry — commitPut, copy, move, delete, updateObject, the expiry sweep, the removal
 * of an expired entry found under a key, and any bulk insert (bench seeding, tests) — so no code path can forget
 * it. Triggers on `buckets` create the row of a new bucket and drop the row of a dropped one.
 *
 * `migrateBucketUsage` brings a data dir of an earlier version up: in one write transaction it creates the table
 * and the triggers and computes the counters of every bucket that has no row yet (one pass over that bucket's
 * entries, on the (bucket, key) primary key). Idempotent and cheap at every later open (no bucket lacks a row).
 *
 * `QuotaGuard.run` enforces `settings.quota` (docs/development/kodo-protocol.md §8.6) inside a commit transaction: it removes the
 * bucket's expired entries first (they are gone for Kodo, so they must not hold room), measures the counters,
 * applies the change, measures again, and throws `OverQuota` when store/quota-rule.ts refuses the change; the caller's
 * transaction then rolls back, so nothing of the change is ever visible.
 */
import type Database from 'better-sqlite3';
import type { BucketQuota, BucketUsage, QuotaRefusal } from '../../ports/meta.js';
import { quotaRefusal } from '../quota-rule.js';

/** The table, its triggers and the counters of buckets without a row (see the module comment). */
const USAGE_DDL = `
CREATE TABLE IF NOT EXISTS bucket_usage (
  bucket TEXT PRIMARY KEY,
  bytes  INTEGER NOT NULL,
  count  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO bucket_usage (bucket, bytes, count)
  SELECT b.name, COALESCE(SUM(o.fsize), 0), COUNT(o.key)
  FROM buckets b LEFT JOIN objects o ON o.bucket = b.name
  WHERE b.name NOT IN (SELECT bucket FROM bucket_usage)
  GROUP BY b.name;

CREATE TRIGGER IF NOT EXISTS bucket_usage_bucket_insert AFTER INSERT ON buckets BEGIN
  INSERT OR IGNORE INTO bucket_usage (bucket, bytes, count) VALUES (new.name, 0, 0);
END;
CREATE TRIGGER IF NOT EXISTS bucket_usage_bucket_delete AFTER DELETE ON buckets BEGIN
  DELETE FROM bucket_usage WHERE bucket = old.name;
END;
CREATE TRIGGER IF NOT EXISTS bucket_usage_object_insert AFTER INSERT ON objects BEGIN
  INSERT INTO bucket_usage (bucket, bytes, count) VALUES (new.bucket, new.fsize, 1)
    ON CONFLICT (bucket) DO UPDATE SET bytes = bytes + excluded.bytes, count = count + 1;
END;
CREATE TRIGGER IF NOT EXISTS bucket_usage_object_delete AFTER DELETE ON objects BEGIN
  UPDATE bucket_usage SET bytes = bytes - old.fsize, count = count - 1 WHERE bucket = old.bucket;
END;
CREATE TRIGGER IF NOT EXISTS bucket_usage_object_update AFTER UPDATE OF bucket, fsize ON objects
  WHEN old.bucket IS NOT new.bucket OR old.fsize IS NOT new.fsize BEGIN
  UPDATE bucket_usage SET bytes = bytes - old.fsize, count = count - 1 WHERE bucket = old.bucket;
  INSERT INTO bucket_usage (bucket, bytes, count) VALUES (new.bucket, new.fsize, 1)
    ON CONFLICT (bucket) DO UPDATE SET bytes = bytes + excluded.bytes, count = count + 1;
END;
`;

/**
 * Expired entries of a bucket (`?` now in Unix seconds, then the bucket), on the expiry index: few rows, since the
 * sweeper removes them every minute. Without `INDEXED BY` the planner would walk the bucket's whole key range.
 */
export const EXPIRED_IN_BUCKET =
  'SELECT key, blob_id FROM objects INDEXED BY objects_expire WHERE expire_at IS NOT NULL AND expire_at <= ? AND bucket = ?';

/** Creates the counters and their triggers, computing the counters of existing buckets (idempotent, one transaction). */
export function migrateBucketUsage(db: Database.Database): void {
  // IMMEDIATE: no other connection writes between the computation and the triggers taking over.
  db.transaction(() => db.exec(USAGE_DDL)).immediate();
}

/** Thrown inside a transaction to roll it back when a change would pass the bucket's quota. */
export class OverQuota extends Error {
  constructor(readonly refusal: QuotaRefusal) {
    super(`bucket quota exceeded (${refusal.limit} ${refusal.max})`);
    this.name = 'OverQuota';
  }
}

export class QuotaGuard {
  private readonly usage_;
  private readonly quota_;
  private readonly expired;

  /**
   * `remove` takes an expired entry away inside the transaction (the store's expiry: in a versioned bucket it
   * becomes a noncurrent version under a delete marker, versions.ts), releasing what it frees into `freed`.
   */
  constructor(
    db: Database.Database,
    private readonly remove: (bucket: string, key: string, blobId: string, nowSec: number, freed: string[]) => void,
  ) {
    this.usage_ = db.prepare('SELECT bytes, count FROM bucket_usage WHERE bucket = ?');
    this.quota_ = db.prepare("SELECT json_extract(settings, '$.quota') AS quota FROM buckets WHERE name = ?");
    this.expired = db.prepare(EXPIRED_IN_BUCKET);
  }

  /** The counters of `bucket` (zeros when it has none; the bucket's existence is the caller's to check). */
  usage(bucket: string): BucketUsage {
    const row = this.usage_.get(bucket) as { bytes: number; count: number } | undefined;
    return row ? { bytes: row.bytes, count: row.count } : { bytes: 0, count: 0 };
  }

  /**
   * Inside a transaction: runs `apply` (which adds or replaces entries of `bucket`) under the bucket's quota.
   * Throws OverQuota when the change is refused (the caller rolls back). Expired entries of the bucket are
   * removed first, their blob references released into `freed`.
   */
  run<T>(bucket: string, nowSec: number, freed: string[], apply: () => T): T {
    const quota = this.quotaOf(bucket);
    if (!quota) return apply();
    for (const row of this.expired.all(nowSec, bucket) as { key: string; blob_id: string }[]) {
      this.remove(bucket, row.key, row.blob_id, nowSec, freed);
    }
    const before = this.usage(bucket);
    const out = apply();
    const refusal = quotaRefusal(quota, before, this.usage(bucket));
    if (refusal) throw new OverQuota(refusal);
    return out;
  }

  /** The bucket's quota, or undefined when none is set (or both limits are -1). */
  private quotaOf(bucket: string): BucketQuota | undefined {
    const text = (this.quota_.get(bucket) as { quota: string | null } | undefined)?.quota;
    if (!text) return undefined;
    const q = JSON.parse(text) as Partial<BucketQuota>;
    const quota = { size: q.size ?? -1, count: q.count ?? -1 };
    return quota.size < 0 && quota.count < 0 ? undefined : quota;
  }
}
