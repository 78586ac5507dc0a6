/**
 * The ListObjectVersions walk (ports/versions.ts `VersionQuery`, docs/reference/versioning.md), written once over
 * the reads a store gives it (`VersionReads`): store/sqlite/versions.ts (its prepared statements) and
 * store/postgres/versions.ts (on one REPEATABLE READ snapshot).
 *
 * Order: keys in byte order (code-point order, `compareCodePoints`), each key's versions newest first — its current
 * entry (the `objects` row, which sorts after every one of its `object_versions` rows), then its version rows by
 * sort id descending. The walk reads key by key on both primary keys — the next current entry at or after a key,
 * the next key holding version rows — and each key's version rows in chunks of `VERSION_CHUNK`, so a page reads
 * only what it answers (never the whole bucket, nor every version of one key). With a delimiter, a key holding it
 * after the prefix yields its common prefix and the walk seeks past every key under it (one seek per prefix).
 */
import type { VersionPage, VersionQuery, VersionRecord } from '../../ports/versions.js';
import { compareCodePoints, successor, type Bound } from '../sqlite/list-query.js';

/** Versions of one key read per statement. */
export const VERSION_CHUNK = 256;

/**
 * The reads the walk needs (every one an index range of a primary key), answered as versions: a current entry with
 * `isLatest` true, version rows with `isLatest` false (the walk marks the one that is current).
 */
export interface VersionReads {
  /** The first current entry of `bucket` whose key is at or after `from` (≥, or > when not inclusive), or undefined. */
  currentFrom(bucket: string, from: Bound): Promise<VersionRecord | undefined>;
  /** The first key of `bucket` at or after `from` that has version rows (noncurrent versions, delete markers). */
  historyKeyFrom(bucket: string, from: Bound): Promise<string | undefined>;
  /** Up to `limit` version rows of the key with a sort id below `below`, newest first. */
  historyWithin(bucket: string, key: string, below: string, limit: number): Promise<VersionRecord[]>;
  /** A version of the key by wire id (`null` included), or undefined (ports/meta.ts `getVersion`). */
  get(bucket: string, key: string, versionId: string): Promise<VersionRecord | undefined>;
}

/** One page of ListObjectVersions: at most `q.limit` versions and common prefixes, `more` when the walk goes on. */
export async function versionPage(reads: VersionReads, q: VersionQuery): Promise<VersionPage> {
  const entries: VersionPage['entries'] = [];
  for await (const e of walk(reads, q)) {
    if (entries.length === q.limit) return { entries, more: true };
    entries.push(e);
  }
  return { entries, more: false };
}

/** The listing from the query's position on, lazily. */
async function* walk(reads: VersionReads, q: VersionQuery): AsyncGenerator<VersionPage['entries'][number]> {
  let from: Bound = { key: q.prefix, inclusive: true };
  if (q.after) {
    const next: Bound | undefined = q.after.isPrefix
      ? (() => {
          const s = successor(q.after.key);
          return s === undefined ? undefined : { key: s, inclusive: true };
        })()
      : { key: q.after.key, inclusive: false };
    if (next === undefined) return;
    if (compareCodePoints(next.key, from.key) >= 0) from = next;
    if (q.after.versionId !== undefined && !q.after.isPrefix) {
      const v = await reads.get(q.bucket, q.after.key, q.after.versionId);
      if (v) for await (const version of olderThan(reads, q.bucket, q.after.key, v.sortId)) yield { kind: 'version', version };
    }
  }
  for (;;) {
    const [cur, histKey] = await Promise.all([reads.currentFrom(q.bucket, from), reads.historyKeyFrom(q.bucket, from)]);
    const curKey = cur?.record.key;
    const key = curKey === undefined ? histKey : histKey === undefined || compareCodePoints(curKey, histKey) <= 0 ? curKey : histKey;
    if (key === undefined || !key.startsWith(q.prefix)) return;
    if (q.delimiter !== '') {
      const at = key.indexOf(q.delimiter, q.prefix.length);
      if (at >= 0) {
        const prefix = key.slice(0, at + q.delimiter.length);
        yield { kind: 'prefix', prefix };
        const next = successor(prefix);
        if (next === undefined) return;
        from = { key: next, inclusive: true };
        continue;
      }
    }
    let latest = true;
    let below = 'g'; // sorts after every hex id
    if (cur !== undefined && curKey === key) {
      below = cur.sortId;
      yield { kind: 'version', version: cur };
      latest = false;
    }
    if (histKey === key) {
      for await (const version of olderThan(reads, q.bucket, key, below)) {
        if (latest) version.isLatest = true;
        yield { kind: 'version', version };
        latest = false;
      }
    }
    from = { key, inclusive: false };
  }
}

/** The key's versions older than `sortId` (version rows), newest first, read in chunks. */
async function* olderThan(reads: VersionReads, bucket: string, key: string, sortId: string): AsyncGenerator<VersionRecord> {
  let below = sortId;
  for (;;) {
    const rows = await reads.historyWithin(bucket, key, below, VERSION_CHUNK);
    yield* rows;
    if (rows.length < VERSION_CHUNK) return;
    below = rows[rows.length - 1]!.sortId;
  }
}
