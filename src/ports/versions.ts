/**
 * Bucket versioning shared by the MetaStore port and its callers (docs/reference/versioning.md): the bucket states,
 * the version id format, and the records of a key's versions.
 *
 * Version ids: 32 lower-case hex characters — 16 of the version's creation time in 100-ns units since the Unix epoch
 * (so ids sort in creation order, as strings), then 16 random ones (uniqueness across processes and nodes). Within
 * one key the store makes every new id sort after the key's newest version, whatever the clocks say. The `null`
 * version (written while the bucket was unversioned or suspended) has the id `null` on the wire; the store still
 * orders it by an id of this format (its sort id: the time it was written, or, for an entry written before the
 * bucket was versioned, its putTime followed by 16 zeros). Clients treat ids as opaque (AWS: "Version IDs are
 * Unicode, UTF-8 encoded, URL-ready, opaque strings that are no more than 1,024 bytes long").
 */
import { randomBytes } from 'node:crypto';
import type { ObjectRecord } from './object-record.js';

/** A bucket's versioning state (`settings.versioning`); absent = never enabled (unversioned). */
export type VersioningState = 'Enabled' | 'Suspended';

/** The wire id of the null version. */
export const NULL_VERSION_ID = 'null';

const VERSION_ID = /^[0-9a-f]{32}$/;

/** Whether `text` is a version id Granary could have made (`null` included); S3 answers InvalidArgument otherwise. */
export function isVersionId(text: string): boolean {
  return text === NULL_VERSION_ID || VERSION_ID.test(text);
}

/** The 16 hex digits of a time in 100-ns units. */
function hex16(units: bigint): string {
  return units.toString(16).padStart(16, '0').slice(-16);
}

/**
 * A new version (sort) id: the time `nowUnits` (100-ns units) and 16 random hex digits, made to sort after `newest`
 * (the key's newest version's sort id, when it has one) by taking its time plus one when the clock is behind it.
 */
export function newVersionId(nowUnits: bigint, newest?: string): string {
  let time = nowUnits;
  if (newest !== undefined) {
    const last = BigInt(`0x${newest.slice(0, 16)}`);
    if (time <= last) time = last + 1n;
  }
  return hex16(time) + randomBytes(8).toString('hex');
}

/** The sort id of a null version written before its bucket was versioned: its putTime (100-ns units), 16 zeros. */
export function legacySortId(putTime: bigint): string {
  return `${hex16(putTime)}0000000000000000`;
}

/**
 * One version of a key as ListObjectVersions and the version reads answer it: an entry (ObjectRecord, its
 * `versionId` absent for the null version) or a delete marker (`deleteMarker`: only bucket, key, versionId and
 * putTime — the marker's creation time — are meaningful). `sortId` orders the key's versions (newest first);
 * `isLatest` marks the key's current version (a marker can be current).
 */
export interface VersionRecord {
  record: ObjectRecord;
  deleteMarker: boolean;
  isLatest: boolean;
  sortId: string;
}

/** The wire id of a record's version. */
export function wireVersionId(rec: ObjectRecord): string {
  return rec.versionId ?? NULL_VERSION_ID;
}

/** One page of ListObjectVersions (MetaStore.listVersions): versions and common prefixes in key order. */
export interface VersionPage {
  entries: Array<{ kind: 'version'; version: VersionRecord } | { kind: 'prefix'; prefix: string }>;
  /** True when the listing continues after the last entry. */
  more: boolean;
}

/** A ListObjectVersions query (keys byte-lexicographic, versions newest first). */
export interface VersionQuery {
  bucket: string;
  prefix: string;
  delimiter: string;
  /**
   * Resume after this key (all its versions), or after every key under this common prefix (`isPrefix`) — or, with
   * `versionId` (a wire id, `null` included), after that version of the key.
   */
  after?: { key: string; versionId?: string; isPrefix?: boolean };
  /** Versions plus common prefixes, 1..1000. */
  limit: number;
}

/** The creation time of a version from its sort id (the id's first 16 hex digits), Unix seconds. */
export function sortIdSeconds(sortId: string): number {
  return Number(BigInt(`0x${sortId.slice(0, 16)}`) / 10_000_000n);
}

/**
 * A bucket's version counters (MetaStore.versionStats; the `/metrics` gauges, docs/reference/metrics-and-logs.md):
 * noncurrent versions (delete markers not included), delete markers (current or not), and the bytes the noncurrent
 * versions hold (their `fsize` sum; shared blobs counted once per version). Current objects are the bucket usage's.
 */
export interface VersionStats {
  noncurrentVersions: number;
  deleteMarkers: number;
  noncurrentBytes: number;
}

/**
 * What the noncurrent-version lifecycle (objects/noncurrent-sweep.ts) and the metrics need of a store keeping
 * versions (part of MetaStore). Each removal re-checks its condition in its own transaction, so a key changed since
 * it was listed is left alone.
 */
export interface VersionMaintenance {
  /**
   * Permanently deletes the noncurrent version (or noncurrent delete marker) of the key whose sort id is `sortId`
   * — only while it is still noncurrent (a newer version or marker exists). `deleted` false otherwise; the blob
   * references it held are returned to be released (objects/blobs.ts releaseBlobs).
   */
  expireNoncurrentVersion(bucket: string, key: string, sortId: string): Promise<{ deleted: boolean; freedBlobs: string[] }>;
  /**
   * Removes the key's delete marker `sortId` when it is still the key's current version and its only one (an
   * "expired object delete marker", AWS). Answers whether it was removed.
   */
  removeExpiredDeleteMarker(bucket: string, key: string, sortId: string): Promise<boolean>;
  /**
   * Every bucket's version counters, read from counters kept in the transactions that add or remove versions (no
   * scan). Undefined when the store keeps no versions.
   */
  versionStats(): Promise<Map<string, VersionStats> | undefined>;
}
