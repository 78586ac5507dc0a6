/**
 * MetaStore on SQLite (better-sqlite3), the embedded default.
 *
 * Several processes may share the database (worker processes, the CLI): every transaction that writes begins
 * IMMEDIATE (takes the write lock first, waiting up to busy_timeout), because a deferred one that reads, then
 * writes after another process committed fails at once with SQLITE_BUSY (its snapshot is stale) — busy_timeout
 * does not help there. better-sqlite3 is synchronous: a process waiting for the lock waits on its event loop.
 *
 * WAL journal with `synchronous=NORMAL` and group commit (group-commit.ts): every async method that changed the
 * database resolves only after an fdatasync of the WAL that began after its commit — shared by all commits pending
 * at that moment and run off the event loop — so a change is durable when its promise resolves (an upload is
 * acknowledged only after this). Checkpoints run in a worker thread once `startCheckpoints()` is called (the
 * server does; short-lived CLI connections keep SQLite's automatic checkpoint). Keys are TEXT compared with the BINARY collation, i.e. byte-lexicographic order of UTF-8.
 * `put_time` holds 100-ns units as a 64-bit integer and is read back as a bigint (safeIntegers).
 * Blob references are counted in `blobs`; a blob whose count reaches zero is recorded in `blob_deletions` in the
 * same transaction, so a crash before its file is unlinked leaks nothing (drained at start).
 * Per-bucket usage (bytes, entries) is counted by triggers and bucket quotas are enforced inside the commit
 * transactions of commitPut, copyObject and moveObject (bucket-usage.ts).
 * A bucket's lifecycle rules come from its settings column (lifecycle.ts): reads answer entries with their rule's
 * dates, and every liveness check counts an entry its rule deleted as expired.
 * Objects assembled from resumable pieces are manifests (manifests.ts): committed with their entry, counted like
 * blobs, read with their pieces by the single-entry reads.
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { applyRules, expiredByRules } from '../../buckets/lifecycle-rules.js';
import type { BlobState, BlobSums } from '../../ports/blob.js';
import type { OutboxRows } from '../../ports/events.js';
import { isManifestId } from '../../ports/manifest.js';
import type {
  AccessKeyRecord,
  BucketRecord,
  BucketSettings,
  BucketStyles,
  BucketUsage,
  DomainRecord,
  LifecycleRule,
  ListPage,
  CommitPutOptions,
  ListQuery,
  MetaStore,
  ObjectRecord,
  PutOutcome,
  QuotaRefusal,
} from '../../ports/meta.js';
import { BlobRefs } from './blob-refs.js';
import { Checkpointer, JOURNAL_LIMIT_BYTES } from './checkpointer.js';
import { CommitBatch } from './commit-batch.js';
import { WalSync, withGroupCommit } from './group-commit.js';
import { SqliteEventOutbox } from './event-outbox.js';
import { SqlReplication } from '../sql/replication.js';
import { SqlConsoleSessions } from '../sql/console-sessions.js';
import { SqlIamStore } from '../sql/iam.js';
import { SqlFetchTasks } from '../sql/fetch-tasks.js';
import { SqlJobQueue } from '../sql/jobs.js';
import { SqlLeases } from '../sql/leases.js';
import { SqlTasks } from '../sql/tasks.js';
import { SqlWorkflowTemplates } from '../sql/workflow-templates.js';
import { OverQuota, QuotaGuard } from './bucket-usage.js';
import { deleteUnderPrefix, rulesFromSettings, type SweepStep } from './lifecycle.js';
import { SqliteConsoleSamples } from './console-samples.js';
import { listPage } from './list-query.js';
import { ManifestReads } from './manifests.js';
import { rowParams, toBlobState, toRecord, type BlobRow, type ObjectRow } from './rows.js';
import { ReadCache } from './read-cache.js';
import { migrate, SCHEMA } from './schema.js';
import { SqliteSessions } from './sessions.js';
import { SqliteSqlDb } from './sql-db.js';
import { lockConfigFromSettings, SqliteVersions, versioningFromSettings } from './versions.js';
import type { VersioningState, VersionPage, VersionQuery, VersionRecord, VersionStats } from '../../ports/versions.js';
import { readVersionStats } from './version-stats.js';
import { lockOfNewVersion, type ObjectLock, type ObjectLockConfig } from '../../ports/object-lock.js';

/** What a bucket's settings make of its entries: lifecycle rules and versioning. */
interface BucketConf {
  rules: LifecycleRule[] | undefined;
  versioning: VersioningState | undefined;
  /** The bucket's object lock configuration (ports/object-lock.ts), undefined without. */
  objectLock: ObjectLockConfig | undefined;
}

/** The conf of a bucket's settings column (NULL = none). */
function confFromSettings(settings: string | null | undefined): BucketConf {
  return { rules: rulesFromSettings(settings), versioning: versioningFromSettings(settings), objectLock: lockConfigFromSettings(settings) };
}

/** 100-ns units → Unix milliseconds. */
function msOfUnits(units: bigint): number {
  return Number(units / 10_000n);
}

/**
 * Sets the lock of a new version `rec` about to be stored in a bucket with `config` (ports/object-lock.ts
 * `lockOfNewVersion`): the one `asked` for, else the bucket's default retention from `nowMs`; none in a bucket
 * without object lock.
 */
function setNewVersionLock(rec: ObjectRecord, config: ObjectLockConfig | undefined, asked: ObjectLock | undefined, nowMs: number): void {
  const lock = lockOfNewVersion(config, asked, nowMs);
  if (lock) rec.lock = lock;
  else delete rec.lock;
}

/** Unix seconds → 100-ns units (the time of a version made by a deletion, a move or an expiry). */
function unitsOf(nowSec: number): bigint {
  return BigInt(nowSec) * 10_000_000n;
}

/**
 * Adds the mirror source columns (NULL = none), the styles (JSON, NULL = never set) and the settings (JSON, NULL =
 * none) to a bucket record.
 */
function withSource(
  b: BucketRecord,
  source: string | null,
  host: string | null,
  styles: string | null = null,
  settings: string | null = null,
): BucketRecord {
  if (settings !== null) b.settings = JSON.parse(settings) as BucketSettings;
  if (source !== null) b.source = source;
  if (host !== null) b.sourceHost = host;
  if (styles !== null) b.styles = JSON.parse(styles) as BucketStyles;
  return b;
}

/** The columns of a bucket record. */
const BUCKET_COLUMNS = 'name, region, private, ctime, owner, source, source_host, nrop, styles, settings';

/** What getBucketAndObject answers. */
type BucketAndObject = { bucket?: BucketRecord; object?: ObjectRecord };

/** Default bound of the read cache, bytes (GRANARY_READ_CACHE_SIZE). */
const DEFAULT_READ_CACHE_BYTES = 32 * 1024 * 1024;

/** How long a write waits for another connection's write lock before failing with SQLITE_BUSY, ms. */
const BUSY_TIMEOUT_MS = 5000;

/** Styles of a bucket that never set any: separator `-`, no styles. */
const DEFAULT_STYLES: BucketStyles = { separator: '-', styles: {} };

export class SqliteMetaStore implements MetaStore {
  private readonly db: Database.Database;
  private readonly st;
  private readonly refs: BlobRefs;
  private readonly quota: QuotaGuard;
  private readonly manifests: ManifestReads;
  private readonly versions: SqliteVersions;
  readonly sessions: SqliteSessions;
  /** The async-fetch task queue (ports/fetch-tasks.ts). */
  readonly fetchTasks: SqlFetchTasks;
  /** The persistent-processing job queue (ports/job-queue.ts). */
  readonly jobs: SqlJobQueue;
  /** The one task queue both are views of (ports/tasks.ts): recovery and depth of every kind at once. */
  readonly tasks: SqlTasks;
  /** Workflow templates (ports/workflow-templates.ts). */
  readonly workflowTemplates: SqlWorkflowTemplates;
  /** The event notification outbox (ports/events.ts), written inside the entry transactions below. */
  readonly events: SqliteEventOutbox;
  /** Replication targets and outbox (ports/replication.ts); marks are written with the events. */
  readonly replication: SqlReplication;
  /** The shared WAL fdatasync of group commit (group-commit.ts). */
  readonly wal: WalSync;
  private checkpointer: Checkpointer | undefined;
  /** Upload commits sharing transactions (commit-batch.ts). */
  readonly batch: CommitBatch;
  /** Leases (ports/leases.ts): process liveness and singletons. */
  readonly leases: SqlLeases;
  /** Web console sessions and the sign-in throttle (ports/console-sessions.ts). */
  readonly consoleSessions: SqlConsoleSessions;
  /** The console Overview's history (ports/console-samples.ts). */
  readonly consoleSamples: SqliteConsoleSamples;
  /** Kodo IAM objects and audits (ports/iam.ts). */
  readonly iam: SqlIamStore;
  /** The identity of the process using this store (recorded on queue claims). */
  readonly owner: string;
  /** Download reads kept while the database is unchanged (read-cache.ts). */
  readonly readCache: ReadCache<BucketAndObject>;
  /** `PRAGMA data_version`, prepared once: read on every download lookup (the read cache) and by the coordinator. */
  private readonly dataVersionSt: Database.Statement;

  /**
   * Opens (and creates or migrates) the database file at `path`. `owner` is the identity of the process using it
   * (workers/identity.ts); offline users (CLI, tests) get a random one that never holds a process lease.
   * `readCacheBytes` bounds the download read cache (read-cache.ts; default 32 MiB, 0 = none); `cacheBytes` SQLite's
   * page cache of the connection (`PRAGMA cache_size`, GRANARY_SQLITE_CACHE_SIZE; default SQLite's as built by
   * better-sqlite3, 16,000 KiB).
   */
  constructor(
    private readonly path: string,
    owner?: string,
    options: { readCacheBytes?: number; cacheBytes?: number } = {},
  ) {
    this.owner = owner ?? `offline:${process.pid}:${randomBytes(6).toString('hex')}`;
    this.db = new Database(path);
    // Negative: KiB rather than pages.
    if (options.cacheBytes !== undefined) this.db.pragma(`cache_size = -${Math.max(1, Math.floor(options.cacheBytes / 1024))}`);
    this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    migrate(this.db);
    const db = this.db;
    this.refs = new BlobRefs(db);
    this.quota = new QuotaGuard(db, (bucket, key, blobId, nowSec, freed) => this.expireKey(bucket, key, blobId, nowSec, freed));
    this.versions = new SqliteVersions(db, this.refs);
    const totalChanges = db.prepare('SELECT total_changes()').pluck();
    const changes = (): number => Number(totalChanges.get());
    this.dataVersionSt = db.prepare('PRAGMA data_version').pluck();
    this.readCache = new ReadCache<BucketAndObject>(
      () => [this.dataVersion(), changes()],
      options.readCacheBytes ?? DEFAULT_READ_CACHE_BYTES,
      (v) => v.object?.inline?.length ?? 0,
    );
    this.wal = new WalSync(`${path}-wal`);
    this.batch = new CommitBatch(db, this.wal, BUSY_TIMEOUT_MS);
    const durable = <T extends object>(store: T): T => withGroupCommit(store, this.wal, changes);
    this.manifests = new ManifestReads(db);
    this.sessions = durable(new SqliteSessions(db, this.refs));
    // The queue-like stores are the shared SQL layer (store/sql/) on this connection; its SQLite dialect waits
    // for the WAL fdatasync itself after every change (sql-db.ts), so they are not wrapped.
    const sql = new SqliteSqlDb(db, this.wal);
    this.fetchTasks = new SqlFetchTasks(sql, this.owner);
    this.jobs = new SqlJobQueue(sql, this.owner);
    this.tasks = new SqlTasks(sql, this.owner);
    this.workflowTemplates = new SqlWorkflowTemplates(sql);
    this.replication = new SqlReplication(sql, this.owner);
    this.events = new SqliteEventOutbox(db, sql, this.owner, this.replication);
    this.leases = new SqlLeases(sql);
    this.consoleSessions = new SqlConsoleSessions(sql);
    this.consoleSamples = new SqliteConsoleSamples(db);
    this.iam = new SqlIamStore(sql);
    this.st = {
      getBucket: db.prepare(`SELECT ${BUCKET_COLUMNS} FROM buckets WHERE name = ?`),
      bucketSettings: db.prepare('SELECT settings FROM buckets WHERE name = ?'),
      listBuckets: db.prepare(`SELECT ${BUCKET_COLUMNS} FROM buckets ORDER BY name`),
      setStyles: db.prepare('UPDATE buckets SET styles = ? WHERE name = ?'),
      setSettings: db.prepare('UPDATE buckets SET settings = ? WHERE name = ?'),
      insertBucket: db.prepare(
        'INSERT OR IGNORE INTO buckets (name, region, private, ctime, owner) VALUES (?, ?, ?, ?, ?)',
      ),
      insertKey: db.prepare('INSERT INTO access_keys (access_key, secret_key, ctime) VALUES (?, ?, ?)'),
      listKeys: db.prepare('SELECT access_key, secret_key, ctime FROM access_keys ORDER BY ctime, access_key'),
      deleteKey: db.prepare('DELETE FROM access_keys WHERE access_key = ?'),
      anyObject: db.prepare('SELECT 1 FROM objects WHERE bucket = ? LIMIT 1'),
      deleteBucketDomains: db.prepare('DELETE FROM domains WHERE bucket = ?'),
      deleteBucket: db.prepare('DELETE FROM buckets WHERE name = ?'),
      setPrivate: db.prepare('UPDATE buckets SET private = ? WHERE name = ?'),
      setSource: db.prepare('UPDATE buckets SET source = ?, source_host = ? WHERE name = ?'),
      setNrop: db.prepare('UPDATE buckets SET nrop = ? WHERE name = ?'),
      domainOwner: db.prepare('SELECT bucket FROM domains WHERE domain = ?'),
      insertDomain: db.prepare('INSERT INTO domains (domain, bucket, ctime) VALUES (?, ?, ?)'),
      deleteDomain: db.prepare('DELETE FROM domains WHERE domain = ?'),
      domainsOf: db.prepare('SELECT domain, bucket, ctime FROM domains WHERE bucket = ? ORDER BY domain'),
      getObject: db.prepare('SELECT * FROM objects WHERE bucket = ? AND key = ?').safeIntegers(true),
      // The entry with its blob's integrity facts (single-entry reads: stat, download, fops).
      getObjectWithBlob: db
        .prepare(
          `SELECT o.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt
           FROM objects o LEFT JOIN blobs bl ON bl.id = o.blob_id WHERE o.bucket = ? AND o.key = ?`,
        )
        .safeIntegers(true),
      getBucketAndObject: db
        .prepare(
          `SELECT b.name AS b_name, b.region AS b_region, b.private AS b_private, b.ctime AS b_ctime,
                  b.owner AS b_owner, b.source AS b_source, b.source_host AS b_source_host,
                  b.nrop AS b_nrop, b.styles AS b_styles, b.settings AS b_settings, o.*,
                  bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt, ib.data AS ib_data
           FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = ?
             LEFT JOIN blobs bl ON bl.id = o.blob_id LEFT JOIN inline_blobs ib ON ib.id = o.blob_id
           WHERE b.name = ?`,
        )
        .safeIntegers(true),
      upsertObject: db.prepare(
        `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time, type, status, end_user, meta,
           expire_at, transitions, restore_status, restore_until, parts, version_id, version_sort, object_lock)
         VALUES (@bucket, @key, @blobId, @fsize, @hash, @md5, @mime, @putTime, @type, @status, @endUser, @meta,
           @expireAt, @transitions, @restoreStatus, @restoreUntil, @parts, @versionId, @versionSort, @objectLock)
         ON CONFLICT (bucket, key) DO UPDATE SET blob_id = excluded.blob_id, fsize = excluded.fsize,
           hash = excluded.hash, md5 = excluded.md5, mime = excluded.mime, put_time = excluded.put_time,
           type = excluded.type, status = excluded.status, end_user = excluded.end_user, meta = excluded.meta,
           expire_at = excluded.expire_at, transitions = excluded.transitions,
           restore_status = excluded.restore_status, restore_until = excluded.restore_until, parts = excluded.parts,
           version_id = excluded.version_id, version_sort = excluded.version_sort, object_lock = excluded.object_lock`,
      ),
      deleteObject: db.prepare('DELETE FROM objects WHERE bucket = ? AND key = ?'),
      blobExists: db.prepare('SELECT 1 FROM blobs WHERE id = ?'),
      // File blob ids are 32 hex characters; inline ones start with 'i' (store/inline-blob-store.ts).
      anyFileBlob: db.prepare(
        "SELECT 1 FROM blobs WHERE id NOT LIKE 'i%' UNION ALL SELECT 1 FROM blob_deletions WHERE id NOT LIKE 'i%' LIMIT 1",
      ),
      inlineBlob: db.prepare('SELECT data FROM inline_blobs WHERE id = ?'),
      pendingDeletions: db.prepare('SELECT id FROM blob_deletions WHERE id > ? ORDER BY id LIMIT ?'),
      blobState: db.prepare('SELECT id, size, block_bytes, sums, corrupt FROM blobs WHERE id = ?').safeIntegers(true),
      blobStates: db
        .prepare('SELECT id, size, block_bytes, sums, corrupt FROM blobs WHERE id > ? ORDER BY id LIMIT ?')
        .safeIntegers(true),
      corruptIds: db.prepare('SELECT id FROM blobs WHERE corrupt = 1'),
      markCorrupt: db.prepare('UPDATE blobs SET corrupt = 1 WHERE id = ? AND corrupt = 0'),
      setSums: db.prepare('UPDATE blobs SET size = ?, block_bytes = ?, sums = ? WHERE id = ? AND sums IS NULL'),
      blobCorrupt: db.prepare('SELECT 1 FROM blobs WHERE id = ? AND corrupt = 1'),
      withoutSums: db
        .prepare(
          `SELECT o.* FROM objects o JOIN blobs bl ON bl.id = o.blob_id
           WHERE (o.bucket, o.key) > (?, ?) AND bl.sums IS NULL AND bl.corrupt = 0 AND o.blob_id NOT GLOB 'm*'
           ORDER BY o.bucket, o.key LIMIT ?`,
        )
        .safeIntegers(true),
      // No index on blob_id (it would cost every commit): one scan of the entries for a whole list of blobs, and
      // one for the manifests holding them as pieces.
      entriesOfBlobs: db.prepare(
        `SELECT bucket, key, blob_id FROM objects WHERE blob_id IN (SELECT value FROM json_each(@ids))
         UNION ALL
         SELECT o.bucket, o.key, mp.piece_id AS blob_id FROM objects o
           JOIN manifest_pieces mp ON mp.manifest_id = o.blob_id
         WHERE o.blob_id GLOB 'm*' AND mp.piece_id IN (SELECT value FROM json_each(@ids))`,
      ),
      forgetDeletion: db.prepare('DELETE FROM blob_deletions WHERE id = ?'),
      expired: db
        .prepare('SELECT * FROM objects WHERE expire_at IS NOT NULL AND expire_at <= ? LIMIT ?')
        .safeIntegers(true),
      ping: db.prepare('SELECT COUNT(*) FROM settings'),
      countObjects: db.prepare('SELECT COUNT(*) AS n FROM objects WHERE bucket = ?'),
      getSetting: db.prepare('SELECT value FROM settings WHERE name = ?'),
      changeCount: db.prepare('SELECT n FROM change_counters WHERE topic = ?'),
      setSetting: db.prepare(
        'INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
      ),
      claimSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING'),
    };
    // Callers hold the group-committing view of the store (its own methods call each other unwrapped).
    return withGroupCommit(this, this.wal, changes);
  }

  private bucketRow(row: unknown): BucketRecord | undefined {
    if (!row) return undefined;
    const r = row as {
      name: string;
      region: string;
      private: number;
      ctime: number;
      owner: string;
      source: string | null;
      source_host: string | null;
      nrop: number;
      styles: string | null;
      settings: string | null;
    };
    const b: BucketRecord = {
      name: r.name,
      region: r.region,
      private: r.private === 1,
      ctime: r.ctime,
      owner: r.owner,
      nrop: r.nrop === 1,
      settings: {},
    };
    return withSource(b, r.source, r.source_host, r.styles, r.settings);
  }

  /**
   * Runs a commit transaction; a change refused by a bucket quota (OverQuota thrown inside, the transaction rolled
   * back, so the blobs it would have freed stay referenced) becomes the 'over-quota' outcome.
   */
  private commit<T>(fn: () => T): T | { result: 'over-quota'; freedBlobs: string[]; refusal: QuotaRefusal } {
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      if (err instanceof OverQuota) return { result: 'over-quota', freedBlobs: [], refusal: err.refusal };
      throw err;
    }
  }

  /**
   * Runs a commit body in the next shared transaction (commit-batch.ts); resolves once durable. A body refused by
   * a bucket quota (OverQuota thrown, its savepoint rolled back) becomes the 'over-quota' outcome.
   */
  private batched<T>(fn: () => T): Promise<T | { result: 'over-quota'; freedBlobs: string[]; refusal: QuotaRefusal }> {
    return this.batch.run(fn).catch((err: unknown) => {
      if (err instanceof OverQuota) return { result: 'over-quota' as const, freedBlobs: [], refusal: err.refusal };
      throw err;
    });
  }

  async createBucket(b: BucketRecord): Promise<boolean> {
    return this.st.insertBucket.run(b.name, b.region, b.private ? 1 : 0, b.ctime, b.owner).changes === 1;
  }

  async getBucket(name: string): Promise<BucketRecord | undefined> {
    return this.bucketRow(this.st.getBucket.get(name));
  }

  async listBuckets(): Promise<BucketRecord[]> {
    return this.st.listBuckets.all().map((r) => this.bucketRow(r) as BucketRecord);
  }

  async dropBucket(name: string): Promise<'dropped' | 'missing' | 'not-empty'> {
    return this.db.transaction((): 'dropped' | 'missing' | 'not-empty' => {
      if (!this.st.getBucket.get(name)) return 'missing';
      if (this.st.anyObject.get(name) || this.versions.anyIn(name)) return 'not-empty';
      this.st.deleteBucketDomains.run(name);
      this.st.deleteBucket.run(name);
      return 'dropped';
    }).immediate();
  }

  async setBucketPrivate(name: string, isPrivate: boolean): Promise<boolean> {
    return this.st.setPrivate.run(isPrivate ? 1 : 0, name).changes === 1;
  }

  async setBucketSource(name: string, source: { url: string; host?: string } | undefined): Promise<boolean> {
    return this.st.setSource.run(source?.url ?? null, source?.host ?? null, name).changes === 1;
  }

  async setBucketNrop(name: string, enabled: boolean): Promise<boolean> {
    return this.st.setNrop.run(enabled ? 1 : 0, name).changes === 1;
  }

  async updateBucketSettings(name: string, mutate: (current: BucketSettings) => BucketSettings): Promise<BucketRecord | undefined> {
    return this.db.transaction((): BucketRecord | undefined => {
      const b = this.bucketRow(this.st.getBucket.get(name));
      if (!b) return undefined;
      const settings = mutate(b.settings);
      this.st.setSettings.run(Object.keys(settings).length > 0 ? JSON.stringify(settings) : null, name);
      return { ...b, settings };
    }).immediate();
  }

  async updateBucketStyles(name: string, mutate: (current: BucketStyles) => BucketStyles): Promise<boolean> {
    return this.db.transaction((): boolean => {
      const b = this.bucketRow(this.st.getBucket.get(name));
      if (!b) return false;
      const next = mutate(b.styles ?? { separator: DEFAULT_STYLES.separator, styles: {} });
      this.st.setStyles.run(JSON.stringify(next), name);
      return true;
    }).immediate();
  }

  async bindDomain(domain: string, bucket: string, ctime: number): Promise<'bound' | 'taken' | 'no-bucket'> {
    return this.db.transaction((): 'bound' | 'taken' | 'no-bucket' => {
      if (!this.st.getBucket.get(bucket)) return 'no-bucket';
      const owner = this.st.domainOwner.get(domain) as { bucket: string } | undefined;
      if (owner) return owner.bucket === bucket ? 'bound' : 'taken';
      this.st.insertDomain.run(domain, bucket, ctime);
      return 'bound';
    }).immediate();
  }

  async unbindDomain(domain: string): Promise<boolean> {
    return this.st.deleteDomain.run(domain).changes === 1;
  }

  async domainsOf(bucket: string): Promise<DomainRecord[]> {
    return this.st.domainsOf.all(bucket) as DomainRecord[];
  }

  async bucketOfDomain(domain: string): Promise<string | undefined> {
    return (this.st.domainOwner.get(domain) as { bucket: string } | undefined)?.bucket;
  }

  async getObject(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const row = this.st.getObjectWithBlob.get(bucket, key) as ObjectRow | undefined;
    return row ? applyRules(this.withPieces(toRecord(row)), this.rulesOf(bucket)) : undefined;
  }

  /** A single-entry read's record with its manifest's pieces (and `corrupt` when one of them is). */
  private withPieces(rec: ObjectRecord): ObjectRecord {
    if (!isManifestId(rec.blobId)) return rec;
    const { pieces, corrupt } = this.manifests.piecesOf(rec.blobId);
    rec.pieces = pieces;
    if (corrupt) rec.corrupt = true;
    return rec;
  }

  /** Whether the blob, or any piece of the manifest, is marked corrupt (inside a transaction). */
  private isCorrupt(blobId: string): boolean {
    return isManifestId(blobId) ? this.manifests.piecesOf(blobId).corrupt : this.st.blobCorrupt.get(blobId) !== undefined;
  }

  /** Answered from the read cache (read-cache.ts) while the database is unchanged; frozen records. */
  async getBucketAndObject(bucket: string, key: string): Promise<BucketAndObject> {
    return this.readCache.get(bucket, key, () => this.readBucketAndObject(bucket, key));
  }

  /** The download read itself: one statement for the bucket, the entry, its blob's facts and inline bytes. */
  private readBucketAndObject(bucket: string, key: string): BucketAndObject {
    const row = this.st.getBucketAndObject.get(key, bucket) as
      | (ObjectRow & {
          b_name: string;
          b_region: string;
          b_private: bigint;
          b_ctime: bigint;
          b_owner: string;
          b_source: string | null;
          b_source_host: string | null;
          b_nrop: bigint;
          b_styles: string | null;
          b_settings: string | null;
        })
      | undefined;
    if (!row) return {};
    const b = withSource(
      {
        name: row.b_name,
        region: row.b_region,
        private: row.b_private === 1n,
        ctime: Number(row.b_ctime),
        owner: row.b_owner,
        nrop: row.b_nrop === 1n,
        settings: {},
      },
      row.b_source,
      row.b_source_host,
      row.b_styles,
      row.b_settings,
    );
    if (row.blob_id === null) return { bucket: b };
    return { bucket: b, object: applyRules(this.withPieces(toRecord(row)), rulesFromSettings(row.b_settings)) };
  }

  async commitPut(
    rec: ObjectRecord,
    opts: CommitPutOptions,
  ): Promise<PutOutcome> {
    return this.batched((): PutOutcome => {
      const freed: string[] = [];
      const bucket = this.st.getBucket.get(rec.bucket) as { settings: string | null } | undefined;
      if (!bucket) return { result: 'no-bucket', freedBlobs: freed };
      const manifest = opts.manifest;
      const lost = manifest && this.sessions.claimLost(manifest.claim);
      if (lost) return { result: 'session-lost', freedBlobs: freed, reason: lost };
      const conf = confFromSettings(bucket.settings);
      const existing = this.liveRow(rec.bucket, rec.key, opts.nowSec, freed, conf);
      const refusal = opts.precondition?.(existing);
      if (refusal) return { result: 'refused', freedBlobs: freed, error: refusal };
      // Identical content whose stored copy is corrupt is replaced, not kept: uploading it again heals the entry.
      if (existing && opts.insertOnly && !(existing.hash === rec.hash && this.isCorrupt(existing.blobId))) {
        const result = existing.hash === rec.hash ? 'identical' : 'exists';
        // The upload of identical content succeeds: its session is consumed (its pieces freed).
        if (manifest && result === 'identical') this.sessions.dropClaimed(manifest.claim, freed);
        return { result, freedBlobs: freed, existing };
      }
      this.quota.run(rec.bucket, opts.nowSec, freed, () => {
        if (manifest) this.refs.addManifest(manifest.id, rec.fsize, manifest.pieces);
        else this.refs.add(rec.blobId, rec.fsize, opts.sums, opts.inline);
        // A versioned bucket keeps the replaced entry as a noncurrent version (versions.ts).
        if (existing) this.versions.retire(existing, conf.versioning, freed);
        this.versions.assign(rec, conf.versioning, rec.putTime, freed);
        setNewVersionLock(rec, conf.objectLock, rec.lock, msOfUnits(rec.putTime));
        this.st.upsertObject.run(rowParams(rec));
        // The pieces now hold the manifest's references: the session's go with it.
        if (manifest) this.sessions.dropClaimed(manifest.claim, freed);
      });
      this.events.write(opts.events, rec);
      const version = rec.versionId !== undefined ? { versionId: rec.versionId } : {};
      return existing
        ? { result: 'replaced', freedBlobs: freed, previous: existing, ...version }
        : { result: 'created', freedBlobs: freed, ...version };
    });
  }

  /** The lifecycle rules of a bucket (undefined when none, or no such bucket). */
  private rulesOf(bucket: string): LifecycleRule[] | undefined {
    return rulesFromSettings((this.st.bucketSettings.get(bucket) as { settings: string | null } | undefined)?.settings);
  }

  /** The lifecycle rules and versioning state of a bucket (none when no such bucket). */
  private confOf(bucket: string): BucketConf {
    return confFromSettings((this.st.bucketSettings.get(bucket) as { settings: string | null } | undefined)?.settings);
  }

  /**
   * The live entry at (bucket, key) inside a transaction, as stored (its own lifecycle); an expired one — past its
   * own expireAt or deleted by the bucket's lifecycle `rules` — is removed (`expire`). `conf` is required: a default
   * parameter read the settings again for every bucket without rules.
   */
  private liveRow(bucket: string, key: string, nowSec: number, freed: string[], conf: BucketConf): ObjectRecord | undefined {
    const row = this.st.getObject.get(bucket, key) as ObjectRow | undefined;
    if (!row) return undefined;
    const rec = toRecord(row);
    if ((rec.expireAt !== undefined && rec.expireAt <= nowSec) || expiredByRules(conf.rules, key, rec.putTime, nowSec)) {
      this.expire(rec, conf.versioning, nowSec, freed);
      return undefined;
    }
    return rec;
  }

  /**
   * Removes the current entry `rec` (a deletion or an expiry) inside a transaction: unversioned, its row goes and its
   * blob is released; versioned, it becomes a noncurrent version and a delete marker becomes current (its wire id
   * answered).
   */
  private expire(rec: ObjectRecord, versioning: VersioningState | undefined, nowSec: number, freed: string[]): string | undefined {
    this.st.deleteObject.run(rec.bucket, rec.key);
    this.versions.retire(rec, versioning, freed);
    return versioning ? this.versions.addMarker(rec.bucket, rec.key, versioning, unitsOf(nowSec), freed) : undefined;
  }

  /**
   * Removes the current entry at (bucket, key) found expired by a sweep (`blobId` its blob), as `expire` does. `conf`:
   * the bucket's, when the caller read it already in this transaction.
   */
  private expireKey(bucket: string, key: string, blobId: string, nowSec: number, freed: string[], conf = this.confOf(bucket)): void {
    if (!conf.versioning) {
      this.st.deleteObject.run(bucket, key);
      this.refs.release(blobId, freed);
      return;
    }
    const row = this.st.getObject.get(bucket, key) as ObjectRow | undefined;
    if (row) this.expire(toRecord(row), conf.versioning, nowSec, freed);
  }

  async deleteObject(
    bucket: string,
    key: string,
    nowSec: number,
    events?: OutboxRows,
    check?: (rec: ObjectRecord) => void,
    opts: { markMissing?: boolean } = {},
  ): Promise<{ result: 'deleted' | 'missing'; freedBlobs: string[]; marker?: string }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      const conf = this.confOf(bucket);
      const rec = this.liveRow(bucket, key, nowSec, freed, conf);
      if (!rec) {
        if (!conf.versioning || !opts.markMissing) return { result: 'missing' as const, freedBlobs: freed };
        const marker = this.versions.addMarker(bucket, key, conf.versioning, unitsOf(nowSec), freed);
        return { result: 'deleted' as const, freedBlobs: freed, marker };
      }
      check?.(rec);
      const marker = this.expire(rec, conf.versioning, nowSec, freed);
      this.events.write(events, rec);
      return { result: 'deleted' as const, freedBlobs: freed, ...(marker !== undefined ? { marker } : {}) };
    }).immediate();
  }

  async copyObject(
    from: { bucket: string; key: string; versionId?: string },
    to: { bucket: string; key: string },
    opts: { force: boolean; nowSec: number; putTime: bigint; events?: OutboxRows; lock?: ObjectLock },
  ): Promise<{ result: 'copied' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal; versionId?: string }> {
    return this.commit(() => {
      const freed: string[] = [];
      let src: ObjectRecord | undefined;
      if (from.versionId !== undefined) {
        const v = this.versions.get(from.bucket, from.key, from.versionId);
        src = v && !v.deleteMarker ? v.record : undefined;
      } else src = this.liveRow(from.bucket, from.key, opts.nowSec, freed, this.confOf(from.bucket));
      if (!src) return { result: 'no-source' as const, freedBlobs: freed };
      if (!this.st.getBucket.get(to.bucket)) return { result: 'no-bucket' as const, freedBlobs: freed };
      if (from.bucket === to.bucket && from.key === to.key && from.versionId === undefined) {
        return { result: opts.force ? ('copied' as const) : ('exists' as const), freedBlobs: freed };
      }
      const conf = this.confOf(to.bucket);
      const dst = this.liveRow(to.bucket, to.key, opts.nowSec, freed, conf);
      if (dst && !opts.force) return { result: 'exists' as const, freedBlobs: freed };
      const copy: ObjectRecord = { ...src, bucket: to.bucket, key: to.key, putTime: opts.putTime };
      delete copy.sums;
      delete copy.corrupt;
      delete copy.pieces;
      // A copy does not carry the source's lock: it gets the one asked for, or the target bucket's default.
      setNewVersionLock(copy, conf.objectLock, opts.lock, msOfUnits(opts.putTime));
      this.quota.run(to.bucket, opts.nowSec, freed, () => {
        this.refs.add(src.blobId);
        if (dst) this.versions.retire(dst, conf.versioning, freed);
        this.versions.assign(copy, conf.versioning, opts.putTime, freed);
        this.st.upsertObject.run(rowParams(copy));
      });
      this.events.write(opts.events, copy);
      return { result: 'copied' as const, freedBlobs: freed, ...(copy.versionId !== undefined ? { versionId: copy.versionId } : {}) };
    });
  }

  async updateObject(
    bucket: string,
    key: string,
    nowSec: number,
    mutate: (rec: ObjectRecord, effective: ObjectRecord) => ObjectRecord,
    events?: OutboxRows,
  ): Promise<{ result: 'updated' | 'missing'; record?: ObjectRecord; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      const conf = this.confOf(bucket);
      const rec = this.liveRow(bucket, key, nowSec, freed, conf);
      if (!rec) return { result: 'missing' as const, freedBlobs: freed };
      const next = mutate(rec, applyRules(rec, conf.rules));
      // Attributes change in place: the version (id, ordering) stays the entry's.
      const stored = { ...next, bucket, key, blobId: rec.blobId };
      if (rec.versionId !== undefined) stored.versionId = rec.versionId;
      if (rec.versionSort !== undefined) stored.versionSort = rec.versionSort;
      // The version's object lock changes only through setVersionLock: an attribute change never touches it.
      if (rec.lock) stored.lock = rec.lock;
      else delete stored.lock;
      this.st.upsertObject.run(rowParams(stored));
      this.events.write(events, stored);
      return { result: 'updated' as const, record: next, freedBlobs: freed };
    }).immediate();
  }

  async moveObject(
    from: { bucket: string; key: string },
    to: { bucket: string; key: string },
    opts: { force: boolean; nowSec: number; events?: OutboxRows },
  ): Promise<{ result: 'moved' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal }> {
    return this.commit(() => {
      const freed: string[] = [];
      const fromConf = this.confOf(from.bucket);
      const src = this.liveRow(from.bucket, from.key, opts.nowSec, freed, fromConf);
      if (!src) return { result: 'no-source' as const, freedBlobs: freed };
      if (!this.st.getBucket.get(to.bucket)) return { result: 'no-bucket' as const, freedBlobs: freed };
      if (from.bucket === to.bucket && from.key === to.key) return { result: 'moved' as const, freedBlobs: freed };
      const conf = from.bucket === to.bucket ? fromConf : this.confOf(to.bucket);
      const dst = this.liveRow(to.bucket, to.key, opts.nowSec, freed, conf);
      if (dst && !opts.force) return { result: 'exists' as const, freedBlobs: freed };
      const moved: ObjectRecord = { ...src, bucket: to.bucket, key: to.key };
      // The moved version is a new version of the target: the target bucket's default lock, not the source's.
      setNewVersionLock(moved, conf.objectLock, undefined, opts.nowSec * 1000);
      // Within one bucket a move never grows it; into another, the target bucket's quota applies.
      this.quota.run(to.bucket, opts.nowSec, freed, () => {
        if (dst) {
          this.st.deleteObject.run(to.bucket, to.key);
          this.versions.retire(dst, conf.versioning, freed);
        }
        // A versioned source keeps its entry as a noncurrent version (its own reference) under a delete marker:
        // the moved entry takes one more reference on the same blob.
        if (fromConf.versioning) {
          this.refs.add(src.blobId);
          this.expire(src, fromConf.versioning, opts.nowSec, freed);
        } else this.st.deleteObject.run(from.bucket, from.key);
        this.versions.assign(moved, conf.versioning, unitsOf(opts.nowSec), freed);
        this.st.upsertObject.run(rowParams(moved));
      });
      this.events.write(opts.events, moved);
      return { result: 'moved' as const, freedBlobs: freed };
    });
  }

  async deleteExpired(nowSec: number, limit: number): Promise<{ deleted: number; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      const rows = this.st.expired.all(nowSec, limit) as ObjectRow[];
      for (const row of rows) this.expireKey(row.bucket, row.key, row.blob_id, nowSec, freed);
      return { deleted: rows.length, freedBlobs: freed };
    }).immediate();
  }

  async deleteUnderPrefix(
    bucket: string,
    sel: { prefix: string; exclude: readonly string[]; putTimeBefore: bigint },
    after: string | undefined,
    scan: number,
  ): Promise<SweepStep> {
    const nowSec = Math.floor(Date.now() / 1000);
    // The bucket's settings are read once per step, inside its transaction (at its first expired key).
    let conf: BucketConf | undefined;
    return deleteUnderPrefix(this.db, bucket, sel, after, scan, (key, blobId, freed) => {
      conf ??= this.confOf(bucket);
      this.expireKey(bucket, key, blobId, nowSec, freed, conf);
    });
  }

  get keepsVersions(): boolean {
    return true;
  }

  async getVersion(bucket: string, key: string, versionId: string | undefined): Promise<VersionRecord | undefined> {
    const v = this.versions.get(bucket, key, versionId);
    if (v && !v.deleteMarker) v.record = this.withPieces(v.isLatest ? applyRules(v.record, this.rulesOf(bucket)) : v.record);
    return v;
  }

  async deleteVersion(
    bucket: string,
    key: string,
    versionId: string,
    events: OutboxRows | undefined,
    mutable: (rec: ObjectRecord) => void,
  ): Promise<{ result: 'deleted' | 'no-version'; deleteMarker: boolean; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      const found = this.versions.get(bucket, key, versionId);
      // The retention check, inside the transaction that deletes (objects/retention.ts).
      if (found && !found.deleteMarker) mutable(found.record);
      const out = this.versions.deleteVersion(bucket, key, versionId, freed, (rec) => this.st.upsertObject.run(rowParams(rec)));
      if (!out || !found) return { result: 'no-version' as const, deleteMarker: false, freedBlobs: freed };
      this.events.write(events, found.record);
      return { result: 'deleted' as const, deleteMarker: out.deleteMarker, freedBlobs: freed };
    }).immediate();
  }

  async setVersionLock(
    bucket: string,
    key: string,
    versionId: string | undefined,
    change: (rec: ObjectRecord) => ObjectLock | undefined,
  ): Promise<{ result: 'updated' | 'no-version' | 'delete-marker'; record?: ObjectRecord }> {
    return this.db.transaction(() => {
      const found = this.versions.get(bucket, key, versionId);
      if (!found) return { result: 'no-version' as const };
      if (found.deleteMarker) return { result: 'delete-marker' as const };
      const lock = change(found.record);
      this.versions.setLock(found, lock);
      const record = { ...found.record };
      if (lock) record.lock = lock;
      else delete record.lock;
      return { result: 'updated' as const, record };
    }).immediate();
  }

  async listVersions(query: VersionQuery): Promise<VersionPage> {
    return this.versions.listPage(query);
  }

  async expireNoncurrentVersion(
    bucket: string,
    key: string,
    sortId: string,
    mutable: (rec: ObjectRecord) => void,
  ): Promise<{ deleted: boolean; freedBlobs: string[] }> {
    return this.db.transaction(() => {
      const freed: string[] = [];
      return { deleted: this.versions.expireNoncurrent(bucket, key, sortId, freed, mutable), freedBlobs: freed };
    }).immediate();
  }

  async removeExpiredDeleteMarker(bucket: string, key: string, sortId: string): Promise<boolean> {
    return this.db.transaction(() => this.versions.removeSoleMarker(bucket, key, sortId)).immediate();
  }

  async versionStats(): Promise<Map<string, VersionStats>> {
    return readVersionStats(this.db);
  }

  async listObjects(query: ListQuery): Promise<ListPage> {
    return listPage(this.db, query, this.rulesOf(query.bucket));
  }

  async countObjects(bucket: string): Promise<number> {
    return (this.st.countObjects.get(bucket) as { n: number }).n;
  }

  async bucketUsage(bucket: string): Promise<BucketUsage | undefined> {
    return this.st.getBucket.get(bucket) ? this.quota.usage(bucket) : undefined;
  }

  async inlineBlob(blobId: string): Promise<Buffer | undefined> {
    return (this.st.inlineBlob.get(blobId) as { data: Buffer } | undefined)?.data;
  }

  async listInlineBlobIds(after: string, limit: number): Promise<string[]> {
    return (this.db.prepare('SELECT id FROM inline_blobs WHERE id > ? ORDER BY id LIMIT ?').all(after, limit) as { id: string }[]).map((r) => r.id);
  }

  /** Offline use (the rotation runs with the server stopped): written directly, no read cache to update. */
  async replaceInlineBlob(blobId: string, data: Buffer): Promise<void> {
    this.db.prepare('UPDATE inline_blobs SET data = ? WHERE id = ?').run(data, blobId);
  }

  async blobReferenced(blobId: string): Promise<boolean> {
    return this.st.blobExists.get(blobId) !== undefined;
  }

  async knowsFileBlobs(): Promise<boolean> {
    return this.st.anyFileBlob.get() !== undefined;
  }

  async pendingBlobDeletions(limit: number, afterId = ''): Promise<string[]> {
    return (this.st.pendingDeletions.all(afterId, limit) as { id: string }[]).map((r) => r.id);
  }

  async blobStates(blobIds: string[]): Promise<Map<string, BlobState>> {
    const out = new Map<string, BlobState>();
    for (const id of blobIds) {
      const row = this.st.blobState.get(id) as BlobRow | undefined;
      if (row) out.set(id, toBlobState(row));
    }
    return out;
  }

  async listBlobStates(afterId: string, limit: number): Promise<BlobState[]> {
    return (this.st.blobStates.all(afterId, limit) as BlobRow[]).map(toBlobState);
  }

  async corruptBlobIds(): Promise<string[]> {
    return (this.st.corruptIds.all() as { id: string }[]).map((r) => r.id);
  }

  async markBlobCorrupt(blobId: string): Promise<boolean> {
    return this.st.markCorrupt.run(blobId).changes === 1;
  }

  async setBlobSums(blobId: string, size: number, sums: BlobSums): Promise<void> {
    this.st.setSums.run(size, sums.blockBytes, sums.crc32, blobId);
  }

  async entriesWithoutSums(after: { bucket: string; key: string } | undefined, limit: number): Promise<ObjectRecord[]> {
    // A row value keeps the walk on the (bucket, key) index: each page starts where the last one ended. ('', '')
    // sorts before every entry (bucket names are never empty).
    return (this.st.withoutSums.all(after?.bucket ?? '', after?.key ?? '', limit) as ObjectRow[]).map(toRecord);
  }

  async entriesOfBlobs(blobIds: string[]): Promise<Array<{ bucket: string; key: string; blobId: string }>> {
    if (blobIds.length === 0) return [];
    const rows = this.st.entriesOfBlobs.all({ ids: JSON.stringify(blobIds) }) as { bucket: string; key: string; blob_id: string }[];
    return rows.map((r) => ({ bucket: r.bucket, key: r.key, blobId: r.blob_id }));
  }

  async forgetBlobDeletions(blobIds: string[]): Promise<void> {
    this.db.transaction(() => {
      for (const id of blobIds) this.st.forgetDeletion.run(id);
    }).immediate();
  }

  async createAccessKey(rec: AccessKeyRecord): Promise<void> {
    this.st.insertKey.run(rec.accessKey, rec.secretKey, rec.ctime);
  }

  async listAccessKeys(): Promise<AccessKeyRecord[]> {
    return (this.st.listKeys.all() as { access_key: string; secret_key: string; ctime: number }[]).map((r) => ({
      accessKey: r.access_key,
      secretKey: r.secret_key,
      ctime: r.ctime,
    }));
  }

  async deleteAccessKey(accessKey: string): Promise<boolean> {
    return this.st.deleteKey.run(accessKey).changes === 1;
  }

  async getSetting(name: string): Promise<string | undefined> {
    return (this.st.getSetting.get(name) as { value: string } | undefined)?.value;
  }

  async setSetting(name: string, value: string): Promise<void> {
    this.st.setSetting.run(name, value);
  }

  async claimSetting(name: string, value: string): Promise<string> {
    this.st.claimSetting.run(name, value);
    return (this.st.getSetting.get(name) as { value: string }).value;
  }

  async ping(): Promise<void> {
    this.st.ping.get();
  }

  /**
   * Moves checkpoints to a worker thread (checkpointer.ts): SQLite's automatic checkpoint is raised to a safety
   * net of 100,000 pages (~400 MB of WAL) and the thread checkpoints every `intervalMs`. For the server.
   */
  startCheckpoints(intervalMs = 1000): void {
    if (this.checkpointer) return;
    this.db.pragma('wal_autocheckpoint = 100000');
    // The connection that rewinds the log (its next writer) trims the file too.
    this.db.pragma(`journal_size_limit = ${JOURNAL_LIMIT_BYTES}`);
    this.checkpointer = new Checkpointer(this.path, intervalMs);
  }

  dataVersion(): number {
    return Number(this.dataVersionSt.get());
  }

  async changeCount(topic: 'access_keys' | 'domains' | 'iam'): Promise<number> {
    return (this.st.changeCount.get(topic) as { n: number } | undefined)?.n ?? 0;
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    this.checkpointer = undefined;
    if (this.db.open) this.db.close();
    await this.wal.close();
  }
}
