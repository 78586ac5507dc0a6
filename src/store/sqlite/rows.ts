/**
 * Mapping between `objects` rows and ObjectRecords (shared by the store and its list query).
 * Integer columns are read as bigints (statements use safeIntegers) so `put_time` (100-ns units) stays exact.
 */
import type { BlobState } from '../../ports/blob.js';
import type { ObjectRecord, Transitions } from '../../ports/meta.js';
import type { ObjectLock } from '../../ports/object-lock.js';

export interface ObjectRow {
  bucket: string;
  key: string;
  blob_id: string;
  fsize: bigint;
  hash: string;
  md5: string;
  mime: string;
  put_time: bigint;
  type: bigint | number;
  status: bigint | number;
  end_user: string | null;
  meta: string | null;
  expire_at: bigint | null;
  transitions: string | null;
  restore_status: bigint | number | null;
  restore_until: bigint | null;
  parts: string | null;
  /** The version (store/sqlite/versions.ts): id (NULL = null version) and ordering id; absent in PostgreSQL rows. */
  version_id?: string | null;
  version_sort?: string | null;
  /** The version's object lock as JSON (store/sqlite/object-lock.ts; NULL = none); absent in PostgreSQL rows. */
  object_lock?: string | null;
  /** Joined from `blobs` by single-entry reads only. */
  bl_block_bytes?: bigint | number | null;
  bl_sums?: Buffer | null;
  bl_corrupt?: bigint | boolean | null;
  /** Joined from `inline_blobs` by getBucketAndObject only: the bytes of an inline blob. */
  ib_data?: Buffer | null;
}

/**
 * A row → record: a SQLite row read with safeIntegers (bigints), or a PostgreSQL row (store/postgres/rows.ts:
 * numbers for int4, bigints for int8, booleans for flags).
 */
export function toRecord(row: ObjectRow): ObjectRecord {
  const rec: ObjectRecord = {
    bucket: row.bucket,
    key: row.key,
    blobId: row.blob_id,
    fsize: Number(row.fsize),
    hash: row.hash,
    md5: row.md5,
    mimeType: row.mime,
    putTime: row.put_time,
    type: Number(row.type),
    status: Number(row.status),
    meta: row.meta ? (JSON.parse(row.meta) as Record<string, string>) : {},
  };
  if (row.end_user !== null) rec.endUser = row.end_user;
  if (row.expire_at !== null) rec.expireAt = Number(row.expire_at);
  if (row.transitions !== null) rec.transitions = JSON.parse(row.transitions) as Transitions;
  if (row.restore_status !== null) rec.restoreStatus = Number(row.restore_status);
  if (row.restore_until !== null && row.restore_until !== undefined) rec.restoreUntil = Number(row.restore_until);
  if (row.parts !== null) rec.parts = JSON.parse(row.parts) as number[];
  if (row.bl_sums && row.bl_block_bytes) rec.sums = { blockBytes: Number(row.bl_block_bytes), crc32: row.bl_sums };
  if (row.bl_corrupt) rec.corrupt = true;
  if (row.ib_data) rec.inline = row.ib_data;
  if (row.version_id) rec.versionId = row.version_id;
  if (row.version_sort) rec.versionSort = row.version_sort;
  if (row.object_lock) rec.lock = JSON.parse(row.object_lock) as ObjectLock;
  return rec;
}

/** Named parameters of the objects upsert for a record. */
export function rowParams(rec: ObjectRecord): Record<string, unknown> {
  const transitions = rec.transitions && Object.keys(rec.transitions).length ? JSON.stringify(rec.transitions) : null;
  return {
    bucket: rec.bucket,
    key: rec.key,
    blobId: rec.blobId,
    fsize: rec.fsize,
    hash: rec.hash,
    md5: rec.md5,
    mime: rec.mimeType,
    putTime: rec.putTime,
    type: rec.type,
    status: rec.status,
    endUser: rec.endUser ?? null,
    meta: Object.keys(rec.meta).length ? JSON.stringify(rec.meta) : null,
    expireAt: rec.expireAt ?? null,
    transitions,
    restoreStatus: rec.restoreStatus ?? null,
    restoreUntil: rec.restoreUntil ?? null,
    parts: rec.parts ? JSON.stringify(rec.parts) : null,
    versionId: rec.versionId ?? null,
    versionSort: rec.versionSort ?? null,
    objectLock: rec.lock ? JSON.stringify(rec.lock) : null,
  };
}

/** A `blobs` row (read with safeIntegers). */
export interface BlobRow {
  id: string;
  size: bigint | null;
  block_bytes: bigint | null;
  sums: Buffer | null;
  corrupt: bigint;
}

/** A `blobs` row → its integrity facts. */
export function toBlobState(row: BlobRow): BlobState {
  const state: BlobState = { id: row.id, corrupt: row.corrupt !== 0n };
  if (row.size !== null) state.size = Number(row.size);
  if (row.sums !== null && row.block_bytes !== null) state.sums = { blockBytes: Number(row.block_bytes), crc32: row.sums };
  return state;
}
