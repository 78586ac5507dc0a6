/**
 * The locks an entry change takes at its start (db.ts module comment: bucket locks, then entry locks, each in byte
 * order, so no two transactions wait for each other in a cycle), and the locked read of an entry.
 *
 * `lockForChange` reads the buckets' settings, takes each bucket's advisory lock — exclusive for a bucket the change
 * may grow that has a quota (bucket-usage.ts), shared otherwise — then re-reads the settings under the locks.
 * Settings change only under the exclusive lock (updateBucketSettings), so the re-read is final; if it shows a
 * quota appearing since the first read, the shared lock is not enough and the transaction is retried from the start
 * (a serialization failure, SQLSTATE 40001, which PgDb.tx retries). Then it takes the entry locks.
 *
 * Entry rows are read `FOR UPDATE` (`lockedRow`): the sweeps, which take no advisory locks, delete rows they lock
 * with `FOR UPDATE SKIP LOCKED`, so a row is never changed by a sweep and a change at once.
 */
import { compareBytes, lockBuckets, lockEntries, type Queryable } from './db.js';
import { quotaOf } from './bucket-usage.js';
import type { ObjectRow } from './rows.js';
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

/** Thrown inside a transaction to have PgDb.tx run it again (a quota appeared between the read and the lock). */
function retry(): Error {
  return Object.assign(new Error('bucket quota set while taking locks'), { code: '40001' });
}

async function readSettings(c: Queryable, names: string[]): Promise<Map<string, string | null>> {
  const { rows } = await c.query<{ name: string; settings: string | null }>(
    'SELECT name, settings FROM buckets WHERE name = ANY($1::text[])',
    [names],
  );
  return new Map(rows.map((r) => [r.name, r.settings]));
}

/**
 * Takes the bucket locks of `buckets` (see the module comment) and the entry locks of `entries` ([bucket, key]) on
 * the transaction `c`; returns each bucket's settings as seen under its lock.
 */
export async function lockForChange(
  c: Queryable,
  buckets: BucketUse[],
  entries: Array<[bucket: string, key: string]>,
): Promise<Map<string, LockedBucket | undefined>> {
  const names = [...new Set(buckets.map((b) => b.name))];
  const grows = new Set(buckets.filter((b) => b.grows).map((b) => b.name));
  const first = await readSettings(c, names);
  const exclusive = new Set(names.filter((n) => grows.has(n) && quotaOf(first.get(n)) !== undefined));
  // One call per mode, in name order across both: lockBuckets sorts within a call, so merge the two ourselves.
  for (const name of [...names].sort(compareBytes)) {
    await lockBuckets(c, [name], exclusive.has(name) ? 'exclusive' : 'shared');
  }
  const settled = await readSettings(c, names);
  const out = new Map<string, LockedBucket | undefined>();
  for (const name of names) {
    if (!settled.has(name)) {
      out.set(name, undefined);
      continue;
    }
    const settings = settled.get(name) ?? null;
    const quota = grows.has(name) ? quotaOf(settings) : undefined;
    if (quota && !exclusive.has(name)) throw retry();
    out.set(name, quota ? { settings, quota } : { settings });
  }
  await lockEntries(c, entries);
  return out;
}

/** The entry row at (bucket, key), locked until the transaction ends, with every column. */
export async function lockedRow(c: Queryable, bucket: string, key: string): Promise<ObjectRow | undefined> {
  const { rows } = await c.query<ObjectRow>('SELECT * FROM objects WHERE bucket = $1 AND key = $2 FOR UPDATE', [bucket, key]);
  return rows[0];
}
