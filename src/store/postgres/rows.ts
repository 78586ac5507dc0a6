/**
 * Mapping between PostgreSQL `objects` / `blobs` rows and the port's records (shared by the store, its list query
 * and its sweeps). The pool parses `bigint` columns to bigints (db.ts): `put_time` (100-ns units) stays exact,
 * sizes (bytes) and times (Unix seconds) become numbers here. `integer` columns arrive as numbers, `boolean` as
 * booleans, `bytea` as Buffers.
 */
import type { BlobState } from '../../ports/blob.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { toRecord as sqliteToRecord } from '../sqlite/rows.js';

export interface ObjectRow {
  bucket: string;
  key: string;
  blob_id: string;
  fsize: bigint;
  hash: string;
  md5: string;
  mime: string;
  put_time: bigint;
  type: number;
  status: number;
  end_user: string | null;
  meta: string | null;
  expire_at: bigint | null;
  transitions: string | null;
  restore_status: number | null;
  restore_until: bigint | null;
  parts: string | null;
  /** The version (versions.ts): id (NULL = the null version) and ordering id (NULL = written before versioning). */
  version_id: string | null;
  version_sort: string | null;
  /** Joined from `blobs` by single-entry reads only. */
  bl_block_bytes?: number | null;
  bl_sums?: Buffer | null;
  bl_corrupt?: boolean | null;
  /** Joined from `inline_blobs` by getBucketAndObject only: the bytes of an inline blob. */
  ib_data?: Buffer | null;
}

/** The columns of an entry, in the order of `rowValues` ($1..$19 of UPSERT_OBJECT). */
export const OBJECT_COLUMNS =
  'bucket, key, blob_id, fsize, hash, md5, mime, put_time, type, status, end_user, meta, expire_at, transitions, ' +
  'restore_status, restore_until, parts, version_id, version_sort';

/** The number of `rowValues` (the next positional parameter of a statement built on UPSERT_OBJECT is this + 1). */
export const OBJECT_VALUES = 19;

/** Inserts an entry or replaces every column of the one at (bucket, key); parameters: `rowValues`. */
export const UPSERT_OBJECT = `INSERT INTO objects (${OBJECT_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
  ON CONFLICT (bucket, key) DO UPDATE SET blob_id = excluded.blob_id, fsize = excluded.fsize,
    hash = excluded.hash, md5 = excluded.md5, mime = excluded.mime, put_time = excluded.put_time,
    type = excluded.type, status = excluded.status, end_user = excluded.end_user, meta = excluded.meta,
    expire_at = excluded.expire_at, transitions = excluded.transitions,
    restore_status = excluded.restore_status, restore_until = excluded.restore_until, parts = excluded.parts,
    version_id = excluded.version_id, version_sort = excluded.version_sort`;

/**
 * A row → record: the embedded store's mapping (store/sqlite/rows.ts), which takes either driver's integers
 * (bigint or number) and flags (bigint or boolean); put_time is a bigint here too (db.ts parses int8 so).
 */
export function toRecord(row: ObjectRow): ObjectRecord {
  return sqliteToRecord(row);
}

/** The 19 positional parameters of UPSERT_OBJECT for a record (bigint putTime passed as text, exact). */
export function rowValues(rec: ObjectRecord): unknown[] {
  const transitions = rec.transitions && Object.keys(rec.transitions).length ? JSON.stringify(rec.transitions) : null;
  return [
    rec.bucket,
    rec.key,
    rec.blobId,
    rec.fsize,
    rec.hash,
    rec.md5,
    rec.mimeType,
    rec.putTime.toString(),
    rec.type,
    rec.status,
    rec.endUser ?? null,
    Object.keys(rec.meta).length ? JSON.stringify(rec.meta) : null,
    rec.expireAt ?? null,
    transitions,
    rec.restoreStatus ?? null,
    rec.restoreUntil ?? null,
    rec.parts ? JSON.stringify(rec.parts) : null,
    rec.versionId ?? null,
    rec.versionSort ?? null,
  ];
}

/** A `blobs` row. */
export interface BlobRow {
  id: string;
  size: bigint | null;
  block_bytes: number | null;
  sums: Buffer | null;
  corrupt: boolean;
}

/** A `blobs` row → its integrity facts. */
export function toBlobState(row: BlobRow): BlobState {
  const state: BlobState = { id: row.id, corrupt: row.corrupt };
  if (row.size !== null) state.size = Number(row.size);
  if (row.sums !== null && row.block_bytes !== null) state.sums = { blockBytes: Number(row.block_bytes), crc32: row.sums };
  return state;
}
