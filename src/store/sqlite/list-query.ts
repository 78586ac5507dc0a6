/**
 * The listing query of the SQLite MetaStore (docs/development/kodo-protocol.md §8.3), served from the (bucket, key) primary key.
 *
 * Keys are TEXT with the BINARY collation, so SQLite orders them by their UTF-8 bytes, which is code-point order.
 * Every read is an index range `bucket = ? AND key >(=) ? [AND key < ?] ORDER BY key LIMIT ?`:
 * - the lower bound is the resume point (`after` a key: `key > k`; `after` a common prefix: `key >= successor(p)`)
 *   or the prefix itself;
 * - the upper bound is `successor(prefix)` (every key starting with the prefix sorts below it);
 * - with a delimiter, the first key `prefix + X + delimiter + …` yields the common prefix `prefix + X + delimiter`,
 *   and the next read seeks straight to `successor(prefix + X + delimiter)`: a directory of any size costs one
 *   index seek, never a walk over its keys.
 * A page runs in one read transaction (a consistent snapshot; also ~2× cheaper per statement than autocommit).
 * Without a delimiter, whole rows are read in batches of what the page still needs (+1 to learn whether more
 * follows). With one, the walk reads keys only (cheap rows), in batches that start at one key after each seek and
 * double while keys come back as items, so a seek never fetches keys of the directory it skips beyond what was
 * already read; each run of plain keys is then read whole with one `key BETWEEN first AND last` read.
 * Expired entries (expire_at ≤ nowSec, or deleted by the bucket's lifecycle rules given their key and put_time) are
 * skipped; the expiry sweeper deletes them for real. Items carry the rules' dates (`applyRules`).
 */
import type Database from 'better-sqlite3';
import { applyRules, expiredByRules } from '../../buckets/lifecycle-rules.js';
import type { LifecycleRule, ListPage, ListQuery, ObjectRecord } from '../../ports/meta.js';
import { toRecord, type ObjectRow } from './rows.js';

const MAX_CODE_POINT = 0x10ffff;

/**
 * The smallest string greater than every string that starts with `s`, in code-point order (= UTF-8 byte order):
 * `s` with its last code point incremented (U+D7FF is followed by U+E000: surrogates are not code points of valid
 * text), after dropping trailing U+10FFFF code points, which cannot be incremented. `undefined` when there is none
 * (`s` empty or made only of U+10FFFF): then every string ≥ `s` starts with `s`.
 */
export function successor(s: string): string | undefined {
  // Fast path: a last code unit below U+D7FF (not a surrogate, not U+D7FF) is a code point of its own.
  const lastUnit = s.charCodeAt(s.length - 1);
  if (lastUnit < 0xd7ff) return s.slice(0, -1) + String.fromCharCode(lastUnit + 1);
  const cps = Array.from(s, (c) => c.codePointAt(0) ?? 0);
  while (cps.length > 0) {
    const last = cps.pop() ?? 0;
    if (last < MAX_CODE_POINT) {
      cps.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...cps);
    }
  }
  return undefined;
}

/** A UTF-16 code unit mapped so that comparing mapped units compares code points (surrogates above U+FFFF). */
function cpUnit(u: number): number {
  if (u < 0xd800) return u;
  return u >= 0xe000 ? u - 0x800 : u + 0x2000;
}

/**
 * Compares two strings in code-point order (the order of their UTF-8 bytes, which is SQLite's BINARY order),
 * unlike `<`, which compares UTF-16 code units. Negative, zero or positive.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return cpUnit(x) - cpUnit(y);
  }
  return a.length - b.length;
}

/** Where a read starts: at `key` (inclusive) or just after it. */
export interface Bound {
  key: string;
  inclusive: boolean;
}

/** A key-only row (the delimiter walk). */
interface KeyRow {
  key: string;
  expire_at: bigint | null;
  put_time: bigint;
}

/** Range reads over the (bucket, key) primary key: `key >= ?` or `key > ?`, with or without `key < upper`. */
interface RangeReads {
  ge: Database.Statement;
  gt: Database.Statement;
  geBelow: Database.Statement;
  gtBelow: Database.Statement;
}

interface Statements {
  /** Whole rows. */
  rows: RangeReads;
  /** Keys, expiry and put time only: cheap to step through while rolling up directories. */
  keys: RangeReads;
  /** Whole rows with `lo <= key <= hi` (a run of items found by the key walk). */
  between: Database.Statement;
  /** Runs a listing inside one read transaction. */
  inTransaction: (fn: () => ListPage) => ListPage;
}

const cache = new WeakMap<Database.Database, Statements>();

function statements(db: Database.Database): Statements {
  let st = cache.get(db);
  if (!st) {
    const reads = (columns: string): RangeReads => {
      const q = (op: string, below: boolean): Database.Statement =>
        db
          .prepare(
            `SELECT ${columns} FROM objects WHERE bucket = ? AND key ${op} ?${below ? ' AND key < ?' : ''} ORDER BY key LIMIT ?`,
          )
          .safeIntegers(true);
      return { ge: q('>=', false), gt: q('>', false), geBelow: q('>=', true), gtBelow: q('>', true) };
    };
    st = {
      rows: reads('*'),
      keys: reads('key, expire_at, put_time'),
      between: db
        .prepare('SELECT * FROM objects WHERE bucket = ? AND key >= ? AND key <= ? ORDER BY key')
        .safeIntegers(true),
      inTransaction: db.transaction((fn: () => ListPage) => fn()),
    };
    cache.set(db, st);
  }
  return st;
}

/** Up to `limit` rows of `bucket` from `from`, below `upper` when given, in key order. */
function read<T>(r: RangeReads, bucket: string, from: Bound, upper: string | undefined, limit: number): T[] {
  if (upper !== undefined) return (from.inclusive ? r.geBelow : r.gtBelow).all(bucket, from.key, upper, limit) as T[];
  return (from.inclusive ? r.ge : r.gt).all(bucket, from.key, limit) as T[];
}

/**
 * The first read position of a query, or undefined when nothing can follow (resume point past the end). Shared by
 * the PostgreSQL listing (store/postgres/list-query.ts).
 */
export function startBound(query: ListQuery): Bound | undefined {
  const atPrefix: Bound = { key: query.prefix, inclusive: true };
  const after = query.after;
  if (!after) return atPrefix;
  let bound: Bound;
  if (after.isPrefix) {
    const next = successor(after.key);
    if (next === undefined) return undefined;
    bound = { key: next, inclusive: true };
  } else {
    bound = { key: after.key, inclusive: false };
  }
  // A resume point before the prefix (a marker of another listing) starts at the prefix.
  return compareCodePoints(bound.key, query.prefix) < 0 ? atPrefix : bound;
}

/** Largest batch read at once (rows), whatever the page size. */
export const MAX_BATCH = 1001;

/** Shared state of one page being built. */
interface Cursor {
  st: Statements;
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
function listFlat(c: Cursor): void {
  const { bucket, prefix } = c.query;
  let from = startBound(c.query);
  while (from && c.entries.length < c.want) {
    const size = Math.min(c.want - c.entries.length, MAX_BATCH);
    const rows = read<ObjectRow>(c.st.rows, bucket, from, c.upper, size);
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
function listRolledUp(c: Cursor): void {
  const { bucket, prefix, delimiter } = c.query;
  let from = startBound(c.query);
  let batch = 1;
  // Live item keys of the current run (consecutive in the index: no key between them is rolled up).
  const run: string[] = [];
  const flushRun = (): void => {
    if (run.length === 0) return;
    const rows = c.st.between.all(bucket, run[0], run[run.length - 1]) as ObjectRow[];
    for (const row of rows) if (!expired(c, row)) c.entries.push(item(c, row));
    run.length = 0;
  };
  const full = (): boolean => c.entries.length + run.length >= c.want;

  while (from && !full()) {
    const size = Math.min(batch, c.want - c.entries.length - run.length, MAX_BATCH);
    const keys = read<KeyRow>(c.st.keys, bucket, from, c.upper, size);
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
      flushRun();
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
  flushRun();
}

/**
 * One page of a listing (docs/development/kodo-protocol.md §8.3): up to `query.limit` entries — items and common prefixes together,
 * in byte-lexicographic key order — starting after `query.after`, restricted to keys starting with `query.prefix`,
 * with keys rolled up at `query.delimiter` into common prefixes (each emitted once). Entries expired at
 * `query.nowSec` (Unix seconds) — by their own expire_at or by the bucket's lifecycle `rules` — are skipped; items
 * carry the rules' dates. `more` is true when at least one more entry follows the page.
 * Cost: index range reads only, in one read transaction (a consistent snapshot); one seek per common prefix
 * whatever the number of keys under it.
 */
export function listPage(db: Database.Database, query: ListQuery, rules?: readonly LifecycleRule[]): ListPage {
  const st = statements(db);
  const limit = Math.max(1, Math.floor(query.limit));
  const c: Cursor = {
    st,
    query,
    want: limit + 1,
    upper: query.prefix === '' ? undefined : successor(query.prefix),
    nowBig: BigInt(Math.floor(query.nowSec)),
    rules,
    entries: [],
  };
  st.inTransaction(() => {
    if (query.delimiter) listRolledUp(c);
    else listFlat(c);
    return { entries: c.entries, more: false };
  });
  const more = c.entries.length > limit;
  if (more) c.entries.length = limit;
  return { entries: c.entries, more };
}
