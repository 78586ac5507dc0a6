/**
 * Bucket lifecycle rules in the SQLite MetaStore: reading a bucket's rules from its settings document, and the
 * bounded deletion walk the expiry sweeper uses for rules (`deleteUnderPrefix`). What a rule means is decided by
 * buckets/lifecycle-rules.ts; here it is only "keys under a prefix, put before a time".
 *
 * The walk reads the (bucket, key) primary key — the `objects` table itself (WITHOUT ROWID), so `put_time` comes
 * with each key at no extra cost — over the key ranges of the prefix minus the excluded longer prefixes (each
 * excluded range is skipped with one seek), in key order, at most `scan` keys per call, one transaction per call.
 */
import type Database from 'better-sqlite3';
import type { BucketSettings, LifecycleRule } from '../../ports/meta.js';
import { compareCodePoints, successor } from './list-query.js';

/** Parsed rules by settings text (the same few documents are read over and over). */
const parsed = new Map<string, LifecycleRule[] | undefined>();
const PARSED_MAX = 256;

/** The lifecycle rules in a bucket's settings column (NULL = none). */
export function rulesFromSettings(settings: string | null | undefined): LifecycleRule[] | undefined {
  if (!settings) return undefined;
  if (parsed.has(settings)) return parsed.get(settings);
  const rules = (JSON.parse(settings) as BucketSettings).lifecycleRules;
  const out = rules && rules.length > 0 ? rules : undefined;
  if (parsed.size >= PARSED_MAX) parsed.clear();
  parsed.set(settings, out);
  return out;
}

/** A key range [from, to) (`to` undefined = to the end of the bucket). */
interface KeyRange {
  from: string;
  to: string | undefined;
}

/**
 * The key ranges of the keys starting with `prefix` but with none of `exclude`, in key order: the prefix's range
 * with the range of each outermost excluded prefix cut out.
 */
export function rangesUnder(prefix: string, exclude: readonly string[]): KeyRange[] {
  const cuts = exclude.filter((e) => e.length > prefix.length && e.startsWith(prefix)).sort(compareCodePoints);
  const out: KeyRange[] = [];
  let from: string | undefined = prefix;
  let last: string | undefined;
  for (const cut of cuts) {
    if (last !== undefined && cut.startsWith(last)) continue; // inside a range already cut out
    last = cut;
    if (compareCodePoints(from, cut) < 0) out.push({ from, to: cut });
    from = successor(cut);
    if (from === undefined) return out;
  }
  out.push({ from, to: successor(prefix) });
  return out;
}

interface Row {
  key: string;
  put_time: bigint;
  blob_id: string;
}

/** Range reads of (key, put_time, blob_id): from a key (inclusive or not), below an upper key or not. */
interface Reads {
  ge: Database.Statement;
  gt: Database.Statement;
  geBelow: Database.Statement;
  gtBelow: Database.Statement;
}

const cache = new WeakMap<Database.Database, Reads>();

function reads(db: Database.Database): Reads {
  let r = cache.get(db);
  if (!r) {
    const q = (op: string, below: boolean): Database.Statement =>
      db
        .prepare(
          `SELECT key, put_time, blob_id FROM objects WHERE bucket = ? AND key ${op} ?${below ? ' AND key < ?' : ''} ORDER BY key LIMIT ?`,
        )
        .safeIntegers(true);
    r = {
      ge: q('>=', false),
      gt: q('>', false),
      geBelow: q('>=', true),
      gtBelow: q('>', true),
    };
    cache.set(db, r);
  }
  return r;
}

/** What one step of the walk did; `next` is the key to resume after, undefined when the walk is over. */
export interface SweepStep {
  deleted: number;
  freedBlobs: string[];
  next?: string;
}

/**
 * One step of the deletion walk: examines at most `scan` keys of `bucket` starting with `sel.prefix` (none of
 * `sel.exclude`) after the key `after` (undefined = from the start), and deletes those whose put_time (100-ns units)
 * is below `sel.putTimeBefore` through `remove` (the store's expiry: the row goes and its blob is released, or in a
 * versioned bucket it becomes a noncurrent version under a delete marker) — all in one transaction.
 */
export function deleteUnderPrefix(
  db: Database.Database,
  bucket: string,
  sel: { prefix: string; exclude: readonly string[]; putTimeBefore: bigint },
  after: string | undefined,
  scan: number,
  remove: (key: string, blobId: string, freed: string[]) => void,
): SweepStep {
  const r = reads(db);
  return db.transaction((): SweepStep => {
    const freed: string[] = [];
    let deleted = 0;
    let examined = 0;
    for (const range of rangesUnder(sel.prefix, sel.exclude)) {
      if (after !== undefined && range.to !== undefined && compareCodePoints(after, range.to) >= 0) continue;
      const resume = after !== undefined && compareCodePoints(after, range.from) >= 0;
      const start = resume ? (after as string) : range.from;
      const limit = scan - examined;
      const rows = (
        range.to === undefined
          ? (resume ? r.gt : r.ge).all(bucket, start, limit)
          : (resume ? r.gtBelow : r.geBelow).all(bucket, start, range.to, limit)
      ) as Row[];
      for (const row of rows) {
        // Without an upper bound (a prefix made of U+10FFFF) the range may run past the prefix: the end.
        if (!row.key.startsWith(sel.prefix)) return { deleted, freedBlobs: freed };
        if (row.put_time < sel.putTimeBefore) {
          remove(row.key, row.blob_id, freed);
          deleted++;
        }
      }
      examined += rows.length;
      if (examined >= scan) return { deleted, freedBlobs: freed, next: (rows[rows.length - 1] as Row).key };
    }
    return { deleted, freedBlobs: freed };
  }).immediate();
}
