/**
 * The locks an entry change takes at its start (db.ts module comment: bucket locks, then entry locks, each in byte
 * order, so no two transactions wait for each other in a cycle), and the locked read of its buckets and entries.
 *
 * `lockForChange` costs two statements (each round trip to PostgreSQL is most of a small
 * change's time):
 * 1. every advisory lock at once (db.ts `takeLocks`, in order): each bucket's — exclusive for a bucket the change
 *    may grow that has a quota (bucket-usage.ts), shared otherwise — then each entry's (exclusive);
 * 2. then, in a later statement (a statement's snapshot is taken at its start: only one that starts after the entry
 *    locks are held sees the last change of their previous holder), the buckets' settings and the entry rows,
 *    the rows locked `FOR UPDATE`.
 * Which buckets have a quota is guessed before statement 1 from `QuotaHints`, what this process last saw of each
 * bucket. Settings change only under the exclusive lock (updateBucketSettings), so statement 2's settings are final;
 * when they show a quota the guess missed (set by another node since), the shared lock is not enough and the
 * transaction is retried from the start (a serialization failure, SQLSTATE 40001, which PgDb.tx retries) with the
 * hint now right. A wrong guess the other way (exclusive without a quota) is only stronger than needed; the hint is
 * corrected for the next change.
 *
 * Entry rows are read `FOR UPDATE`: the sweeps, which take no advisory locks, delete rows they lock with
 * `FOR UPDATE SKIP LOCKED`, so a row is never changed by a sweep and a change at once.
 */
import { bucketLockName, compareBytes, entryLockNames, takeLocks, type Queryable } from './db.js';
import { quotaOf } from './bucket-usage.js';
import { OBJECT_COLUMNS, type ObjectRow } from './rows.js';
import type { BucketQuota } from '../../ports/meta.js';

/** A bucket a change touches: `grows` when the change may add entries or bytes to it (quota applies). */
export interface BucketUse {
  name: string;
  grows: boolean;
}

/** What `lockForChange` learned of a bucket under its lock: undefined when missing. */
export interface LockedBucket {
  /** The settings column (JSON text, null when never set). */
  settings: string | null;
  /** The quota, for a bucket the change grows (undefined otherwise or when none is set). */
  quota?: BucketQuota;
}

/** What `lockForChange` read under the locks. */
export interface LockedChange {
  /** Each bucket of the change → its settings, undefined when the bucket does not exist. */
  buckets: Map<string, LockedBucket | undefined>;
  /** The entry row at (bucket, key), locked `FOR UPDATE`, with every column; undefined when absent. */
  row(bucket: string, key: string): ObjectRow | undefined;
}

/** The names of the buckets this process last saw with a quota (one set per store: every node keeps its own). */
export type QuotaHints = Set<string>;

/** Thrown inside a transaction to have PgDb.tx run it again (a quota the guess missed). */
function retry(): Error {
  return Object.assign(new Error('bucket quota set while taking locks'), { code: '40001' });
}

/**
 * The buckets' settings and the entry rows (locked), one row per entry asked: `b_found` false when the entry's
 * bucket is missing; the entry's columns null when it is absent. FOR UPDATE sits in the lateral subquery (it may
 * not name the nullable side of an outer join).
 */
const READ_LOCKED = `SELECT t.bucket AS t_bucket, t.key AS t_key, b.name IS NOT NULL AS b_found, b.settings AS b_settings,
    ${OBJECT_COLUMNS.split(', ').map((col) => `o.${col}`).join(', ')}
  FROM unnest($1::text[], $2::text[]) AS t(bucket, key)
    LEFT JOIN buckets b ON b.name = t.bucket
    LEFT JOIN LATERAL (SELECT * FROM objects WHERE objects.bucket = t.bucket AND objects.key = t.key FOR UPDATE) o ON true`;
/** READ_LOCKED runs as a named (prepared) statement; its columns are listed for that (see pg-meta-store.ts). */
const READ_LOCKED_NAME = 'granary_read_locked';

type ReadRow = { t_bucket: string; t_key: string; b_found: boolean; b_settings: string | null } & (ObjectRow | { [K in keyof ObjectRow]: null });

/**
 * Takes the bucket locks of `buckets` and the entry locks of `entries` ([bucket, key]; every bucket of `buckets`
 * has an entry there, and every entry's bucket is in `buckets`) on the transaction `c`, then reads the buckets' settings and the entry rows under them (see the module
 * comment). `hints` is read to choose the lock modes and updated from what was read.
 */
export async function lockForChange(
  c: Queryable,
  buckets: BucketUse[],
  entries: Array<[bucket: string, key: string]>,
  hints: QuotaHints,
): Promise<LockedChange> {
  const names = [...new Set(buckets.map((b) => b.name))].sort(compareBytes);
  const grows = new Set(buckets.filter((b) => b.grows).map((b) => b.name));
  const exclusive = new Set(names.filter((n) => grows.has(n) && hints.has(n)));
  await takeLocks(c, [
    ...names.map((n) => ({ name: bucketLockName(n), mode: exclusive.has(n) ? ('exclusive' as const) : ('shared' as const) })),
    ...entryLockNames(entries).map((name) => ({ name, mode: 'exclusive' as const })),
  ]);
  const { rows } = await c.query<ReadRow>({
    name: READ_LOCKED_NAME,
    text: READ_LOCKED,
    values: [entries.map(([b]) => b), entries.map(([, k]) => k)],
  });
  const settled = new Map<string, LockedBucket | undefined>();
  const found = new Map<string, ObjectRow>();
  let missed = false;
  for (const r of rows) {
    const bucket = r.t_bucket;
    if (r.bucket !== null) found.set(`${bucket}\n${r.t_key}`, r as ObjectRow);
    if (settled.has(bucket)) continue;
    if (!r.b_found) {
      settled.set(bucket, undefined);
      continue;
    }
    const quota = quotaOf(r.b_settings);
    if (quota) hints.add(bucket);
    else hints.delete(bucket);
    const applies = grows.has(bucket) ? quota : undefined;
    if (applies && !exclusive.has(bucket)) missed = true;
    settled.set(bucket, applies ? { settings: r.b_settings, quota: applies } : { settings: r.b_settings });
  }
  if (missed) throw retry();
  return { buckets: settled, row: (bucket, key) => found.get(`${bucket}\n${key}`) };
}
