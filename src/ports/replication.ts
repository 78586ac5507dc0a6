/**
 * The Replication port (docs/guides/replication.md): the remote targets replication copies to (with
 * their credentials, kept in the metadata only) and the durable replication outbox.
 *
 * Rules live in the bucket's settings (`BucketSettings.replication`, ports/meta.ts) so every change already has
 * them in hand; each names a target by its ARN. A change of an entry of a bucket with rules writes one outbox row
 * per (rule, key) in the SAME transaction as the change (the `replicate` marks of the `events` builder,
 * ports/events.ts): rows are coalesced per (rule, bucket, key) — a row records only that the key changed (`gen`
 * counts the changes), the worker copies the source's CURRENT state, so the latest intent always wins and the
 * destination converges.
 *
 * Life of a row: `waiting` → (claim, records `owner`) `running` → `done` (kept: the object's COMPLETED status;
 * a replicated delete removes the row) | back to `waiting` (a change arrived while it ran: `gen` moved) | `failed`
 * (kept retrying with back-off, status FAILED, the last error in `result`). Rows whose owner died go back to
 * `waiting` (`requeueAbandoned`, workers/recovery.ts). Times are Unix milliseconds.
 *
 * Implementation: store/sql/replication.ts (SQLite and PostgreSQL); the in-transaction write: store/sqlite/
 * event-outbox.ts and store/postgres/event-outbox.ts.
 */

/** A replication rule of a bucket (BucketSettings.replication): which keys go to which target, and how. */
export interface ReplicationRule {
  /** Unique in the bucket (S3 `Rule/ID`). */
  id: string;
  /** Only keys starting with it ('' = all). */
  prefix: string;
  /** The target's ARN (ReplicationTarget.arn). */
  target: string;
  /** Deletes replicate (S3 `DeleteMarkerReplication`); false: a deleted source object stays at the destination. */
  deletes: boolean;
  /** Objects that existed when the rule was added are copied too (S3 `ExistingObjectReplication`). */
  existing: boolean;
  /** The destination storage class (S3 `Destination/StorageClass`); absent: the destination's default. */
  storageClass?: string;
  /** S3 `Priority` (kept and answered). */
  priority: number;
  /** S3 `Status` Enabled; a disabled rule marks nothing. */
  enabled: boolean;
  /** Creation time, Unix seconds. */
  ctime: number;
  /** The S3 configuration's `Role`, as PutBucketReplication sent it (answered by Get; not used). */
  role?: string;
}

/** A remote target: an S3-compatible endpoint and bucket, and the key pair to write there. */
export interface ReplicationTarget {
  /** `arn:granary:replication::<id>:<bucket>` (what an S3 replication configuration's Destination/Bucket names). */
  arn: string;
  /** The source bucket (on this server) the target was created for. */
  sourceBucket: string;
  /** `http(s)://host[:port]` of the destination's S3 API. */
  endpoint: string;
  /** The destination's region (SigV4 scope). */
  region: string;
  bucket: string;
  accessKey: string;
  /** Never printed, logged or answered (masked views: `maskTarget`). */
  secretKey: string;
  /** Path-style addressing (`endpoint/bucket/key`), the default; false: virtual-hosted. */
  pathStyle: boolean;
  /** Bandwidth limit of all copies to this target, bytes per second (0: none). */
  bandwidth: number;
  createdMs: number;
}

/** `waiting`, `running`, `done` (COMPLETED), `failed` (FAILED, waiting for its next retry; `failed` flag). */
export type ReplicationState = 'waiting' | 'running' | 'done' | 'failed';

/** One row of the outbox: a key of a bucket to bring in step at one rule's target. */
export interface ReplicationItem {
  /** The row's sequence number, as text. */
  id: string;
  rule: string;
  bucket: string;
  key: string;
  state: ReplicationState;
  /** Changes recorded so far (the worker compares it at the end: moved → run again). */
  gen: number;
  attempts: number;
  /** The last error (waiting for a retry or failed) or what was done, text. */
  result?: string;
  /** Source size at the last change, bytes (0 for a delete). */
  size: number;
  /** When the oldest change not yet replicated was recorded. */
  createdMs: number;
  updatedMs: number;
  nextRunMs: number;
  /** What the last copy wrote: `<source identity> <destination ETag>` (so a retry never copies twice). */
  copied?: string;
  /** FAILED: the latest attempts failed GRANARY_REPLICATION_FAIL_AFTER times (kept while it is retried). */
  failed: boolean;
}

/** A key to mark as changed (in a change's transaction or by an initial sync). */
export interface ReplicationMark {
  rule: string;
  bucket: string;
  key: string;
  size: number;
  /** When the change was made (the Clock's Unix ms). */
  atMs: number;
}

/** Per-rule counts (metrics, `granary replication status`). */
export interface ReplicationRuleStats {
  bucket: string;
  rule: string;
  pending: number;
  pendingBytes: number;
  /** Creation time of the oldest pending row, or undefined when none. */
  oldestPendingMs?: number;
  failed: number;
  completed: number;
  /** The latest error of a failed or retried row, if any. */
  lastError?: string;
}

/** The replication store: targets and the outbox. */
export interface ReplicationStore {
  putTarget(t: ReplicationTarget): Promise<void>;
  getTarget(arn: string): Promise<ReplicationTarget | undefined>;
  listTargets(sourceBucket?: string): Promise<ReplicationTarget[]>;
  deleteTarget(arn: string): Promise<boolean>;

  /** Marks keys changed outside an entry transaction (initial sync, resync); one transaction. */
  mark(marks: readonly ReplicationMark[]): Promise<void>;
  /** Takes the next due `waiting`/`failed` row (oldest first); it becomes `running` with one more attempt. */
  claim(nowMs: number): Promise<ReplicationItem | undefined>;
  nextRunMs(): Promise<number | undefined>;
  /**
   * A running row of this process is done: kept as `done` with `copied` (or removed when `remove`, a replicated
   * delete) — unless its `gen` moved meanwhile, then it waits again at once. False when not running any more.
   */
  complete(item: ReplicationItem, result: string, copied: string | undefined, remove: boolean, nowMs: number): Promise<boolean>;
  /** A running row waits until `nextRunMs` (`failed` when `failed`), with `result` the error. */
  retryAt(item: ReplicationItem, nextRunMs: number, result: string, failed: boolean, nowMs: number): Promise<boolean>;
  /** A running row goes back to `waiting` at once, its attempt not counted (stopping). */
  release(id: string, nowMs: number): Promise<boolean>;
  /** Running rows whose owner holds no process lease go back to `waiting`; how many. */
  requeueAbandoned(nowMs: number): Promise<number>;
  /** The rows of `bucket`/`key` (one per rule). */
  statusOf(bucket: string, key: string): Promise<ReplicationItem[]>;
  /** Per-rule counts of every rule that has rows. */
  stats(nowMs: number): Promise<ReplicationRuleStats[]>;
  /** Rows not yet done (waiting, running, failed), all rules. */
  backlog(): Promise<number>;
  /** Deletes every row of a rule (the rule was removed); how many. */
  dropRule(bucket: string, rule: string): Promise<number>;
  /** Calls `listener` when this process wrote rows (after their commit). */
  subscribe(listener: () => void): () => void;
}

/** The S3 `x-amz-replication-status` of an object from its rows: FAILED > PENDING > COMPLETED; undefined: none. */
export function replicationStatus(rows: readonly ReplicationItem[]): 'PENDING' | 'COMPLETED' | 'FAILED' | undefined {
  if (rows.length === 0) return undefined;
  if (rows.some((r) => r.failed && r.state !== 'done')) return 'FAILED';
  if (rows.some((r) => r.state === 'waiting' || r.state === 'running')) return 'PENDING';
  return 'COMPLETED';
}

/** A target as it may be shown: the secret never, the AccessKey masked (`AKIA…7XQ`). */
export function maskTarget(t: ReplicationTarget): Omit<ReplicationTarget, 'secretKey' | 'accessKey'> & { accessKey: string } {
  const { secretKey: _secret, accessKey, ...rest } = t;
  return { ...rest, accessKey: maskKey(accessKey) };
}

/** An AccessKey masked for display: its first 4 and last 3 characters (all stars when short). */
export function maskKey(k: string): string {
  return k.length <= 8 ? '*'.repeat(k.length) : `${k.slice(0, 4)}…${k.slice(-3)}`;
}
