/**
 * Bucket versioning in the PostgreSQL MetaStore (ports/versions.ts, docs/reference/versioning.md): the port of
 * store/sqlite/versions.ts, with the same tables, invariants and outcomes (schema.ts migration `object-versions`).
 *
 * `objects` keeps a key's current version when that is an entry (every read path reads it as before);
 * `objects.version_id` is its id (NULL = the null version), `objects.version_sort` its ordering id (NULL = written
 * before the bucket was versioned: ordered by put_time, ports/versions.ts `legacySortId`). `object_versions` keeps
 * noncurrent versions and delete markers (`marker`, no blob), keyed by (bucket, key, sort_id). Invariant: a key's
 * `objects` row sorts after every one of its `object_versions` rows; without one, the newest `object_versions` row
 * (a delete marker, or none) is the key's current version.
 *
 * Ordering across nodes: every function here runs inside the caller's transaction holding the key's entry lock
 * (entry-locks.ts) — or, for the expiry sweeps, the key's `objects` row locked `FOR UPDATE`, which every change of
 * the key waits for — so the read of the key's newest sort id and the insert of the next one are never interleaved
 * with another node's: a new id always sorts after the key's newest version, whatever the nodes' clocks say
 * (`newVersionId` takes the newest time plus one when the clock is behind it). Each statement starts after the
 * locks are held (READ COMMITTED: it sees every change committed before).
 *
 * Blob references: each non-marker version row holds one reference, like an entry. Retiring the current entry to
 * `object_versions` moves its reference (nothing is released); deleting a version for good releases it
 * (blob-refs.ts), so `blobs.refs` counts every version and neither the deletion queue nor `granary gc`
 * (`blobReferenced`) ever takes a blob a noncurrent version still refers to. A crash (SIGKILL, a lost node) rolls
 * the whole transaction back: the old version stays current and no part of a new one is visible.
 *
 * Not counted: noncurrent versions and markers are outside `bucket_usage` (its triggers are on `objects`).
 */
import type { ObjectRecord } from '../../ports/object-record.js';
import {
  NULL_VERSION_ID,
  newVersionId,
  type VersionPage,
  type VersioningState,
  type VersionQuery,
  type VersionRecord,
  type VersionStats,
} from '../../ports/versions.js';
import { versionPage, type VersionReads } from '../sql/version-walk.js';
import { current, fromRow, markerRecord, sortOf, versioningFromSettings, type VersionRow } from '../sqlite/versions.js';
import { deleteEntryAndRelease, releaseRef, releaseRefs } from './blob-refs.js';
import type { Queryable } from './db.js';
import { toRecord as versionToRecord } from '../sqlite/rows.js';
import { rowValues, toRecord, type ObjectRow } from './rows.js';

/** The columns of a version row set from a record, then its sort id, wire id and marker flag ($1..$20). */
const INSERT_VERSION = `INSERT INTO object_versions (bucket, key, blob_id, fsize, hash, md5, mime, put_time, type, status,
    end_user, meta, expire_at, transitions, restore_status, restore_until, parts, sort_id, version_id, marker)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`;

/** A version row with its blob's integrity facts ($1 bucket, $2 key; the caller adds the condition). */
const VERSION_WITH_BLOB = `SELECT v.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt
  FROM object_versions v LEFT JOIN blobs bl ON bl.id = v.blob_id WHERE v.bucket = $1 AND v.key = $2`;

/** The current entry with its blob's integrity facts ($1 bucket, $2 key). */
const CURRENT_WITH_BLOB = `SELECT o.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt
  FROM objects o LEFT JOIN blobs bl ON bl.id = o.blob_id WHERE o.bucket = $1 AND o.key = $2`;

/** The versioning state in a bucket's settings column (NULL = unversioned); shared with SQLite. */
export { versioningFromSettings };

/** Inserts a version row: the record `rec` under `sortId` with wire id `wireId`, a marker or not. */
async function insertVersion(c: Queryable, rec: ObjectRecord, sortId: string, wireId: string, marker: boolean): Promise<void> {
  await c.query(INSERT_VERSION, [...rowValues(rec).slice(0, 17), sortId, wireId, marker]);
}

/** The key's newest version row's sort id (noncurrent versions and markers only). */
async function newestRowSort(c: Queryable, bucket: string, key: string): Promise<string | undefined> {
  const { rows } = await c.query<{ sort_id: string }>(
    'SELECT sort_id FROM object_versions WHERE bucket = $1 AND key = $2 ORDER BY sort_id DESC LIMIT 1',
    [bucket, key],
  );
  return rows[0]?.sort_id;
}

/** Removes the key's noncurrent null version (or null delete marker), releasing its blob. */
async function dropNull(c: Queryable, bucket: string, key: string, freed: string[]): Promise<void> {
  const { rows } = await c.query<{ blob_id: string; marker: boolean }>(
    `DELETE FROM object_versions WHERE bucket = $1 AND key = $2 AND version_id = 'null' RETURNING blob_id, marker`,
    [bucket, key],
  );
  for (const r of rows) if (!r.marker) await releaseRef(c, r.blob_id, freed);
}

/**
 * Before `rec` becomes the current entry of its key (the old current entry, if any, already retired): gives it its
 * version — a new id under Enabled, the null version under Suspended (removing a noncurrent null version: one null
 * version per key), none in an unversioned bucket (no statement then). `nowUnits`: 100-ns units.
 */
export async function assignVersion(
  c: Queryable,
  rec: ObjectRecord,
  state: VersioningState | undefined,
  nowUnits: bigint,
  freed: string[],
): Promise<void> {
  delete rec.versionId;
  delete rec.versionSort;
  if (!state) return;
  const sort = newVersionId(nowUnits, await newestRowSort(c, rec.bucket, rec.key));
  if (state === 'Enabled') rec.versionId = sort;
  else await dropNull(c, rec.bucket, rec.key, freed);
  rec.versionSort = sort;
}

/**
 * The current entry `cur` stops being current (the caller overwrites or deletes its `objects` row). Unversioned: its
 * blob reference is released. Versioned: it becomes a noncurrent version keeping its reference — except a null
 * version under Suspended, which the new null version replaces (released), as S3 does.
 */
export async function retireEntry(c: Queryable, cur: ObjectRecord, state: VersioningState | undefined, freed: string[]): Promise<void> {
  if (!state || (state === 'Suspended' && cur.versionId === undefined)) {
    await releaseRef(c, cur.blobId, freed);
    return;
  }
  await insertVersion(c, cur, sortOf(cur), cur.versionId ?? NULL_VERSION_ID, false);
}

/**
 * A delete marker becomes the key's current version (the caller removed the current entry, retired). Answers its
 * wire id (`null` under Suspended, where it replaces a noncurrent null version). `nowUnits`: 100-ns units.
 */
export async function addMarker(
  c: Queryable,
  bucket: string,
  key: string,
  state: VersioningState,
  nowUnits: bigint,
  freed: string[],
): Promise<string> {
  const sort = newVersionId(nowUnits, await newestRowSort(c, bucket, key));
  if (state === 'Suspended') await dropNull(c, bucket, key, freed);
  const wireId = state === 'Enabled' ? sort : NULL_VERSION_ID;
  await insertVersion(c, markerRecord(bucket, key, nowUnits, undefined), sort, wireId, true);
  return wireId;
}

/**
 * Removes the current entry `rec` (a deletion or an expiry): unversioned, its row goes and its blob is released;
 * versioned, it becomes a noncurrent version under a new delete marker, whose wire id is answered.
 */
export async function removeEntry(
  c: Queryable,
  rec: ObjectRecord,
  state: VersioningState | undefined,
  nowUnits: bigint,
  freed: string[],
): Promise<string | undefined> {
  if (!state) {
    await deleteEntryAndRelease(c, rec.bucket, rec.key, rec.blobId, freed);
    return undefined;
  }
  await c.query('DELETE FROM objects WHERE bucket = $1 AND key = $2', [rec.bucket, rec.key]);
  await retireEntry(c, rec, state, freed);
  return addMarker(c, rec.bucket, rec.key, state, nowUnits, freed);
}

/**
 * After a sweep deleted expired `objects` rows it had locked (`FOR UPDATE SKIP LOCKED`, every column returned):
 * in an unversioned bucket each row's blob is released; in a versioned one each becomes a noncurrent version under
 * a new delete marker (the row lock, held until commit, keeps every other change of the key waiting).
 * `nowSec`: Unix seconds (the markers' time).
 */
export async function sweptEntries(c: Queryable, rows: ObjectRow[], nowSec: number, freed: string[]): Promise<void> {
  if (rows.length === 0) return;
  const buckets = [...new Set(rows.map((r) => r.bucket))];
  const { rows: settings } = await c.query<{ name: string; settings: string | null }>(
    'SELECT name, settings FROM buckets WHERE name = ANY($1::text[])',
    [buckets],
  );
  const states = new Map(settings.map((b) => [b.name, versioningFromSettings(b.settings)]));
  const released: string[] = [];
  for (const row of rows) {
    const state = states.get(row.bucket);
    if (!state) {
      released.push(row.blob_id);
      continue;
    }
    const rec = toRecord(row);
    await retireEntry(c, rec, state, freed);
    await addMarker(c, rec.bucket, rec.key, state, BigInt(nowSec) * 10_000_000n, freed);
  }
  await releaseRefs(c, released, freed);
}

/**
 * Permanently deletes the key's version row `sortId` (a noncurrent version or marker, the noncurrent-version
 * lifecycle) while it is still noncurrent — the key has a current entry (which sorts after every row) or a newer
 * row — inside the caller's transaction holding the key's lock. Its blob reference is released into `freed`.
 * Answers whether it was deleted.
 */
export async function expireNoncurrent(c: Queryable, bucket: string, key: string, sortId: string, freed: string[]): Promise<boolean> {
  const { rows } = await c.query<{ blob_id: string; marker: boolean }>(
    `DELETE FROM object_versions v WHERE v.bucket = $1 AND v.key = $2 AND v.sort_id = $3
       AND (EXISTS (SELECT 1 FROM objects o WHERE o.bucket = $1 AND o.key = $2)
         OR EXISTS (SELECT 1 FROM object_versions n WHERE n.bucket = $1 AND n.key = $2 AND n.sort_id > $3))
     RETURNING v.blob_id, v.marker`,
    [bucket, key, sortId],
  );
  const row = rows[0];
  if (!row) return false;
  if (!row.marker) await releaseRef(c, row.blob_id, freed);
  return true;
}

/**
 * Deletes the key's delete marker `sortId` when it is the key's current version and its only one (no entry, no
 * other row: an expired object delete marker), inside the caller's transaction holding the key's lock.
 */
export async function removeSoleMarker(c: Queryable, bucket: string, key: string, sortId: string): Promise<boolean> {
  const { rowCount } = await c.query(
    `DELETE FROM object_versions v WHERE v.bucket = $1 AND v.key = $2 AND v.sort_id = $3 AND v.marker
       AND NOT EXISTS (SELECT 1 FROM objects o WHERE o.bucket = $1 AND o.key = $2)
       AND NOT EXISTS (SELECT 1 FROM object_versions n WHERE n.bucket = $1 AND n.key = $2 AND n.sort_id <> $3)`,
    [bucket, key, sortId],
  );
  return rowCount === 1;
}

/** Every bucket's version counters (`version_usage`, kept by triggers: the sum of each bucket's shards). */
export async function versionStatsOn(c: Queryable): Promise<Map<string, VersionStats>> {
  const { rows } = await c.query<{ bucket: string; versions: number; markers: number; bytes: number }>(
    'SELECT bucket, SUM(versions) AS versions, SUM(markers) AS markers, SUM(bytes) AS bytes FROM version_usage GROUP BY bucket',
  );
  return new Map(rows.map((r) => [r.bucket, { noncurrentVersions: r.versions, deleteMarkers: r.markers, noncurrentBytes: r.bytes }]));
}

/** Whether the bucket keeps any noncurrent version or delete marker (a bucket holding some is not empty). */
export async function anyVersionIn(c: Queryable, bucket: string): Promise<boolean> {
  return (await c.query('SELECT 1 FROM object_versions WHERE bucket = $1 LIMIT 1', [bucket])).rows.length > 0;
}

/**
 * A version of the key by wire id (`null` included), or its current version (undefined id: the entry, or the
 * delete marker that is current); undefined when there is none. Records carry their blob's integrity facts.
 */
export async function getVersion(c: Queryable, bucket: string, key: string, versionId: string | undefined): Promise<VersionRecord | undefined> {
  const cur = (await c.query<ObjectRow>(CURRENT_WITH_BLOB, [bucket, key])).rows[0];
  if (cur) {
    const rec = toRecord(cur);
    if (versionId === undefined || (rec.versionId ?? NULL_VERSION_ID) === versionId) {
      return { record: rec, deleteMarker: false, isLatest: true, sortId: sortOf(rec) };
    }
  }
  if (versionId === undefined) {
    const newest = (await c.query<VersionRow>(`${VERSION_WITH_BLOB} ORDER BY v.sort_id DESC LIMIT 1`, [bucket, key])).rows[0];
    return newest && newest.marker === true ? fromRow(newest, true) : undefined;
  }
  const row = (
    versionId === NULL_VERSION_ID
      ? await c.query<VersionRow>(`${VERSION_WITH_BLOB} AND v.version_id = 'null'`, [bucket, key])
      : await c.query<VersionRow>(`${VERSION_WITH_BLOB} AND v.sort_id = $3`, [bucket, key, versionId])
  ).rows[0];
  if (!row) return undefined;
  const latest = !cur && (await newestRowSort(c, bucket, key)) === row.sort_id;
  return fromRow(row, latest);
}

/**
 * Permanently deletes one version of the key (wire id), inside the caller's transaction holding the key's lock.
 * Deleting the current entry makes the newest noncurrent version current again (back into `objects` through
 * `upsert`, unless it is a delete marker); so does deleting the marker that is current. Answers the deleted version,
 * undefined when there is no such version.
 */
export async function deleteVersion(
  c: Queryable,
  bucket: string,
  key: string,
  versionId: string,
  freed: string[],
  upsert: (rec: ObjectRecord) => Promise<void>,
): Promise<VersionRecord | undefined> {
  const found = await getVersion(c, bucket, key, versionId);
  if (!found) return undefined;
  const cur = (await c.query<ObjectRow>('SELECT * FROM objects WHERE bucket = $1 AND key = $2', [bucket, key])).rows[0];
  const isCurrentEntry = !found.deleteMarker && cur !== undefined && sortOf(toRecord(cur)) === found.sortId;
  if (isCurrentEntry) {
    await deleteEntryAndRelease(c, bucket, key, found.record.blobId, freed);
  } else {
    await c.query('DELETE FROM object_versions WHERE bucket = $1 AND key = $2 AND sort_id = $3', [bucket, key, found.sortId]);
    if (!found.deleteMarker) await releaseRef(c, found.record.blobId, freed);
  }
  // Without a current entry, the newest version left is current: back into `objects` unless it is a marker.
  if (cur === undefined || isCurrentEntry) {
    const { rows } = await c.query<VersionRow>(
      'SELECT * FROM object_versions WHERE bucket = $1 AND key = $2 ORDER BY sort_id DESC LIMIT 1',
      [bucket, key],
    );
    const next = rows[0];
    if (next && next.marker !== true) {
      // The reference moves back with the row.
      await c.query('DELETE FROM object_versions WHERE bucket = $1 AND key = $2 AND sort_id = $3', [bucket, key, next.sort_id]);
      const rec = versionToRecord(next);
      if (next.version_id !== NULL_VERSION_ID) rec.versionId = next.version_id;
      rec.versionSort = next.sort_id;
      await upsert(rec);
    }
  }
  return found;
}

/** The walk's reads on the connection `c` (store/sql/version-walk.ts). */
function readsOn(c: Queryable): VersionReads {
  return {
    async currentFrom(bucket, from) {
      const op = from.inclusive ? '>=' : '>';
      const { rows } = await c.query<ObjectRow>(`SELECT * FROM objects WHERE bucket = $1 AND key ${op} $2 ORDER BY key LIMIT 1`, [bucket, from.key]);
      return rows[0] && current(toRecord(rows[0]));
    },
    async historyKeyFrom(bucket, from) {
      const op = from.inclusive ? '>=' : '>';
      const { rows } = await c.query<{ key: string }>(
        `SELECT key FROM object_versions WHERE bucket = $1 AND key ${op} $2 ORDER BY key LIMIT 1`,
        [bucket, from.key],
      );
      return rows[0]?.key;
    },
    async historyWithin(bucket, key, below, limit) {
      const { rows } = await c.query<VersionRow>(
        'SELECT * FROM object_versions WHERE bucket = $1 AND key = $2 AND sort_id < $3 ORDER BY sort_id DESC LIMIT $4',
        [bucket, key, below, limit],
      );
      return rows.map((row) => fromRow(row, false));
    },
    get: (bucket, key, versionId) => getVersion(c, bucket, key, versionId),
  };
}

/** One page of ListObjectVersions on `c` (the caller opens a REPEATABLE READ snapshot). */
export function listVersionsOn(c: Queryable, q: VersionQuery): Promise<VersionPage> {
  return versionPage(readsOn(c), q);
}
