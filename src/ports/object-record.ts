/**
 * The entry record every port passes around (the MetaStore's rows, the event outbox's subject), in a file of its
 * own so ports/meta.ts and ports/events.ts both import it and not each other. ports/meta.ts re-exports it.
 */
import type { BlobSums } from './blob.js';
import type { StoredPiece } from './manifest.js';
import type { ObjectLock } from './object-lock.js';

/**
 * One entry `<bucket>:<key>`.
 * - `fsize` bytes; `hash` the Kodo etag (docs/development/kodo-protocol.md §7); `md5` lower-case hex.
 * - `putTime` Unix time in 100-ns units, a bigint (it exceeds Number.MAX_SAFE_INTEGER, docs/development/kodo-protocol.md §8.2).
 * - `type` storage class 0..4; `status` 0 enabled / 1 disabled.
 * - `meta` user metadata without the `x-qn-meta-` prefix.
 * - `expireAt` Unix seconds when deleteAfterDays makes it expire, or undefined.
 * - `blobId` the stored bytes (BlobStore id), or a manifest id (ports/manifest.ts) for an object assembled from
 *   resumable pieces; several entries may share one blob or manifest.
 */
export interface ObjectRecord {
  bucket: string;
  key: string;
  blobId: string;
  fsize: number;
  hash: string;
  md5: string;
  mimeType: string;
  putTime: bigint;
  type: number;
  status: number;
  endUser?: string;
  meta: Record<string, string>;
  expireAt?: number;
  /** Lifecycle transitions (Unix seconds) to IA (type 1), archive-IR (4), archive (2), deep archive (3). */
  transitions?: Transitions;
  /** Archive restore state: 1 restoring, 2 restored. */
  restoreStatus?: number;
  /** Part sizes in bytes when the object was uploaded in parts (v2 multipart); for `needparts`. */
  parts?: number[];
  /** Archive restore expiry (Unix seconds): the restored copy is readable until then (restoreAr freezeAfterDays). */
  restoreUntil?: number;
  /**
   * Facts of the entry's blob, filled only by single-entry reads (`getObject`, `getBucketAndObject`): its
   * checksums (absent for a blob stored before checksums existed) and whether it was found corrupt.
   */
  sums?: BlobSums;
  corrupt?: boolean;
  /**
   * The pieces, in order, of an entry whose `blobId` is a manifest (filled by the same single-entry reads; absent
   * for plain blobs). `corrupt` is then true when any piece was found corrupt.
   */
  pieces?: StoredPiece[];
  /**
   * The bytes of an inline blob (store/inline-blob-store.ts), read with the entry by `getBucketAndObject` (the
   * download read) so that serving it needs no second query; absent for file blobs and from other reads. Verified
   * against `sums` like any blob's bytes (objects/verified-read.ts).
   */
  inline?: Buffer;
  /**
   * The version (ports/versions.ts): its id when the entry was written while its bucket's versioning was Enabled,
   * absent for the null version (written unversioned or Suspended).
   */
  versionId?: string;
  /**
   * The store's ordering id of the version (ports/versions.ts), absent for an entry written before its bucket was
   * versioned (ordered by its putTime then). Set and read by the stores only.
   */
  versionSort?: string;
  /**
   * The version's object lock (ports/object-lock.ts): retention and legal hold; absent = none. Set only in buckets
   * with object lock enabled; a copy or a move does not carry it (the target gets its own, as S3 CopyObject does).
   */
  lock?: ObjectLock;
}

/** Lifecycle transition times in Unix seconds (absent = none scheduled). */
export interface Transitions {
  toIA?: number;
  /** To Intelligent Tiering (type 5): Kodo's `toIntelligentTieringAfterDays` (object lifecycle, rs `/lifecycle`). */
  toIntelligentTiering?: number;
  toArchiveIR?: number;
  toArchive?: number;
  toDeepArchive?: number;
}
