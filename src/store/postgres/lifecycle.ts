/**
 * Bucket lifecycle rules in the PostgreSQL MetaStore (the port of store/sqlite/lifecycle.ts): a bucket's rules come
 * from its settings document (`rulesFromSettings`, shared with SQLite), and the bounded deletion walk the expiry
 * sweeper uses for rules (`deleteUnderPrefix`). What a rule means is decided by buckets/lifecycle-rules.ts; here it
 * is only "keys under a prefix, put before a time".
 *
 * The walk reads the (bucket, key) primary key over the key ranges of the prefix minus the excluded longer prefixes
 * (`rangesUnder`: each excluded range is skipped with one seek), in key order, at most `scan` keys per call, one
 * transaction per call. It takes no advisory locks: the rows it deletes are taken with `FOR UPDATE SKIP LOCKED` and
 * re-checked (put_time still below the cutoff), so an entry being changed right now is left for the next walk and
 * one replaced since it was examined is kept. In a versioned bucket a deleted entry becomes a noncurrent version
 * under a delete marker (versions.ts `sweptEntries`).
 */
import type { LifecycleRule } from '../../ports/meta.js';
import { rangesUnder, rulesFromSettings as sqliteRules } from '../sqlite/lifecycle.js';
import { compareCodePoints } from '../sqlite/list-query.js';
import type { PgDb, Queryable } from './db.js';
import type { ObjectRow } from './rows.js';
import { sweptEntries } from './versions.js';

export { rangesUnder };

/** The lifecycle rules in a bucket's settings column (NULL = none); parsed documents are cached. */
export function rulesFromSettings(settings: string | null | undefined): LifecycleRule[] | undefined {
  return sqliteRules(settings);
}

/** What one step of the walk did; `next` is the key to resume after, undefined when the walk is over. */
export interface SweepStep {
  deleted: number;
  freedBlobs: string[];
  next?: string;
}

interface Row {
  key: string;
  put_time: bigint;
}

/** Up to `limit` keys of `bucket` from `start` (inclusive or not), below `to` when given, in key order. */
async function readRange(c: Queryable, bucket: string, start: string, inclusive: boolean, to: string | undefined, limit: number): Promise<Row[]> {
  const op = inclusive ? '>=' : '>';
  const sql = `SELECT key, put_time FROM objects WHERE bucket = $1 AND key ${op} $2${to !== undefined ? ' AND key < $4' : ''}
    ORDER BY key LIMIT $3`;
  const { rows } = await c.query<Row>(sql, to !== undefined ? [bucket, start, limit, to] : [bucket, start, limit]);
  return rows;
}

/**
 * One step of the deletion walk: examines at most `scan` keys of `bucket` starting with `sel.prefix` (none of
 * `sel.exclude`) after the key `after` (undefined = from the start), and deletes those whose put_time (100-ns units)
 * is below `sel.putTimeBefore`, releasing their blobs — all in one transaction.
 */
export async function deleteUnderPrefix(
  db: PgDb,
  bucket: string,
  sel: { prefix: string; exclude: readonly string[]; putTimeBefore: bigint },
  after: string | undefined,
  scan: number,
): Promise<SweepStep> {
  return db.tx(async (c): Promise<SweepStep> => {
    const doomed: string[] = [];
    let examined = 0;
    let next: string | undefined;
    for (const range of rangesUnder(sel.prefix, sel.exclude)) {
      if (after !== undefined && range.to !== undefined && compareCodePoints(after, range.to) >= 0) continue;
      const resume = after !== undefined && compareCodePoints(after, range.from) >= 0;
      const rows = await readRange(c, bucket, resume ? (after as string) : range.from, !resume, range.to, scan - examined);
      let past = false;
      for (const row of rows) {
        // Without an upper bound (a prefix made of U+10FFFF) the range may run past the prefix: the end.
        if (!row.key.startsWith(sel.prefix)) {
          past = true;
          break;
        }
        if (row.put_time < sel.putTimeBefore) doomed.push(row.key);
      }
      if (past) break;
      examined += rows.length;
      if (examined >= scan) {
        next = (rows[rows.length - 1] as Row).key;
        break;
      }
    }
    const freed: string[] = [];
    if (doomed.length === 0) return next !== undefined ? { deleted: 0, freedBlobs: freed, next } : { deleted: 0, freedBlobs: freed };
    const gone = await c.query<ObjectRow>(
      `DELETE FROM objects WHERE bucket = $1 AND key IN (
         SELECT key FROM objects WHERE bucket = $1 AND key = ANY($2::text[]) AND put_time < $3 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [bucket, doomed, sel.putTimeBefore.toString()],
    );
    // Released, or in a versioned bucket kept as noncurrent versions under delete markers (versions.ts).
    await sweptEntries(c, gone.rows, Math.floor(Date.now() / 1000), freed);
    const step: SweepStep = { deleted: gone.rows.length, freedBlobs: freed };
    if (next !== undefined) step.next = next;
    return step;
  });
}
