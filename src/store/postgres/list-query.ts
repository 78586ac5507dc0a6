/**
 * The listing query of the PostgreSQL MetaStore (docs/development/kodo-protocol.md §8.3; the port of store/sqlite/list-query.ts), served
 * from the (bucket, key) primary key.
 *
 * Keys are `text COLLATE "C"`, so PostgreSQL orders them by their UTF-8 bytes, which is code-point order (the order
 * of SQLite's BINARY collation; `successor` and `compareCodePoints` are shared with it). Every read is an index range
 * `bucket = $1 AND key >(=) $2 [AND key < $4] ORDER BY key LIMIT $3`:
 * - the lower bound is the resume point (`after` a key: `key > k`; `after` a common prefix: `key >= successor(p)`)
 *   or the prefix itself;
 * - the upper bound is `successor(prefix)` (every key starting with the prefix sorts below it);
 * - with a delimiter, the first key `prefix + X + delimiter + …` yields the common prefix `prefix + X + delimiter`,
 *   and the next read seeks straight to `successor(prefix + X + delimiter)`: a directory of any size costs one
 *   index seek, never a walk over its keys.
 * A page runs in one REPEATABLE READ, READ ONLY transaction (a consistent snapshot across its reads; such a
 * transaction never fails to serialize). Without a delimiter, whole rows are read in batches of what the page still
 * needs (+1 to learn whether more follows). With one, the walk reads keys only (cheap rows), in batches that start
 * at one key after each seek and double while keys come back as items, so a seek never fetches keys of the
 * directory it skips beyond what was already read; each run of plain keys is then read whole with one
 * `key BETWEEN first AND last` read.
 * Expired entries (expire_at ≤ nowSec, or deleted by the bucket's lifecycle rules given their key and put_time) are
 * skipped; the expiry sweeper deletes them for real. Items carry the rules' dates (`applyRules`).
 */
import { applyRules, expiredByRules } from '../../buckets/lifecycle-rules.js';
import type { LifecycleRule, ListPage, ListQuery, ObjectRecord } from '../../ports/meta.js';
import { MAX_BATCH, startBound, successor, type Bound } from '../sqlite/list-query.js';
import type { PgDb, Queryable } from './db.js';
import { rulesFromSettings } from './lifecycle.js';
import { toRecord, type ObjectRow } from './rows.js';

/** A key-only row (the delimiter walk). */
interface KeyRow {
  key: string;
  expire_at: bigint | null;
  put_time: bigint;
}

/** Up to `limit` rows (`columns`) of `bucket` from `from`, below `upper` when given, in key order. */
async function read<T>(
  c: Queryable,
  columns: string,
  bucket: string,
  from: Bound,
  upper: string | undefined,
  limit: number,
): Promise<T[]> {
  const op = from.inclusive ? '>=' : '>';
  const below = upper !== undefined ? ' AND key < $4' : '';
  const sql = `SELECT ${columns} FROM objects WHERE bucket = $1 AND key ${op} $2${below} ORDER BY key LIMIT $3`;
  const { rows } = await c.query(sql, upper !== undefined ? [bucket, from.key, limit, upper] : [bucket, from.key, limit]);
  return rows as T[];
}

/** Shared state of one page being built. */
interface Cursor {
  c: Queryable;
  query: ListQuery;
  /** Entries wanted: the page size + 1 (the extra one answers `more` and is dropped). */
  want: number;
  upper: string | undefined;
  nowBig: bigint;
  /** The bucket's lifecycle rules (undefined = none). */
  rules: readonly LifecycleRule[] | undefined;
  entries: ListPage['entries'];
}

/** Whether a row is expired: its own expire_at passed, or its lifecycle rule deleted it. */
const expired = (c: Cursor, row: { key: string; expire_at: bigint | null; put_time: bigint }): boolean =>
  (row.expire_at !== null && row.expire_at <= c.nowBig) || expiredByRules(c.rules, row.key, row.put_time, c.query.nowSec);

/** A listed item: the row as a record with its lifecycle rule's dates. */
const item = (c: Cursor, row: ObjectRow): { kind: 'item'; item: ObjectRecord } => ({ kind: 'item', item: applyRules(toRecord(row), c.rules) });

/** Without a delimiter: whole rows, in batches of what the page still needs. */
async function listFlat(c: Cursor): Promise<void> {
  const { bucket, prefix } = c.query;
  let from = startBound(c.query);
  while (from && c.entries.length < c.want) {
    const size = Math.min(c.want - c.entries.length, MAX_BATCH);
    const rows = await read<ObjectRow>(c.c, '*', bucket, from, c.upper, size);
    for (const row of rows) {
      // Only without an upper bound (a prefix made of U+10FFFF) can a row fall outside the prefix: the end.
      if (!row.key.startsWith(prefix)) return;
      from = { key: row.key, inclusive: false };
      if (!expired(c, row)) c.entries.push(item(c, row));
    }
    if (rows.length < size) return; // the range holds nothing more
  }
}

/**
 * With a delimiter: a walk over keys only. A key with the delimiter after the prefix yields its common prefix and
 * the walk seeks to the successor of that prefix (one index seek, whatever the number of keys under it); runs of
 * plain keys are then read whole with one `between` read each. Batches start at one key after a seek and double
 * while keys come back as items.
 */
async function listRolledUp(c: Cursor): Promise<void> {
  const { bucket, prefix, delimiter } = c.query;
  let from = startBound(c.query);
  let batch = 1;
  // Live item keys of the current run (consecutive in the index: no key between them is rolled up).
  const run: string[] = [];
  const flushRun = async (): Promise<void> => {
    if (run.length === 0) return;
    const { rows } = await c.c.query<ObjectRow>(
      'SELECT * FROM objects WHERE bucket = $1 AND key >= $2 AND key <= $3 ORDER BY key',
      [bucket, run[0], run[run.length - 1]],
    );
    for (const row of rows) if (!expired(c, row)) c.entries.push(item(c, row));
    run.length = 0;
  };
  const full = (): boolean => c.entries.length + run.length >= c.want;

  while (from && !full()) {
    const size = Math.min(batch, c.want - c.entries.length - run.length, MAX_BATCH);
    const keys = await read<KeyRow>(c.c, 'key, expire_at, put_time', bucket, from, c.upper, size);
    let i = 0;
    let sought = false;
    while (i < keys.length && !full()) {
      const row = keys[i] as KeyRow;
      const key = row.key;
      if (!key.startsWith(prefix)) {
        from = undefined; // past the prefix (only possible without an upper bound)
        break;
      }
      i++;
      if (expired(c, row)) {
        from = { key, inclusive: false };
        continue;
      }
      const cut = key.indexOf(delimiter, prefix.length);
      if (cut < 0) {
        run.push(key);
        from = { key, inclusive: false };
        continue;
      }
      const common = key.slice(0, cut + delimiter.length);
      await flushRun();
      c.entries.push({ kind: 'prefix', prefix: common });
      const next = successor(common);
      from = next === undefined ? undefined : { key: next, inclusive: true };
      if (!from) break;
      // Keys of this batch under the common prefix form a run right after it: skip them in memory.
      while (i < keys.length && (keys[i] as KeyRow).key.startsWith(common)) i++;
      sought = i >= keys.length;
    }
    if (keys.length < size && i >= keys.length) break; // the range holds nothing more
    batch = sought ? 1 : batch * 2;
  }
  await flushRun();
}

/**
 * One page of a listing (docs/development/kodo-protocol.md §8.3) on `c` (a connection inside a transaction: `listPage` opens the
 * snapshot): up to `query.limit` entries — items and common prefixes together, in byte-lexicographic key order —
 * starting after `query.after`, restricted to keys starting with `query.prefix`, rolled up at `query.delimiter`.
 * Entries expired at `query.nowSec` (Unix seconds) are skipped; items carry the rules' dates. `more` is true when at
 * least one more entry follows the page.
 */
export async function listPageOn(c: Queryable, query: ListQuery, rules?: readonly LifecycleRule[]): Promise<ListPage> {
  const limit = Math.max(1, Math.floor(query.limit));
  const cur: Cursor = {
    c,
    query,
    want: limit + 1,
    upper: query.prefix === '' ? undefined : successor(query.prefix),
    nowBig: BigInt(Math.floor(query.nowSec)),
    rules,
    entries: [],
  };
  if (query.delimiter) await listRolledUp(cur);
  else await listFlat(cur);
  const more = cur.entries.length > limit;
  if (more) cur.entries.length = limit;
  return { entries: cur.entries, more };
}

/**
 * One page of a listing in one REPEATABLE READ, READ ONLY transaction of `db` (a consistent snapshot), with the
 * bucket's lifecycle rules read in the same snapshot. See `listPageOn`.
 * Cost: index range reads only; one seek per common prefix whatever the number of keys under it.
 */
export async function listPage(db: Pick<PgDb, 'tx'>, query: ListQuery): Promise<ListPage> {
  return db.tx(async (c) => {
    await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    const b = await c.query<{ settings: string | null }>('SELECT settings FROM buckets WHERE name = $1', [query.bucket]);
    return listPageOn(c, query, rulesFromSettings(b.rows[0]?.settings));
  });
}
