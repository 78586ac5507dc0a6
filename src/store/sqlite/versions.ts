/**
 * Bucket versioning in the SQLite MetaStore (ports/versions.ts, docs/reference/versioning.md).
 *
 * The `objects` table keeps exactly what it kept before: a key's current version when that is an entry. Every read
 * path (stat, download, listings, fops) reads it as before, so an unversioned bucket costs nothing more: its
 * queries are the same. `objects.version_id` is the current version's id (NULL = the null version) and
 * `objects.version_sort` its ordering id (NULL = an entry written before the bucket was versioned: ordered by its
 * put_time, ports/versions.ts `legacySortId`).
 *
 * `object_versions` keeps everything else: noncurrent versions and delete markers (`marker` = 1, no blob), keyed by
 * (bucket, key, sort_id) — sort_id is the version id itself for versions written while Enabled, and the ordering id
 * of a null version (`version_id` = 'null'). Invariant: when a key has an `objects` row, it sorts after every one of
 * the key's `object_versions` rows; when it has none, the key's newest `object_versions` row (a delete marker, or
 * none at all) is its current version.
 *
 * Blob references: each version row holds one reference, like an entry. Retiring the current entry to
 * `object_versions` moves its reference (nothing is released); permanently deleting a version releases it, so the
 * garbage collector (blobs.ts `findOrphanBlobs`, `blobReferenced`) keeps a blob while any version refers to it.
 * Every change here runs inside the caller's transaction: a crash leaves the old version and either no new one or a
 * complete one.
 *
 * Not counted: noncurrent versions and markers are outside the bucket usage counters and quotas (bucket-usage.ts
 * counts `objects`).
 */
import type Database from 'better-sqlite3';
import { Errors } from '../../errors.js';
import type { BucketSettings } from '../../ports/meta.js';
import { lockRefusal, refusalText, type ObjectLock, type ObjectLockConfig } from '../../ports/object-lock.js';
import type { ObjectRecord } from '../../ports/object-record.js';
import {
  legacySortId,
  NULL_VERSION_ID,
  newVersionId,
  type VersionPage,
  type VersioningState,
  type VersionQuery,
  type VersionRecord,
} from '../../ports/versions.js';
import type { BlobRefs } from './blob-refs.js';
import { versionPage, type VersionReads } from '../sql/version-walk.js';
import { rowParams, toRecord, type ObjectRow } from './rows.js';

/** The table (idempotent; applied at every open, after `objects` exists). */
export const VERSIONS_DDL = `
CREATE TABLE IF NOT EXISTS object_versions (
  bucket    TEXT NOT NULL REFERENCES buckets (name),
  key       TEXT NOT NULL,
  sort_id   TEXT NOT NULL,
  version_id TEXT NOT NULL,
  marker    INTEGER NOT NULL DEFAULT 0,
  blob_id   TEXT NOT NULL,
  fsize     INTEGER NOT NULL,
  hash      TEXT NOT NULL,
  md5       TEXT NOT NULL,
  mime      TEXT NOT NULL,
  put_time  INTEGER NOT NULL,
  type      INTEGER NOT NULL DEFAULT 0,
  status    INTEGER NOT NULL DEFAULT 0,
  end_user  TEXT,
  meta      TEXT,
  expire_at INTEGER,
  transitions TEXT,
  restore_status INTEGER,
  restore_until INTEGER,
  parts     TEXT,
  PRIMARY KEY (bucket, key, sort_id)
) WITHOUT ROWID;
`;

/** Columns added to `objects` (schema.ts ADDED_COLUMNS). */
export const OBJECT_VERSION_COLUMNS: Array<[string, string, string]> = [
  ['objects', 'version_id', 'TEXT'],
  ['objects', 'version_sort', 'TEXT'],
];

/** Parsed versioning states by settings text. */
const parsed = new Map<string, VersioningState | undefined>();

/** A bucket's versioning state from its settings column (NULL = unversioned). */
export function versioningFromSettings(settings: string | null | undefined): VersioningState | undefined {
  if (!settings) return undefined;
  if (parsed.has(settings)) return parsed.get(settings);
  const state = (JSON.parse(settings) as BucketSettings).versioning;
  if (parsed.size >= 256) parsed.clear();
  parsed.set(settings, state);
  return state;
}

/** Parsed lock configurations by settings text. */
const parsedLocks = new Map<string, ObjectLockConfig | undefined>();

/** A bucket's object lock configuration from its settings column (undefined: none). */
export function lockConfigFromSettings(settings: string | null | undefined): ObjectLockConfig | undefined {
  if (!settings) return undefined;
  if (parsedLocks.has(settings)) return parsedLocks.get(settings);
  const conf = (JSON.parse(settings) as BucketSettings).objectLock;
  if (parsedLocks.size >= 256) parsedLocks.clear();
  parsedLocks.set(settings, conf);
  return conf;
}

/**
 * The store's backstop under the domain's retention check (objects/retention.ts): a version about to be destroyed
 * without going through `deleteVersion` (a Suspended bucket's null version replaced, an unversioned entry released)
 * is refused when locked. A bucket with object lock is always Enabled, so this never fires unless that invariant
 * breaks; it exists so a broken invariant refuses instead of destroying.
 */
function assertUnlocked(lock: ObjectLock | undefined): void {
  const refusal = lockRefusal(lock, Date.now(), false);
  if (refusal) throw Errors.objectLocked(refusalText(refusal));
}

/** A current entry as its version. */
export function current(rec: ObjectRecord): VersionRecord {
  return { record: rec, deleteMarker: false, isLatest: true, sortId: sortOf(rec) };
}

/** The ordering id of a current entry. */
export function sortOf(rec: ObjectRecord): string {
  return rec.versionSort ?? rec.versionId ?? legacySortId(rec.putTime);
}

/** An `object_versions` row (SQLite: marker 0/1; PostgreSQL, store/postgres/versions.ts: a boolean). */
export type VersionRow = ObjectRow & { sort_id: string; version_id: string; marker: bigint | number | boolean };

/** A delete marker's record (no blob). */
export function markerRecord(bucket: string, key: string, putTime: bigint, versionId: string | undefined): ObjectRecord {
  const rec: ObjectRecord = { bucket, key, blobId: '', fsize: 0, hash: '', md5: '', mimeType: '', putTime, type: 0, status: 0, meta: {} };
  if (versionId !== undefined) rec.versionId = versionId;
  return rec;
}

/** An `object_versions` row → its version (a noncurrent one keeps no expiry: it is not the key's entry any more). */
export function fromRow(row: VersionRow, isLatest: boolean): VersionRecord {
  const versionId = row.version_id === NULL_VERSION_ID ? undefined : row.version_id;
  const deleteMarker = Number(row.marker) === 1;
  if (deleteMarker) return { record: markerRecord(row.bucket, row.key, row.put_time, versionId), deleteMarker, isLatest, sortId: row.sort_id };
  const record = toRecord(row);
  delete record.expireAt;
  if (versionId !== undefined) record.versionId = versionId;
  record.versionSort = row.sort_id;
  return { record, deleteMarker, isLatest, sortId: row.sort_id };
}

export class SqliteVersions {
  private readonly st;

  constructor(
    db: Database.Database,
    private readonly refs: BlobRefs,
  ) {
    this.st = {
      newest: db.prepare('SELECT sort_id FROM object_versions WHERE bucket = ? AND key = ? ORDER BY sort_id DESC LIMIT 1').pluck(),
      newestRow: db
        .prepare(
          `SELECT v.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt FROM object_versions v
           LEFT JOIN blobs bl ON bl.id = v.blob_id WHERE v.bucket = ? AND v.key = ? ORDER BY v.sort_id DESC LIMIT 1`,
        )
        .safeIntegers(true),
      bySort: db
        .prepare(
          `SELECT v.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt FROM object_versions v
           LEFT JOIN blobs bl ON bl.id = v.blob_id WHERE v.bucket = ? AND v.key = ? AND v.sort_id = ?`,
        )
        .safeIntegers(true),
      nullRow: db
        .prepare(
          `SELECT v.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt FROM object_versions v
           LEFT JOIN blobs bl ON bl.id = v.blob_id WHERE v.bucket = ? AND v.key = ? AND v.version_id = 'null'`,
        )
        .safeIntegers(true),
      current: db
        .prepare(
          `SELECT o.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt
           FROM objects o LEFT JOIN blobs bl ON bl.id = o.blob_id WHERE o.bucket = ? AND o.key = ?`,
        )
        .safeIntegers(true),
      insert: db.prepare(
        `INSERT INTO object_versions (bucket, key, sort_id, version_id, marker, blob_id, fsize, hash, md5, mime, put_time,
           type, status, end_user, meta, expire_at, transitions, restore_status, restore_until, parts, object_lock)
         VALUES (@bucket, @key, @sortId, @wireId, @marker, @blobId, @fsize, @hash, @md5, @mime, @putTime, @type, @status,
           @endUser, @meta, @expireAt, @transitions, @restoreStatus, @restoreUntil, @parts, @objectLock)`,
      ),
      lockCurrent: db.prepare('UPDATE objects SET object_lock = ? WHERE bucket = ? AND key = ?'),
      lockRow: db.prepare('UPDATE object_versions SET object_lock = ? WHERE bucket = ? AND key = ? AND sort_id = ?'),
      deleteRow: db.prepare('DELETE FROM object_versions WHERE bucket = ? AND key = ? AND sort_id = ?'),
      deleteCurrent: db.prepare('DELETE FROM objects WHERE bucket = ? AND key = ?'),
      anyInBucket: db.prepare('SELECT 1 FROM object_versions WHERE bucket = ? LIMIT 1'),
      newerThan: db.prepare('SELECT 1 FROM object_versions WHERE bucket = ? AND key = ? AND sort_id > ? LIMIT 1'),
      currentExists: db.prepare('SELECT 1 FROM objects WHERE bucket = ? AND key = ?'),
      keyRows: db.prepare('SELECT sort_id, marker FROM object_versions WHERE bucket = ? AND key = ? LIMIT 2'),
      // Listing reads, on the primary keys: current entries from a key, history rows from a key or within one key.
      currentFrom: db.prepare('SELECT * FROM objects WHERE bucket = ? AND key >= ? ORDER BY key LIMIT 1').safeIntegers(true),
      historyKeyFrom: db.prepare('SELECT key FROM object_versions WHERE bucket = ? AND key >= ? ORDER BY key LIMIT 1').pluck(),
      historyWithin: db
        .prepare('SELECT * FROM object_versions WHERE bucket = ? AND key = ? AND sort_id < ? ORDER BY sort_id DESC LIMIT ?')
        .safeIntegers(true),
    };
  }

  /** Whether the bucket keeps any noncurrent version or delete marker (a bucket holding some is not empty). */
  anyIn(bucket: string): boolean {
    return this.st.anyInBucket.get(bucket) !== undefined;
  }

  /**
   * Inside a transaction: permanently deletes the key's version row `sortId` (a noncurrent version or marker) when it
   * is still noncurrent — the key has a current entry (which sorts after every row) or a newer row. Its blob
   * reference is released into `freed`. Answers whether it was deleted.
   */
  expireNoncurrent(bucket: string, key: string, sortId: string, freed: string[], mutable: (rec: ObjectRecord) => void): boolean {
    const row = this.st.bySort.get(bucket, key, sortId) as VersionRow | undefined;
    if (!row) return false;
    if (this.st.currentExists.get(bucket, key) === undefined && this.st.newerThan.get(bucket, key, sortId) === undefined) return false;
    // The retention check (objects/retention.ts): a version under retention or a legal hold is never expired.
    if (Number(row.marker) !== 1) mutable(fromRow(row, false).record);
    this.st.deleteRow.run(bucket, key, sortId);
    if (Number(row.marker) !== 1) this.refs.release(row.blob_id, freed);
    return true;
  }

  /**
   * Inside a transaction: deletes the key's delete marker `sortId` when it is the key's current version and its only
   * one (no entry, no other row). Answers whether it was deleted.
   */
  removeSoleMarker(bucket: string, key: string, sortId: string): boolean {
    if (this.st.currentExists.get(bucket, key) !== undefined) return false;
    const rows = this.st.keyRows.all(bucket, key) as Array<{ sort_id: string; marker: number }>;
    if (rows.length !== 1 || rows[0]!.sort_id !== sortId || Number(rows[0]!.marker) !== 1) return false;
    this.st.deleteRow.run(bucket, key, sortId);
    return true;
  }

  /** The newest ordering id of the key: its current entry's, else its newest version row's. */
  private newest(bucket: string, key: string, current: ObjectRecord | undefined): string | undefined {
    if (current) return sortOf(current);
    return this.st.newest.get(bucket, key) as string | undefined;
  }

  /**
   * Inside a transaction, before `rec` becomes the current entry of its key (the old current entry, if any, already
   * retired): gives it its version — a new id under Enabled, the null version under Suspended (removing a noncurrent
   * null version: there is one null version per key), none in an unversioned bucket. `nowUnits` 100-ns units.
   */
  assign(rec: ObjectRecord, state: VersioningState | undefined, nowUnits: bigint, freed: string[]): void {
    delete rec.versionId;
    delete rec.versionSort;
    if (!state) return;
    const sort = newVersionId(nowUnits, this.newest(rec.bucket, rec.key, undefined));
    if (state === 'Enabled') rec.versionId = sort;
    else this.dropNull(rec.bucket, rec.key, freed);
    rec.versionSort = sort;
  }

  /**
   * Inside a transaction: the current entry `cur` stops being current (it is about to be overwritten or deleted from
   * `objects` by the caller). Unversioned: its blob reference is released. Versioned: it becomes a noncurrent
   * version keeping its reference — except a null version under Suspended, which the new null version replaces
   * (released), as S3 does.
   */
  retire(cur: ObjectRecord, state: VersioningState | undefined, freed: string[]): void {
    if (!state || (state === 'Suspended' && cur.versionId === undefined)) {
      assertUnlocked(cur.lock);
      this.refs.release(cur.blobId, freed);
      return;
    }
    this.st.insert.run({ ...rowParams(cur), sortId: sortOf(cur), wireId: cur.versionId ?? NULL_VERSION_ID, marker: 0 });
  }

  /**
   * Inside a transaction: a delete marker becomes the key's current version (the caller removed the current entry,
   * retired). Its wire id is answered (`null` under Suspended, where it replaces a noncurrent null version).
   */
  addMarker(bucket: string, key: string, state: VersioningState, nowUnits: bigint, freed: string[]): string {
    const sort = newVersionId(nowUnits, this.newest(bucket, key, undefined));
    if (state === 'Suspended') this.dropNull(bucket, key, freed);
    const wireId = state === 'Enabled' ? sort : NULL_VERSION_ID;
    this.st.insert.run({ ...rowParams(markerRecord(bucket, key, nowUnits, undefined)), sortId: sort, wireId, marker: 1 });
    return wireId;
  }

  /** Removes the key's noncurrent null version (or null delete marker), releasing its blob. */
  private dropNull(bucket: string, key: string, freed: string[]): void {
    const row = this.st.nullRow.get(bucket, key) as VersionRow | undefined;
    if (!row) return;
    if (row.object_lock) assertUnlocked(JSON.parse(row.object_lock) as ObjectLock);
    this.st.deleteRow.run(bucket, key, row.sort_id);
    if (Number(row.marker) !== 1) this.refs.release(row.blob_id, freed);
  }

  /** Inside a transaction: sets the object lock of `v` (a version `get` found, not a marker) in place. */
  setLock(v: VersionRecord, lock: ObjectLock | undefined): void {
    const text = lock ? JSON.stringify(lock) : null;
    const { bucket, key } = v.record;
    const cur = this.st.current.get(bucket, key) as ObjectRow | undefined;
    if (cur && sortOf(toRecord(cur)) === v.sortId) this.st.lockCurrent.run(text, bucket, key);
    else this.st.lockRow.run(text, bucket, key, v.sortId);
  }

  /**
   * A version of the key by wire id (`null` included), or its current version (undefined id: the entry, or the
   * delete marker that is current); undefined when there is none. Records carry their blob's integrity facts.
   */
  get(bucket: string, key: string, versionId: string | undefined): VersionRecord | undefined {
    const cur = this.st.current.get(bucket, key) as ObjectRow | undefined;
    if (cur) {
      const rec = toRecord(cur);
      if (versionId === undefined || (rec.versionId ?? NULL_VERSION_ID) === versionId) {
        return { record: rec, deleteMarker: false, isLatest: true, sortId: sortOf(rec) };
      }
    }
    if (versionId === undefined) {
      const newest = this.st.newestRow.get(bucket, key) as VersionRow | undefined;
      return newest && Number(newest.marker) === 1 ? fromRow(newest, true) : undefined;
    }
    const row = (versionId === NULL_VERSION_ID ? this.st.nullRow.get(bucket, key) : this.st.bySort.get(bucket, key, versionId)) as
      | VersionRow
      | undefined;
    if (!row) return undefined;
    const latest = !cur && (this.st.newest.get(bucket, key) as string) === row.sort_id;
    return fromRow(row, latest);
  }

  /**
   * Inside a transaction: permanently deletes one version of the key (wire id). The current entry's deletion makes
   * the newest noncurrent version current again (back into `objects`, unless it is a delete marker). Answers
   * undefined when there is no such version, else whether it was a delete marker.
   */
  deleteVersion(
    bucket: string,
    key: string,
    versionId: string,
    freed: string[],
    upsert: (rec: ObjectRecord) => void,
  ): { deleteMarker: boolean } | undefined {
    const found = this.get(bucket, key, versionId);
    if (!found) return undefined;
    const cur = this.st.current.get(bucket, key) as ObjectRow | undefined;
    if (!found.deleteMarker && cur && sortOf(toRecord(cur)) === found.sortId) {
      this.st.deleteCurrent.run(bucket, key);
      this.refs.release(found.record.blobId, freed);
    } else {
      this.st.deleteRow.run(bucket, key, found.sortId);
      if (!found.deleteMarker) this.refs.release(found.record.blobId, freed);
    }
    // Without a current entry, the newest version left is current: back into `objects` unless it is a marker.
    if (!cur || !found.deleteMarker) {
      const stillCurrent = this.st.current.get(bucket, key) !== undefined;
      const next = stillCurrent ? undefined : (this.st.newestRow.get(bucket, key) as VersionRow | undefined);
      if (next && Number(next.marker) !== 1) {
        // The reference moves back with the row.
        this.st.deleteRow.run(bucket, key, next.sort_id);
        const rec = toRecord(next);
        if (next.version_id !== NULL_VERSION_ID) rec.versionId = next.version_id;
        rec.versionSort = next.sort_id;
        upsert(rec);
      }
    }
    return { deleteMarker: found.deleteMarker };
  }

  /**
   * One page of ListObjectVersions: the walk written once for both stores (store/sql/version-walk.ts) over this
   * store's reads on the primary keys — key by key, each key's versions in chunks, common prefixes skipped with one
   * seek (never the whole bucket). Each read sees the database as it is then (as with several worker processes).
   */
  listPage(q: VersionQuery): Promise<VersionPage> {
    this.walkReads ??= {
      currentFrom: async (bucket, from) => {
        const row = this.st.currentFrom.get(bucket, from.inclusive ? from.key : `${from.key}\u0000`) as ObjectRow | undefined;
        return row && current(toRecord(row));
      },
      historyKeyFrom: async (bucket, from) =>
        this.st.historyKeyFrom.get(bucket, from.inclusive ? from.key : `${from.key}\u0000`) as string | undefined,
      historyWithin: async (bucket, key, below, limit) =>
        (this.st.historyWithin.all(bucket, key, below, limit) as VersionRow[]).map((row) => fromRow(row, false)),
      get: async (bucket, key, versionId) => this.get(bucket, key, versionId),
    };
    return versionPage(this.walkReads, q);
  }

  private walkReads: VersionReads | undefined;
}
