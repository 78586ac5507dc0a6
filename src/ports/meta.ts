/**
 * The MetaStore port: buckets, bound domains, entries and blob references. No Kodo wire format here: callers
 * get plain records and outcome tags, the domain layer turns them into Kodo errors.
 * Implementations: SQLite (store/sqlite/, the embedded default) and PostgreSQL (store/postgres/, shared by the nodes
 * of a cluster); both pass the same contract suite (test/contract/).
 */
import type { ConsoleSampleStore } from './console-samples.js';
import type { IamStore } from './iam.js';
import type { ConsoleSessionStore } from './console-sessions.js';
import type { LeaseStore } from './leases.js';
import type { JobQueue } from './job-queue.js';
import type { TaskQueue } from './tasks.js';
import type { WorkflowTemplateStore } from './workflow-templates.js';
import type { BlobState, BlobSums } from './blob.js';
import type { EventOutbox, OutboxRows } from './events.js';
import type { ReplicationRule, ReplicationStore } from './replication.js';
import type { ManifestPiece } from './manifest.js';
import type { FetchTaskStore } from './fetch-tasks.js';
import type { ObjectRecord } from './object-record.js';
import type { VersioningState, VersionMaintenance, VersionPage, VersionQuery, VersionRecord } from './versions.js';
import type { ObjectLock, ObjectLockConfig } from './object-lock.js';

export type { ObjectRecord, Transitions } from './object-record.js';

/**
 * A bucket. `ctime` in Unix seconds; `owner` the AccessKey of the account that owns it. `source` is the mirror
 * origin (an http(s) URL, docs/development/kodo-protocol.md §8.6 `image`) a missing key is pulled from, `sourceHost` the Host header
 * sent to it; both absent when the bucket has no mirror source.
 */
export interface BucketRecord {
  name: string;
  region: string;
  private: boolean;
  ctime: number;
  owner: string;
  source?: string;
  sourceHost?: string;
  /** Whether the `nrop` moderation fop is enabled for the bucket (docs/development/kodo-protocol.md §10.4); absent = off. */
  nrop?: boolean;
  /** Image styles (docs/development/kodo-protocol.md §10.1); absent when never set (separator `-`, no styles). */
  styles?: BucketStyles;
  /** The bucket's configuration (docs/development/kodo-protocol.md §8.6): `{}` when nothing was ever set. */
  settings: BucketSettings;
}

/**
 * Per-bucket configuration set through the uc host (docs/development/kodo-protocol.md §8.6, §13.2) or the CLI, kept as one JSON document
 * with the bucket. Every field is absent until set.
 */
export interface BucketSettings {
  /**
   * `maxAge`: `Cache-Control: max-age` of downloads and fop results, seconds, as set (≤ 2147483647; a value ≤ 0
   * means Kodo's default 31536000 when serving and is reported as set by bucketInfo). Absent = 31536000 on public
   * buckets, `private, max-age=0` on private ones (buckets/max-age.ts).
   */
  maxAge?: number;
  /** `referAntiLeech`: referer white/black list (absent = off; mode 0 removes it). */
  referer?: RefererSettings;
  /**
   * `corsRules`: 1..10 CORS rules replacing the global `*` on this bucket's downloads (absent = the global `*`;
   * setting `[]` removes them, so it is never stored empty).
   */
  cors?: CorsRule[];
  /**
   * The JSON array `corsRules/set` received, kept to answer `corsRules/get` verbatim (Kodo returns the rules as set,
   * entries such as `[""]` included); absent when the rules were set another way (console, CLI) or removed.
   */
  corsAsSent?: unknown[];
  /**
   * The `<CORSConfiguration>` S3 PutBucketCors received (IDs, order and values as sent), kept to answer
   * GetBucketCors exactly (s3api/cors-config.ts); `cors` holds the same rules for matching. Absent when the rules
   * were set another way (Kodo API, console, CLI) or removed.
   */
  corsS3?: S3CorsRule[];
  /** `setbucketquota`: limits (-1 = none). */
  quota?: BucketQuota;
  /** `accessMode` 1: original protection (the original and raw fops are refused; styles and signed URLs served). */
  protected?: boolean;
  /** `rules/add`: lifecycle rules by prefix. */
  lifecycleRules?: LifecycleRule[];
  /**
   * The rules of the `<LifecycleConfiguration>` S3 PutBucketLifecycleConfiguration received, in order
   * (buckets/s3-lifecycle.ts): those Kodo's rules can express are kept in `lifecycleRules` too (`kodo` names
   * them); the others (disabled, tag or size filters, Date expirations, aborts of incomplete uploads, …) only here.
   * Absent when never set through S3 or deleted.
   */
  lifecycleS3?: S3LifecycleRule[];
  /**
   * The bucket's S3 ACL grants (PutBucketAcl, CreateBucket `x-amz-acl`/`x-amz-grant-*`; s3api/acl.ts), the owner's
   * included. Absent = the canned ACL of `private` (private or public-read by the flag). AllUsers READ follows the
   * bucket's private flag both ways (acl.ts `bucketGrants`).
   */
  acl?: S3Grant[];
  /** S3 object ownership (PutBucketOwnershipControls); absent = none set (GetBucketOwnershipControls: not found). */
  ownership?: 'BucketOwnerEnforced' | 'BucketOwnerPreferred' | 'ObjectWriter';
  /** `events/add`: event notification rules. */
  eventRules?: EventRule[];
  /** Bucket replication rules (ports/replication.ts; `granary replication add`, S3 PutBucketReplication). */
  replication?: ReplicationRule[];
  /**
   * `noIndexPage` (0|1 on the wire): stored and reported by bucketInfo `no_index_page` (absent = 0). Granary serves
   * no default index page either way.
   */
  noIndexPage?: boolean;
  /** `PUT /buckets/<bucket>?remark`: the bucket's remark (bucketInfo `remark`; absent = ''; buckets/bucket-notes.ts). */
  remark?: string;
  /**
   * S3 PutBucketEncryption: the default encryption of new objects, 'AES256' (SSE-S3; absent = none;
   * buckets/encryption.ts). Applies to uploads through the Kodo API too.
   */
  encryption?: 'AES256';
  /**
   * The S3 bucket policy as PutBucketPolicy received it (GetBucketPolicy answers it byte for byte; parsed and
   * applied by s3api/bucket-policy-doc.ts and bucket-policy-eval.ts). Absent = none.
   */
  policy?: string;
  /**
   * S3 PutPublicAccessBlock (s3api/public-access-block.ts): the bucket's Block Public Access settings; absent =
   * none set (GetPublicAccessBlock: NoSuchPublicAccessBlockConfiguration, nothing blocked).
   */
  publicAccessBlock?: PublicAccessBlockSettings;
  /** `bucketTagging`: the bucket's tags in the order set (absent = none; buckets/tagging.ts). */
  tags?: BucketTag[];
  /**
   * S3 PutBucketVersioning (ports/versions.ts, docs/reference/versioning.md): absent = never versioned; once set it
   * is never removed (a bucket never returns to unversioned).
   */
  versioning?: VersioningState;
  /**
   * S3 Object Lock (ports/object-lock.ts): set when the bucket was created with `x-amz-bucket-object-lock-enabled`
   * (never removed; its versioning is Enabled and cannot be Suspended); the default retention by
   * PutObjectLockConfiguration. Absent = no object lock.
   */
  objectLock?: ObjectLockConfig;
}

/** S3 Block Public Access settings of a bucket (AWS PublicAccessBlockConfiguration; s3api/public-access-block.ts). */
export interface PublicAccessBlockSettings {
  blockPublicAcls: boolean;
  ignorePublicAcls: boolean;
  blockPublicPolicy: boolean;
  restrictPublicBuckets: boolean;
}

/** One bucket tag (`bucketTagging`, Kodo's wire names `Key`/`Value`). */
export interface BucketTag {
  key: string;
  value: string;
}

/**
 * Referer anti-leech (`referAntiLeech`, buckets/referer.ts): `mode` 1 white list, 2 black list of `patterns`
 * (`*`, `*.domain`, `domain`, each optionally `:port`; lower case); `allowEmpty` (`norefer`) whether requests without
 * a Referer pass; `sourceEnabled` (`source_enabled`) whether Granary's own addresses (path style, source and bound
 * domains) are checked too (GRANARY_CDN_DOMAINS always are).
 */
export interface RefererSettings {
  mode: 1 | 2;
  patterns: string[];
  allowEmpty: boolean;
  sourceEnabled: boolean;
}

/**
 * A CORS rule (`corsRules/set`, buckets/cors.ts; Kodo's wire names: allowed_origin, allowed_method, allowed_header,
 * exposed_header, max_age). Origins as given (case-sensitive, one `*` wildcard); methods upper case; header names
 * as given, compared case-insensitively (`*` = any requested header); `maxAge` seconds, 0 = not cached.
 */
export interface CorsRule {
  allowedOrigin: string[];
  allowedMethod: string[];
  allowedHeader: string[];
  exposedHeader: string[];
  maxAge: number;
}

/**
 * An S3 CORS rule as PutBucketCors sent it (s3api/cors-config.ts): `id` (`ID`), origins with at most one `*` each
 * (no scheme needed), methods (GET PUT POST DELETE HEAD), allowed headers (one `*` each), exposed headers,
 * `maxAgeSeconds` when sent.
 */
export interface S3CorsRule {
  id?: string;
  allowedOrigin: string[];
  allowedMethod: string[];
  allowedHeader: string[];
  exposeHeader: string[];
  maxAgeSeconds?: number;
}

/** A bucket quota: `size` bytes and `count` objects; -1 = no limit. */
export interface BucketQuota {
  size: number;
  count: number;
}

/**
 * What a bucket holds: `bytes` the sum of its entries' `fsize` (an entry sharing its blob with a copy counts in
 * full, as Kodo bills per entry) and `count` its entries. Entries past their expiry count until they are deleted.
 */
export interface BucketUsage {
  bytes: number;
  count: number;
}

/** A change refused because it would take a bucket past its quota: which limit, and the limit (bytes or entries). */
export interface QuotaRefusal {
  limit: 'size' | 'count';
  max: number;
}

/**
 * A lifecycle rule (`rules/add`): governs the keys whose longest rule prefix is `prefix` ('' = all); days counted
 * from each object's upload, 0 = not set, a negative transition = at upload (buckets/lifecycle-rules.ts evaluates
 * them). `ctime` Unix seconds. The `history*` days are kept and reported only (no object versions in Granary).
 */
export interface LifecycleRule {
  name: string;
  prefix: string;
  deleteAfterDays: number;
  toIAAfterDays: number;
  /** Days to Intelligent Tiering (type 5); absent in rules stored before it existed (= 0). */
  toIntelligentTieringAfterDays?: number;
  toArchiveIRAfterDays: number;
  toArchiveAfterDays: number;
  toDeepArchiveAfterDays: number;
  historyDeleteAfterDays?: number;
  historyToIAAfterDays?: number;
  ctime: number;
}

/** An S3 ACL permission (s3api/acl.ts). */
export type S3Permission = 'READ' | 'WRITE' | 'READ_ACP' | 'WRITE_ACP' | 'FULL_CONTROL';

/** One S3 ACL grant: a canonical user (an account's AccessKey) or a group (its URI), and the permission. */
export interface S3Grant {
  grantee: { type: 'CanonicalUser'; id: string } | { type: 'Group'; uri: string };
  permission: S3Permission;
}

/**
 * An S3 lifecycle rule as PutBucketLifecycleConfiguration sent it (buckets/s3-lifecycle.ts evaluates it; AWS
 * `LifecycleRule`). `filter` keeps the form it was sent in (`legacy`: the Rule's own `Prefix`; `none`: neither
 * Filter nor Prefix; `filter`: one condition or none; `and`: `Filter/And`); sizes in bytes; `date` an ISO 8601 UTC
 * midnight; days whole days. `kodo`: the name of the Kodo rule (`lifecycleRules`) this rule is kept as, when Kodo's
 * rules can express it (it is applied through that rule then).
 */
export interface S3LifecycleRule {
  id: string;
  enabled: boolean;
  filter: {
    form: 'legacy' | 'none' | 'filter' | 'and';
    prefix?: string;
    tags?: Array<[string, string]>;
    sizeGreaterThan?: number;
    sizeLessThan?: number;
  };
  expiration?: { days?: number; date?: string; expiredObjectDeleteMarker?: boolean };
  transitions?: Array<{ days: number; storageClass: string }>;
  noncurrentExpiration?: { days?: number; newerVersions?: number };
  noncurrentTransitions?: Array<{ days: number; storageClass: string; newerVersions?: number }>;
  abortIncompleteUploadDays?: number;
  kodo?: string;
}

/**
 * An event notification rule (`events/add`): events of keys with `prefix` and `suffix` are POSTed to
 * `callbackUrls`. `events` are Kodo's event names (put, mkfile, delete, copy, move, …). `ctime` Unix seconds.
 */
export interface EventRule {
  name: string;
  prefix: string;
  suffix: string;
  events: string[];
  callbackUrls: string[];
  /** AccessKey whose pair signs the notifications (default: the bucket owner's). */
  accessKey?: string;
  /** Host header sent to the callback URLs. */
  host?: string;
  ctime: number;
}

/**
 * A bucket's styles: `<key><sep><name>` (any one character of `separator`) serves the fop pipeline
 * `styles[name]` on `<key>`.
 */
export interface BucketStyles {
  separator: string;
  styles: Record<string, string>;
}

/** An account's key pair (besides the root pair, which lives in the config or the data dir). */
export interface AccessKeyRecord {
  accessKey: string;
  secretKey: string;
  ctime: number;
}

/** A download domain bound to a bucket. Times in Unix seconds. */
export interface DomainRecord {
  domain: string;
  bucket: string;
  ctime: number;
}

/** One page of a listing request (docs/development/kodo-protocol.md §8.3). Keys compare byte-lexicographically (UTF-8). */
export interface ListQuery {
  bucket: string;
  prefix: string;
  /** Roll keys up into common prefixes at this delimiter ('' = none). */
  delimiter: string;
  /** Resume after this key, or after every key under this common prefix (`afterPrefix`). */
  after?: { key: string; isPrefix: boolean };
  /** Items plus common prefixes, 1..1000. */
  limit: number;
  /** Entries expired at this time (Unix seconds; own expireAt or the bucket's lifecycle rules) are skipped. */
  nowSec: number;
}

/** A listing page, in order. `more` is true when the listing continues after the last entry. */
export interface ListPage {
  entries: Array<{ kind: 'item'; item: ObjectRecord } | { kind: 'prefix'; prefix: string }>;
  more: boolean;
}

/**
 * The resumable session an assembled object is made from (v1 blocks, or a v2 upload with the parts chosen by
 * complete): `commitPut` checks it is still there as it was and deletes it in the commit transaction, its
 * references moving to the manifest.
 */
export type SessionClaim =
  | { kind: 'blocks'; ids: string[] }
  | { kind: 'upload'; id: string; parts: Array<{ partNumber: number; blobId: string }> };

/** A manifest committed with its entry (commitPut): the new manifest id, its pieces in order, and their session. */
export interface ManifestCommit {
  id: string;
  pieces: ManifestPiece[];
  claim: SessionClaim;
}

/**
 * Outcome of `commitPut`. `freedBlobs` are blob ids no entry references any more: delete them after the commit.
 * 'session-lost': the claimed session of a manifest is gone (`gone`: a block or the upload was deleted) or a chosen
 * part was replaced (`replaced`) since the caller read it; nothing changed.
 */
export type PutOutcome =
  | { result: 'created' | 'replaced'; freedBlobs: string[]; previous?: ObjectRecord; versionId?: string }
  | { result: 'identical'; freedBlobs: string[]; existing: ObjectRecord }
  | { result: 'exists'; freedBlobs: string[]; existing: ObjectRecord }
  | { result: 'no-bucket'; freedBlobs: string[] }
  | { result: 'over-quota'; freedBlobs: string[]; refusal: QuotaRefusal }
  | { result: 'session-lost'; freedBlobs: string[]; reason: 'gone' | 'replaced' }
  | { result: 'refused'; freedBlobs: string[]; error: Error };

/**
 * A write precondition of `commitPut` (S3 `If-Match` / `If-None-Match` on PutObject and CompleteMultipartUpload):
 * called inside the commit transaction with the live entry under the key (undefined when none), it answers the
 * error refusing the commit, or undefined to let it proceed. It must be synchronous and pure (no I/O): the check
 * and the commit are one transaction, so concurrent writers cannot both pass a create-only check.
 */
export type PutPrecondition = (existing: ObjectRecord | undefined) => Error | undefined;

/** The options of `commitPut` (see there). */
export interface CommitPutOptions {
  insertOnly: boolean;
  nowSec: number;
  sums?: BlobSums;
  events?: OutboxRows;
  manifest?: ManifestCommit;
  inline?: Buffer;
  precondition?: PutPrecondition;
}

/** A v1 block being uploaded (mkblk/bput). `size` declared bytes; `offset` bytes received; times Unix seconds. */
export interface BlockRecord {
  id: string;
  accessKey: string;
  size: number;
  offset: number;
  /** Blob ids of the chunks, in order. */
  chunks: string[];
  expiresAt: number;
  /** SHA-1 of the complete block, URL-safe base64, when recorded (a block sent as one chunk: at mkblk). */
  sha1?: string;
}

/** A v2 multipart upload. `key` undefined when the object name was `~`. Times Unix seconds. */
export interface UploadRecord {
  id: string;
  accessKey: string;
  bucket: string;
  key?: string;
  createdAt: number;
  expiresAt: number;
}

/** One uploaded part. `etag` is the part's Kodo etag; `md5` lower-case hex; `putTime` Unix seconds. */
export interface PartRecord {
  partNumber: number;
  blobId: string;
  size: number;
  md5: string;
  etag: string;
  putTime: number;
  /**
   * SHA-1s (20 bytes each, concatenated) of the part's 4 MiB blocks, recorded for parts over 4 MiB (a part up to
   * 4 MiB has its one block's SHA-1 in its etag): complete composes the object's etag from them.
   */
  blockSha1s?: Buffer;
  /**
   * The additional checksum an S3 UploadPart verified (`<algorithm>:<base64>`, s3api/checksum.ts), absent when
   * none was sent: CompleteMultipartUpload composes the object's checksum from them.
   */
  checksum?: string;
}

/**
 * Resumable-upload sessions: v1 blocks (mkblk/bput) and v2 multipart uploads with their parts. Chunk and part
 * blobs hold one reference each (counted like entries' blobs) until their session is deleted.
 */
export interface SessionStore {
  /** Records a block with its first chunk (offset = chunk size) and that chunk's checksums. */
  createBlock(block: BlockRecord, sums?: BlobSums): Promise<void>;
  getBlock(id: string): Promise<BlockRecord | undefined>;
  /**
   * Appends a chunk iff the block's offset is still `expectOffset` (compare-and-set: a replayed or out-of-order
   * chunk answers 'mismatch'); returns the new offset.
   */
  appendChunk(
    id: string,
    expectOffset: number,
    chunk: { blobId: string; size: number; sums?: BlobSums },
  ): Promise<{ result: 'ok'; offset: number } | { result: 'mismatch' | 'missing' }>;
  /** Deletes blocks and drops their chunk references. */
  deleteBlocks(ids: string[]): Promise<{ freedBlobs: string[] }>;
  createUpload(upload: UploadRecord): Promise<void>;
  getUpload(id: string): Promise<UploadRecord | undefined>;
  /** Stores (or replaces) a part with its blob's checksums; 'missing' when the upload does not exist. */
  putPart(uploadId: string, part: PartRecord, sums?: BlobSums): Promise<{ result: 'ok' | 'missing'; freedBlobs: string[] }>;
  /** Parts with partNumber > `afterPart`, ascending, at most `limit`. */
  listParts(uploadId: string, afterPart: number, limit: number): Promise<PartRecord[]>;
  /**
   * Live uploads (expiring after `nowSec`) of `bucket` with a key starting with `prefix`, ordered by key then id,
   * after `after` (that key and id), at most `limit`. Uploads without a key (`~`) are not listed. For S3
   * ListMultipartUploads (docs/development/kodo-protocol.md §18.8).
   */
  listUploads(bucket: string, prefix: string, after: { key: string; id: string } | undefined, limit: number, nowSec: number): Promise<UploadRecord[]>;
  /** Deletes an upload and its parts; false when it did not exist. */
  deleteUpload(id: string): Promise<{ deleted: boolean; freedBlobs: string[] }>;
  /** Deletes blocks and uploads expired at `nowSec`; returns how many and the blobs freed. */
  deleteExpired(nowSec: number): Promise<{ sessions: number; freedBlobs: string[] }>;
}

export interface MetaStore extends VersionMaintenance {
  /** The async-fetch task queue (ports/fetch-tasks.ts), kept in the same database. */
  readonly fetchTasks: FetchTaskStore;
  /**
   * The outbox of bucket event notifications (ports/events.ts). The entry changes below take an optional `events`
   * builder: its events are written in the change's own transaction, only when the change commits.
   */
  readonly events: EventOutbox;
  /**
   * Bucket replication (ports/replication.ts): remote targets and the replication outbox, whose rows the entry
   * changes write through their `events` builder's `replicate` marks, in the change's own transaction.
   */
  readonly replication: ReplicationStore;
  /**
   * Lookups of `getBucketAndObject` answered from the store's per-process cache (`hits`) and read from the database
   * (`misses`), since the store was opened; absent when the store keeps no such cache (PostgreSQL). For metrics.
   */
  readonly readCache?: { readonly hits: number; readonly misses: number };

  // ---- buckets and domains ----
  /** Creates a bucket; false when it exists already. */
  createBucket(bucket: BucketRecord): Promise<boolean>;
  getBucket(name: string): Promise<BucketRecord | undefined>;
  listBuckets(): Promise<BucketRecord[]>;
  /** Drops an empty bucket and its domains. */
  dropBucket(name: string): Promise<'dropped' | 'missing' | 'not-empty'>;
  /** False when the bucket is missing. */
  setBucketPrivate(name: string, isPrivate: boolean): Promise<boolean>;
  /** Sets (or, with undefined, clears) the bucket's mirror source; false when the bucket is missing. */
  setBucketSource(name: string, source: { url: string; host?: string } | undefined): Promise<boolean>;
  /** Enables or disables the `nrop` fop for the bucket; false when the bucket is missing. */
  setBucketNrop(name: string, enabled: boolean): Promise<boolean>;
  /**
   * Changes a bucket's settings in one transaction: `mutate` gets the current ones (`{}` when never set) and returns
   * the new ones (it may throw to abort, nothing changes then). Undefined when the bucket is missing, else the
   * updated record.
   */
  updateBucketSettings(name: string, mutate: (current: BucketSettings) => BucketSettings): Promise<BucketRecord | undefined>;
  /**
   * Changes a bucket's styles in one transaction: `mutate` gets the current ones (defaults when never set) and
   * returns the new ones (it may throw to abort). False when the bucket is missing.
   */
  updateBucketStyles(name: string, mutate: (current: BucketStyles) => BucketStyles): Promise<boolean>;
  /** Binds `domain` (lower-case host name, no port) to a bucket: 'taken' when bound to another bucket. */
  bindDomain(domain: string, bucket: string, ctime: number): Promise<'bound' | 'taken' | 'no-bucket'>;
  unbindDomain(domain: string): Promise<boolean>;
  domainsOf(bucket: string): Promise<DomainRecord[]>;
  bucketOfDomain(domain: string): Promise<string | undefined>;

  // ---- entries ----
  // Lifecycle rules: reads (getObject, getBucketAndObject, listObjects) answer an entry as its bucket's lifecycle
  // rules make it — `expireAt` and `transitions` the earliest of its own and its rule's (buckets/lifecycle-rules.ts
  // `applyRules`) — while writes keep the entry's own values. Every operation counts an entry a rule has deleted
  // (`expiredByRules`) as absent, like one past its own expireAt.

  /** The entry (lifecycle rules applied; expired entries included: callers check `expireAt`). */
  getObject(bucket: string, key: string): Promise<ObjectRecord | undefined>;
  /**
   * The bucket and the entry under `key` in one read (the download path); the entry as `getObject` answers it,
   * plus the bytes of an inline blob (`ObjectRecord.inline`).
   */
  getBucketAndObject(bucket: string, key: string): Promise<{ bucket?: BucketRecord; object?: ObjectRecord }>;
  /**
   * Commits an entry pointing at a new blob, atomically. With `insertOnly`, an existing entry with the same
   * hash answers 'identical' (the new blob is freed) and one with another hash answers 'exists' (nothing
   * changes, the new blob is freed). Otherwise the entry is created or replaced and the old blob's reference
   * is dropped. Entries whose `expireAt` ≤ `nowSec` count as absent, and so does an existing entry with the same
   * hash whose blob is corrupt for 'identical' (the upload replaces it: re-uploading heals). `sums` are the new
   * blob's checksums, stored with its first reference. `events` get the entry when it is created or replaced.
   * Quota: a commit that would take the bucket past its `settings.quota` (more entries than `count`, or more bytes
   * than `size`; only a change that grows the dimension is refused) answers 'over-quota' and changes nothing. The
   * check runs in the same transaction that makes the entry visible, so it holds under concurrent commits.
   * `inline`: the content itself, stored with the blob's row (an inline blob id, store/inline-blob-store.ts) in the
   * same transaction instead of a file.
   * `manifest` (an object assembled from resumable pieces; `record.blobId` is then `manifest.id`): the manifest
   * and one reference on each piece are recorded in the same transaction, and the claimed session is deleted there
   * (its references on the pieces dropped: they move to the manifest); 'session-lost' when the session changed.
   * 'identical' consumes the session too (its pieces are freed); 'exists', 'over-quota' and 'no-bucket' leave it.
   * `precondition`: checked against the live entry in the transaction, before anything changes; the error it
   * answers becomes the 'refused' outcome (nothing changed, a claimed session left as it was).
   */
  commitPut(
    record: ObjectRecord,
    opts: CommitPutOptions,
  ): Promise<PutOutcome>;
  /**
   * Deletes a live entry; 'missing' when absent or expired. `events` get the deleted entry. `check` runs on the
   * live entry inside the transaction, before the deletion: an error it throws rejects the call and nothing changes
   * (the rs `cond` guard: 608).
   * Versioned bucket (ports/versions.ts): nothing is destroyed — the entry becomes a noncurrent version (a null one
   * under Suspended is replaced) and a delete marker becomes current; `marker` is its wire id. With `markMissing`
   * (S3 DeleteObject) a marker is added even when the key has no live entry.
   */
  deleteObject(
    bucket: string,
    key: string,
    nowSec: number,
    events?: OutboxRows,
    check?: (rec: ObjectRecord) => void,
    opts?: { markMissing?: boolean },
  ): Promise<{ result: 'deleted' | 'missing'; freedBlobs: string[]; marker?: string }>;
  /**
   * Copies an entry: the target references the same blob (one more reference, no bytes copied) with the given
   * `putTime` (100-ns units). With `force` a live target is replaced; without, 'exists'. 'over-quota' (nothing
   * changes) when the target bucket would pass its quota, as in commitPut. `events` get the copy (not called when
   * source and target are the same). `from.versionId` copies that version (a wire id; 'no-source' when it does not
   * exist or is a delete marker), even onto its own key (S3's restore of an old version).
   * Versioned target bucket: a replaced target becomes a noncurrent version; the copy's `versionId` is answered.
   */
  copyObject(
    from: { bucket: string; key: string; versionId?: string },
    to: { bucket: string; key: string },
    /** `lock`: the object lock asked for the copy (S3 CopyObject's lock headers); the source's is never carried. */
    opts: { force: boolean; nowSec: number; putTime: bigint; events?: OutboxRows; lock?: ObjectLock },
  ): Promise<{ result: 'copied' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal; versionId?: string }>;
  /**
   * Changes a live entry in one transaction: `mutate` gets the current record as stored (its own lifecycle) and the
   * same entry as reads answer it (`effective`: lifecycle rules applied), and returns the new stored record (it may
   * throw to abort, nothing changes then). Only attributes change; the blob, bucket and key stay. 'missing' when
   * the entry is absent or expired. `events` get the updated entry.
   */
  updateObject(
    bucket: string,
    key: string,
    nowSec: number,
    mutate: (rec: ObjectRecord, effective: ObjectRecord) => ObjectRecord,
    events?: OutboxRows,
  ): Promise<{ result: 'updated' | 'missing'; record?: ObjectRecord; freedBlobs: string[] }>;
  /**
   * Renames an entry atomically (the blob is shared, no bytes move). With `force`, a live entry at the target is
   * replaced (its blob reference dropped); without, it answers 'exists'. Expired entries count as absent.
   * 'over-quota' (nothing changes) when a move into another bucket would take it past its quota; a move within
   * one bucket never grows it. `events` get the entry at its target (not called when source and target are the same).
   */
  moveObject(
    from: { bucket: string; key: string },
    to: { bucket: string; key: string },
    opts: { force: boolean; nowSec: number; events?: OutboxRows },
  ): Promise<{ result: 'moved' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal }>;
  /** Deletes up to `limit` entries whose expireAt ≤ nowSec; returns the blobs they freed. */
  deleteExpired(nowSec: number, limit: number): Promise<{ deleted: number; freedBlobs: string[] }>;
  /**
   * One bounded step of deleting the entries of `bucket` whose key starts with `sel.prefix` but with none of
   * `sel.exclude` and whose putTime (100-ns units) is below `sel.putTimeBefore` (a lifecycle rule's deletions):
   * examines at most `scan` keys in key order after `after` (undefined = from the start of the prefix), in one
   * transaction, through the (bucket, key) index. `next` is where the next step resumes, absent when done.
   */
  deleteUnderPrefix(
    bucket: string,
    sel: { prefix: string; exclude: readonly string[]; putTimeBefore: bigint },
    after: string | undefined,
    scan: number,
  ): Promise<{ deleted: number; freedBlobs: string[]; next?: string }>;
  /** One page of a listing, served from the (bucket, key) index. */
  listObjects(query: ListQuery): Promise<ListPage>;

  // ---- versions (ports/versions.ts, docs/reference/versioning.md) ----
  // The current version of a key is the entry every method above reads and lists; a versioned bucket's commitPut,
  // copyObject and moveObject make the replaced entry a noncurrent version, and deletions (deleteObject, moveObject's
  // source, expiry: deleteExpired, deleteUnderPrefix, entries found expired) add a delete marker instead.

  /** Whether this store keeps versions (false: PutBucketVersioning is refused, NotImplemented). SQLite and PostgreSQL: true. */
  readonly keepsVersions: boolean;
  /**
   * A version of a key by wire id (`null` included), or (versionId undefined) its current version — the entry, or
   * the delete marker that is current. Undefined when there is none. Records carry their blob's integrity facts
   * and a manifest's pieces, as getObject's do; noncurrent ones have no expireAt.
   */
  getVersion(bucket: string, key: string, versionId: string | undefined): Promise<VersionRecord | undefined>;
  /**
   * Permanently deletes one version (S3 DeleteObject with versionId): its blob reference is released; deleting the
   * current entry makes the newest noncurrent version current (unless that is a delete marker). 'no-version' when
   * there is none; `deleteMarker` when the deleted version was a marker. `mutable` is the retention check
   * (objects/retention.ts `versionGuard`): called inside the deleting transaction with the version (not a marker)
   * before anything changes; what it throws (a 403 for a locked version) aborts the deletion. Required: no path may
   * destroy a version without it.
   */
  deleteVersion(
    bucket: string,
    key: string,
    versionId: string,
    events: OutboxRows | undefined,
    mutable: (rec: ObjectRecord) => void,
  ): Promise<{ result: 'deleted' | 'no-version'; deleteMarker: boolean; freedBlobs: string[] }>;
  /**
   * Changes one version's object lock in place (PutObjectRetention, PutObjectLegalHold; ports/object-lock.ts):
   * `change` gets the version's record (versionId undefined: the current version) inside a transaction and answers
   * its new lock (undefined = none), or throws to refuse (a lessened COMPLIANCE retention). 'no-version' when there
   * is no such version, 'delete-marker' when it is a marker (nothing changes then). Undefined when the store keeps
   * no versions (PostgreSQL today).
   */
  setVersionLock?(
    bucket: string,
    key: string,
    versionId: string | undefined,
    change: (rec: ObjectRecord) => ObjectLock | undefined,
  ): Promise<{ result: 'updated' | 'no-version' | 'delete-marker'; record?: ObjectRecord }>;
  /** One page of ListObjectVersions, streamed from the primary keys (never every version at once). */
  listVersions(query: VersionQuery): Promise<VersionPage>;
  /** Counts entries in a bucket (tests and CLI). */
  countObjects(bucket: string): Promise<number>;
  /**
   * A bucket's usage from counters kept in every transaction that adds, replaces or removes entries (no scan);
   * undefined when the bucket is missing.
   */
  bucketUsage(bucket: string): Promise<BucketUsage | undefined>;

  // ---- blobs ----
  /** The bytes of an inline blob (store/inline-blob-store.ts), undefined when there is no such blob. */
  inlineBlob(blobId: string): Promise<Buffer | undefined>;
  /**
   * Ids of inline blobs after `after` ('' from the start), in id order, at most `limit` (the master-key rotation,
   * cli/rotate-master.ts).
   */
  listInlineBlobIds(after: string, limit: number): Promise<string[]>;
  /**
   * Replaces the stored bytes of an inline blob (the master-key rotation re-wrapping an encrypted blob's header: the
   * plaintext is unchanged, so its checksums stay true). A missing blob is not an error.
   */
  replaceInlineBlob(blobId: string, data: Buffer): Promise<void>;
  /** Whether any entry references the blob (the orphan report and `granary gc`). */
  blobReferenced(blobId: string): Promise<boolean>;
  /**
   * Whether the metadata knows any file blob (one not inline): referenced by an entry or an upload session, or
   * pending deletion. The deployment check (store/deployment.ts) tells empty metadata from metadata with data.
   */
  knowsFileBlobs(): Promise<boolean>;
  /**
   * Blobs freed by a commit whose file deletion may not have happened (crash, failed unlink), ids after
   * `afterId` in id order (keyset pages: a failing deletion never blocks the ones after it).
   */
  pendingBlobDeletions(limit: number, afterId?: string): Promise<string[]>;
  /** Integrity facts of the given blobs (missing ids are left out). */
  blobStates(blobIds: string[]): Promise<Map<string, BlobState>>;
  /** Blobs in id order after `afterId`, at most `limit` (the scrubber's walk). */
  listBlobStates(afterId: string, limit: number): Promise<BlobState[]>;
  /** Every blob marked corrupt. */
  corruptBlobIds(): Promise<string[]>;
  /** Marks a blob corrupt; true when it was not marked before. */
  markBlobCorrupt(blobId: string): Promise<boolean>;
  /** Records checksums of a blob stored without them (upgrade in place), unless it has some already. */
  setBlobSums(blobId: string, size: number, sums: BlobSums): Promise<void>;
  /**
   * Entries whose blob has no checksums (stored before checksums existed), in (bucket, key) order after `after`,
   * at most `limit`: the scrubber verifies them against their etag and records checksums.
   */
  entriesWithoutSums(after: { bucket: string; key: string } | undefined, limit: number): Promise<ObjectRecord[]>;
  /**
   * Every entry referencing one of `blobIds`, directly or through a manifest holding it as a piece, as bucket/key/
   * blob (the blob of `blobIds` it holds; reports of corrupt blobs; scans the entries).
   */
  entriesOfBlobs(blobIds: string[]): Promise<Array<{ bucket: string; key: string; blobId: string }>>;
  /** Marks blob deletions done. */
  forgetBlobDeletions(blobIds: string[]): Promise<void>;

  /** Resumable-upload sessions (v1 blocks, v2 multipart uploads). */
  readonly sessions: SessionStore;

  /** The persistent-processing job queue and its pipelines (ports/job-queue.ts), kept in the same database. */
  readonly jobs: JobQueue;
  /**
   * The one durable task queue the job queue and the async-fetch tasks are views of (ports/tasks.ts): recovery
   * of a dead process's tasks of every kind in one call, and the depth by kind.
   */
  readonly tasks: TaskQueue;

  /** Workflow templates (ports/workflow-templates.ts), kept in the same database. */
  readonly workflowTemplates: WorkflowTemplateStore;

  /**
   * The web console's sessions and sign-in throttle (ports/console-sessions.ts), kept in the same database so
   * every worker process and cluster node shares them.
   */
  readonly consoleSessions: ConsoleSessionStore;

  /** The console Overview's history (ports/console-samples.ts), shared by every worker process and cluster node. */
  readonly consoleSamples: ConsoleSampleStore;

  /** Kodo IAM objects and their audit log (ports/iam.ts), shared by every worker process and cluster node. */
  readonly iam: IamStore;

  // ---- account key pairs ----
  createAccessKey(rec: AccessKeyRecord): Promise<void>;
  listAccessKeys(): Promise<AccessKeyRecord[]>;
  deleteAccessKey(accessKey: string): Promise<boolean>;

  // ---- key-value settings (root keys, schema version) ----
  getSetting(name: string): Promise<string | undefined>;
  setSetting(name: string, value: string): Promise<void>;
  /**
   * Sets `name` to `value` unless it is already set, atomically (processes racing at a first start agree);
   * resolves with the value now stored (`value`, or the one set first).
   */
  claimSetting(name: string, value: string): Promise<string>;

  /** Checks the database answers (a trivial read); rejects with the store's error otherwise. */
  ping(): Promise<void>;

  // ---- coordination of several processes sharing the store (workers/) ----
  /** The identity of the process using this store: recorded on queue claims (jobs, fetch tasks, events). */
  readonly owner: string;
  /** Leases (ports/leases.ts), kept in the same database. */
  readonly leases: LeaseStore;
  /**
   * A number that changes when another process (or connection) committed a write since the last call; cheap
   * enough to poll every few hundred ms (SQLite: `PRAGMA data_version`). Wake-ups of idle queue workers.
   */
  dataVersion(): number;
  /**
   * A counter bumped by every change of `topic`'s rows by any process (account keys, bound domains): the
   * in-memory views (ports/reloading.ts) poll it and reload only when it moved.
   */
  changeCount(topic: 'access_keys' | 'domains' | 'iam'): Promise<number>;

  close(): Promise<void>;
}
