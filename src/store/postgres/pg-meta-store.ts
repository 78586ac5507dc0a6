/**
 * MetaStore on PostgreSQL (GRANARY_METADATA=postgres://…), the cluster mode's shared metadata: any number of
 * Granary nodes open the same database. The port of store/sqlite/sqlite-meta-store.ts, with the same
 * outcomes for every method; the files split alike (rows, blob-refs, bucket-usage, lifecycle, list-query,
 * manifests, sessions). Transactions and locking: db.ts; the locks an entry change takes: entry-locks.ts. Schema and
 * migrations: schema.ts, migrations.ts. The queue-like stores (jobs, fetch tasks, event outbox, workflow templates,
 * leases, wake-ups): queues.ts.
 *
 * Concurrency (what SQLite gets from its one writer): every transaction that changes entries takes its buckets'
 * advisory locks (shared; exclusive for a bucket with a quota that the change may grow) and then the advisory locks
 * of every key it may change, before reading them, and reads those rows `FOR UPDATE`. The sweeps (deleteExpired,
 * deleteUnderPrefix, the quota guard's removal of expired entries) take no advisory locks: they delete rows taken
 * `FOR UPDATE SKIP LOCKED`. dropBucket and updateBucketSettings take the bucket's lock exclusive. Blob reference
 * counts change by single atomic statements on the blob's row (blob-refs.ts).
 *
 * Durability: PostgreSQL's COMMIT is durable (synchronous_commit on); every method resolves after its COMMIT, so
 * there is no group-commit code here. Callbacks (`mutate`, `events` builders) may run more than once when a
 * transaction is retried (PgDb.tx): they are pure.
 * Units: ctime Unix seconds, put_time 100-ns units (bigint), sizes bytes.
 */
import type { VersioningState, VersionPage, VersionQuery, VersionRecord, VersionStats } from '../../ports/versions.js';
import { randomBytes } from 'node:crypto';
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
  ListQuery,
  CommitPutOptions,
  MetaStore,
  ObjectRecord,
  PutOutcome,
  QuotaRefusal,
} from '../../ports/meta.js';
import { addManifest, addRef, addRefAndUpsert, deleteEntryAndRelease, releaseRef } from './blob-refs.js';
import { bucketUsage, OverQuota, quotaOf, underQuota } from './bucket-usage.js';
import { lockBuckets, PgDb, type PgDbOptions, type Queryable } from './db.js';
import { lockForChange, type LockedChange, type QuotaHints } from './entry-locks.js';
import { deleteUnderPrefix, rulesFromSettings, type SweepStep } from './lifecycle.js';
import { listPage } from './list-query.js';
import { piecesOf } from './manifests.js';
import { migrate } from './migrations.js';
import { openQueues, type PgQueues } from './queues.js';
import { OBJECT_COLUMNS, rowValues, toBlobState, toRecord, UPSERT_OBJECT, type BlobRow, type ObjectRow } from './rows.js';
import { PgSessions } from './sessions.js';
import { PgConsoleSamples } from './console-samples.js';
import {
  addMarker,
  anyVersionIn,
  assignVersion,
  deleteVersion as deleteVersionOn,
  getVersion as getVersionOn,
  expireNoncurrent,
  listVersionsOn,
  removeEntry,
  removeSoleMarker,
  retireEntry,
  sweptEntries,
  versioningFromSettings,
  versionStatsOn,
} from './versions.js';

/** What a bucket's settings make of its entries: lifecycle rules and versioning. */
interface BucketConf {
  rules: LifecycleRule[] | undefined;
  versioning: VersioningState | undefined;
}

/** The conf of a bucket's settings column (NULL = none). */
function confOf(settings: string | null | undefined): BucketConf {
  return { rules: rulesFromSettings(settings), versioning: versioningFromSettings(settings) };
}

/** Unix seconds → 100-ns units (the time of a version made by a deletion, a move or an expiry). */
function unitsOf(nowSec: number): bigint {
  return BigInt(nowSec) * 10_000_000n;
}

/** The columns of a bucket record. */
const BUCKET_COLUMNS = 'name, region, private, ctime, owner, source, source_host, nrop, styles, settings';

/** Styles of a bucket that never set any: separator `-`, no styles. */
const DEFAULT_STYLES: BucketStyles = { separator: '-', styles: {} };

interface BucketRow {
  name: string;
  region: string;
  private: boolean;
  ctime: bigint;
  owner: string;
  source: string | null;
  source_host: string | null;
  nrop: boolean;
  styles: string | null;
  settings: string | null;
}

/** A `buckets` row → record. */
function toBucket(r: BucketRow): BucketRecord {
  const b: BucketRecord = {
    name: r.name,
    region: r.region,
    private: r.private,
    ctime: Number(r.ctime),
    owner: r.owner,
    nrop: r.nrop,
    settings: r.settings !== null ? (JSON.parse(r.settings) as BucketSettings) : {},
  };
  if (r.source !== null) b.source = r.source;
  if (r.source_host !== null) b.sourceHost = r.source_host;
  if (r.styles !== null) b.styles = JSON.parse(r.styles) as BucketStyles;
  return b;
}

/** A row type with every column prefixed `b_` (the bucket's columns of a join). */
type Prefixed<T> = { [K in keyof T & string as `b_${K}`]: T[K] };

/** The entry with its blob's integrity facts and its bucket's settings (single-entry reads). */
const ENTRY_WITH_BLOB = `SELECT o.*, bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt,
    b.settings AS b_settings
  FROM objects o JOIN buckets b ON b.name = o.bucket LEFT JOIN blobs bl ON bl.id = o.blob_id
  WHERE o.bucket = $1 AND o.key = $2`;

/**
 * The download read (getBucketAndObject): the bucket, its entry under `$2` with its blob's integrity facts and the
 * inline bytes, in one statement. Run as a named (prepared) statement: parsed and planned once per connection, which
 * on this 4-table join is most of its time. Columns are listed (no `o.*`) so that a column added by a later
 * migration does not change the prepared statement's result.
 */
const BUCKET_AND_ENTRY = `SELECT b.name AS b_name, b.region AS b_region, b.private AS b_private, b.ctime AS b_ctime,
    b.owner AS b_owner, b.source AS b_source, b.source_host AS b_source_host,
    b.nrop AS b_nrop, b.styles AS b_styles, b.settings AS b_settings,
    ${OBJECT_COLUMNS.split(', ').map((c) => `o.${c}`).join(', ')},
    bl.block_bytes AS bl_block_bytes, bl.sums AS bl_sums, bl.corrupt AS bl_corrupt, ib.data AS ib_data
  FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = $2
    LEFT JOIN blobs bl ON bl.id = o.blob_id LEFT JOIN inline_blobs ib ON ib.id = o.blob_id
  WHERE b.name = $1`;

/** The over-quota outcome of a refused change. */
type Refused = { result: 'over-quota'; freedBlobs: string[]; refusal: QuotaRefusal };

export class PgMetaStore implements MetaStore {
  readonly jobs: PgQueues['jobs'];
  readonly tasks: PgQueues['tasks'];
  readonly fetchTasks: PgQueues['fetchTasks'];
  readonly events: PgQueues['events'];
  /** Replication targets and outbox (ports/replication.ts). */
  readonly replication: PgQueues['replication'];
  readonly workflowTemplates: PgQueues['workflowTemplates'];
  readonly leases: PgQueues['leases'];
  readonly sessions: PgSessions;
  /** Web console sessions and the sign-in throttle (ports/console-sessions.ts). */
  readonly consoleSessions: PgQueues['consoleSessions'];
  /** The console Overview's history (ports/console-samples.ts). */
  readonly consoleSamples: PgConsoleSamples;
  /** Kodo IAM objects and audits (ports/iam.ts). */
  readonly iam: PgQueues['iam'];
  /** The buckets this process last saw with a quota: their entry changes lock them exclusive at once (entry-locks.ts). */
  private readonly quotaHints: QuotaHints = new Set();

  private constructor(
    /** The pool (tests and tools may query it directly). */
    readonly db: PgDb,
    private readonly queues: PgQueues,
    readonly owner: string,
  ) {
    this.jobs = queues.jobs;
    this.tasks = queues.tasks;
    this.fetchTasks = queues.fetchTasks;
    this.events = queues.events;
    this.replication = queues.replication;
    this.workflowTemplates = queues.workflowTemplates;
    this.leases = queues.leases;
    this.sessions = new PgSessions(db);
    this.consoleSessions = queues.consoleSessions;
    this.consoleSamples = new PgConsoleSamples(db);
    this.iam = queues.iam;
  }

  /**
   * Connects to `url` (pool size and timeouts: `opts`, db.ts), applies the missing migrations, and opens the
   * stores. `owner` is the identity of the process (workers/identity.ts); offline users get a random one that never
   * holds a process lease.
   */
  static async open(url: string, owner?: string, opts: PgDbOptions = {}): Promise<PgMetaStore> {
    const db = new PgDb(url, opts);
    try {
      await migrate(db);
      const who = owner ?? `offline:${process.pid}:${randomBytes(6).toString('hex')}`;
      return new PgMetaStore(db, await openQueues(db, who), who);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Runs a change in a transaction; a change refused by a bucket quota (OverQuota thrown inside, the transaction
   * rolled back, so the blobs it would have freed stay referenced) becomes the 'over-quota' outcome.
   */
  private async commit<T>(fn: (c: Queryable) => Promise<T>): Promise<T | Refused> {
    try {
      return await this.db.tx(fn);
    } catch (err) {
      if (err instanceof OverQuota) return { result: 'over-quota', freedBlobs: [], refusal: err.refusal };
      throw err;
    }
  }

  // ---- buckets and domains ----

  async createBucket(b: BucketRecord): Promise<boolean> {
    const r = await this.db.query(
      'INSERT INTO buckets (name, region, private, ctime, owner) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
      [b.name, b.region, b.private, b.ctime, b.owner],
    );
    return r.rowCount === 1;
  }

  async getBucket(name: string): Promise<BucketRecord | undefined> {
    const { rows } = await this.db.query<BucketRow>(`SELECT ${BUCKET_COLUMNS} FROM buckets WHERE name = $1`, [name]);
    return rows[0] ? toBucket(rows[0]) : undefined;
  }

  async listBuckets(): Promise<BucketRecord[]> {
    const { rows } = await this.db.query<BucketRow>(`SELECT ${BUCKET_COLUMNS} FROM buckets ORDER BY name`);
    return rows.map(toBucket);
  }

  async dropBucket(name: string): Promise<'dropped' | 'missing' | 'not-empty'> {
    return this.db.tx(async (c): Promise<'dropped' | 'missing' | 'not-empty'> => {
      await lockBuckets(c, [name], 'exclusive');
      if ((await c.query('SELECT 1 FROM buckets WHERE name = $1', [name])).rows.length === 0) return 'missing';
      if ((await c.query('SELECT 1 FROM objects WHERE bucket = $1 LIMIT 1', [name])).rows.length > 0) return 'not-empty';
      if (await anyVersionIn(c, name)) return 'not-empty';
      await c.query('DELETE FROM domains WHERE bucket = $1', [name]);
      await c.query('DELETE FROM buckets WHERE name = $1', [name]);
      return 'dropped';
    });
  }

  async setBucketPrivate(name: string, isPrivate: boolean): Promise<boolean> {
    return (await this.db.query('UPDATE buckets SET private = $1 WHERE name = $2', [isPrivate, name])).rowCount === 1;
  }

  async setBucketSource(name: string, source: { url: string; host?: string } | undefined): Promise<boolean> {
    const r = await this.db.query('UPDATE buckets SET source = $1, source_host = $2 WHERE name = $3', [
      source?.url ?? null,
      source?.host ?? null,
      name,
    ]);
    return r.rowCount === 1;
  }

  async setBucketNrop(name: string, enabled: boolean): Promise<boolean> {
    return (await this.db.query('UPDATE buckets SET nrop = $1 WHERE name = $2', [enabled, name])).rowCount === 1;
  }

  async updateBucketSettings(name: string, mutate: (current: BucketSettings) => BucketSettings): Promise<BucketRecord | undefined> {
    return this.db.tx(async (c): Promise<BucketRecord | undefined> => {
      // Exclusive: no entry change of the bucket runs while its quota or rules change (entry-locks.ts).
      await lockBuckets(c, [name], 'exclusive');
      const { rows } = await c.query<BucketRow>(`SELECT ${BUCKET_COLUMNS} FROM buckets WHERE name = $1 FOR NO KEY UPDATE`, [name]);
      if (!rows[0]) return undefined;
      const b = toBucket(rows[0]);
      const settings = mutate(b.settings);
      // This node's next change of the bucket then locks it in the right mode at once (a hint: entry-locks.ts).
      const hasQuota = quotaOf(JSON.stringify(settings)) !== undefined;
      this.db.afterCommit(c, () => void (hasQuota ? this.quotaHints.add(name) : this.quotaHints.delete(name)));
      await c.query('UPDATE buckets SET settings = $1 WHERE name = $2', [
        Object.keys(settings).length > 0 ? JSON.stringify(settings) : null,
        name,
      ]);
      return { ...b, settings };
    });
  }

  async updateBucketStyles(name: string, mutate: (current: BucketStyles) => BucketStyles): Promise<boolean> {
    return this.db.tx(async (c): Promise<boolean> => {
      const { rows } = await c.query<BucketRow>(`SELECT ${BUCKET_COLUMNS} FROM buckets WHERE name = $1 FOR NO KEY UPDATE`, [name]);
      if (!rows[0]) return false;
      const b = toBucket(rows[0]);
      const next = mutate(b.styles ?? { separator: DEFAULT_STYLES.separator, styles: {} });
      await c.query('UPDATE buckets SET styles = $1 WHERE name = $2', [JSON.stringify(next), name]);
      return true;
    });
  }

  async bindDomain(domain: string, bucket: string, ctime: number): Promise<'bound' | 'taken' | 'no-bucket'> {
    return this.db.tx(async (c): Promise<'bound' | 'taken' | 'no-bucket'> => {
      // FOR SHARE: the bucket cannot be dropped before this commits.
      if ((await c.query('SELECT 1 FROM buckets WHERE name = $1 FOR SHARE', [bucket])).rows.length === 0) return 'no-bucket';
      const ins = await c.query('INSERT INTO domains (domain, bucket, ctime) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        domain,
        bucket,
        ctime,
      ]);
      if (ins.rowCount === 1) return 'bound';
      const { rows } = await c.query<{ bucket: string }>('SELECT bucket FROM domains WHERE domain = $1', [domain]);
      return rows[0]?.bucket === bucket ? 'bound' : 'taken';
    });
  }

  async unbindDomain(domain: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM domains WHERE domain = $1', [domain])).rowCount === 1;
  }

  async domainsOf(bucket: string): Promise<DomainRecord[]> {
    const { rows } = await this.db.query<{ domain: string; bucket: string; ctime: bigint }>(
      'SELECT domain, bucket, ctime FROM domains WHERE bucket = $1 ORDER BY domain',
      [bucket],
    );
    return rows.map((r) => ({ domain: r.domain, bucket: r.bucket, ctime: Number(r.ctime) }));
  }

  async bucketOfDomain(domain: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ bucket: string }>('SELECT bucket FROM domains WHERE domain = $1', [domain]);
    return rows[0]?.bucket;
  }

  // ---- entries ----

  async getObject(bucket: string, key: string): Promise<ObjectRecord | undefined> {
    const { rows } = await this.db.query<ObjectRow & { b_settings: string | null }>(ENTRY_WITH_BLOB, [bucket, key]);
    const row = rows[0];
    return row ? applyRules(await this.withPieces(this.db.autocommit, toRecord(row)), rulesFromSettings(row.b_settings)) : undefined;
  }

  /** A single-entry read's record with its manifest's pieces (and `corrupt` when one of them is). */
  private async withPieces(c: Queryable, rec: ObjectRecord): Promise<ObjectRecord> {
    if (!isManifestId(rec.blobId)) return rec;
    const { pieces, corrupt } = await piecesOf(c, rec.blobId);
    rec.pieces = pieces;
    if (corrupt) rec.corrupt = true;
    return rec;
  }

  /** Whether the blob, or any piece of the manifest, is marked corrupt (on `c`). */
  private async isCorrupt(c: Queryable, blobId: string): Promise<boolean> {
    if (isManifestId(blobId)) return (await piecesOf(c, blobId)).corrupt;
    return (await c.query('SELECT 1 FROM blobs WHERE id = $1 AND corrupt', [blobId])).rows.length > 0;
  }

  async getBucketAndObject(bucket: string, key: string): Promise<{ bucket?: BucketRecord; object?: ObjectRecord }> {
    const { rows } = await this.db.query<Prefixed<BucketRow> & Omit<ObjectRow, 'blob_id'> & { blob_id: string | null }>(
      BUCKET_AND_ENTRY,
      [bucket, key],
      'granary_bucket_and_entry',
    );
    const row = rows[0];
    if (!row) return {};
    const b = toBucket({
      name: row.b_name,
      region: row.b_region,
      private: row.b_private,
      ctime: row.b_ctime,
      owner: row.b_owner,
      source: row.b_source,
      source_host: row.b_source_host,
      nrop: row.b_nrop,
      styles: row.b_styles,
      settings: row.b_settings,
    });
    if (row.blob_id === null) return { bucket: b };
    const rec = toRecord(row as ObjectRow);
    return { bucket: b, object: applyRules(await this.withPieces(this.db.autocommit, rec), rulesFromSettings(row.b_settings)) };
  }

  /**
   * The live entry at (bucket, key) on the transaction `c` (which holds the key's lock), as `locked` read it (its
   * row locked), as stored (its own lifecycle); an expired one — past its own expireAt or deleted by the bucket's
   * lifecycle rules — is removed (versions.ts `removeEntry`: deleted and its blob released into `freed`, or in a
   * versioned bucket made a noncurrent version under a delete marker). `conf`: the bucket's.
   */
  private async liveRow(
    c: Queryable,
    locked: LockedChange,
    bucket: string,
    key: string,
    nowSec: number,
    freed: string[],
    conf: BucketConf,
  ): Promise<ObjectRecord | undefined> {
    const row = locked.row(bucket, key);
    if (!row) return undefined;
    const rec = toRecord(row);
    if ((rec.expireAt !== undefined && rec.expireAt <= nowSec) || expiredByRules(conf.rules, key, rec.putTime, nowSec)) {
      await removeEntry(c, rec, conf.versioning, unitsOf(nowSec), freed);
      return undefined;
    }
    return rec;
  }

  async commitPut(
    rec: ObjectRecord,
    opts: CommitPutOptions,
  ): Promise<PutOutcome> {
    return this.commit(async (c): Promise<PutOutcome> => {
      const freed: string[] = [];
      const locked = await lockForChange(c, [{ name: rec.bucket, grows: true }], [[rec.bucket, rec.key]], this.quotaHints);
      const bucket = locked.buckets.get(rec.bucket);
      if (!bucket) return { result: 'no-bucket', freedBlobs: freed };
      const manifest = opts.manifest;
      const lost = manifest && (await this.sessions.claimLost(c, manifest.claim));
      if (lost) return { result: 'session-lost', freedBlobs: freed, reason: lost };
      const conf = confOf(bucket.settings);
      const existing = await this.liveRow(c, locked, rec.bucket, rec.key, opts.nowSec, freed, conf);
      const refusal = opts.precondition?.(existing);
      if (refusal) return { result: 'refused', freedBlobs: freed, error: refusal };
      // Identical content whose stored copy is corrupt is replaced, not kept: uploading it again heals the entry.
      if (existing && opts.insertOnly && !(existing.hash === rec.hash && (await this.isCorrupt(c, existing.blobId)))) {
        const result = existing.hash === rec.hash ? 'identical' : 'exists';
        // The upload of identical content succeeds: its session is consumed (its pieces freed).
        if (manifest && result === 'identical') await this.sessions.dropClaimed(c, manifest.claim, freed);
        return { result, freedBlobs: freed, existing };
      }
      await underQuota(c, rec.bucket, bucket.quota, opts.nowSec, freed, async () => {
        if (conf.versioning) {
          // A versioned bucket keeps the replaced entry as a noncurrent version (versions.ts): the new blob's
          // reference first (a retired null version under Suspended may share its blob), then the version.
          if (manifest) await addManifest(c, manifest.id, rec.fsize, manifest.pieces);
          else await addRef(c, rec.blobId, rec.fsize, opts.sums, opts.inline);
          if (existing) await retireEntry(c, existing, conf.versioning, freed);
          await assignVersion(c, rec, conf.versioning, rec.putTime, freed);
          await c.query(UPSERT_OBJECT, rowValues(rec));
        } else {
          await assignVersion(c, rec, undefined, rec.putTime, freed);
          if (manifest) {
            await addManifest(c, manifest.id, rec.fsize, manifest.pieces);
            await c.query(UPSERT_OBJECT, rowValues(rec));
          } else {
            await addRefAndUpsert(c, rec, opts.sums, opts.inline);
          }
          if (existing) await releaseRef(c, existing.blobId, freed);
        }
        // The pieces now hold the manifest's references: the session's go with it.
        if (manifest) await this.sessions.dropClaimed(c, manifest.claim, freed);
      });
      await this.events.write(c, opts.events, rec);
      const version = rec.versionId !== undefined ? { versionId: rec.versionId } : {};
      return existing
        ? { result: 'replaced', freedBlobs: freed, previous: existing, ...version }
        : { result: 'created', freedBlobs: freed, ...version };
    });
  }

  async deleteObject(
    bucket: string,
    key: string,
    nowSec: number,
    events?: OutboxRows,
    check?: (rec: ObjectRecord) => void,
    opts: { markMissing?: boolean } = {},
  ): Promise<{ result: 'deleted' | 'missing'; freedBlobs: string[]; marker?: string }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      const locked = await lockForChange(c, [{ name: bucket, grows: false }], [[bucket, key]], this.quotaHints);
      const b = locked.buckets.get(bucket);
      if (!b) return { result: 'missing' as const, freedBlobs: freed };
      const conf = confOf(b.settings);
      const rec = await this.liveRow(c, locked, bucket, key, nowSec, freed, conf);
      if (!rec) {
        if (!conf.versioning || !opts.markMissing) return { result: 'missing' as const, freedBlobs: freed };
        const marker = await addMarker(c, bucket, key, conf.versioning, unitsOf(nowSec), freed);
        return { result: 'deleted' as const, freedBlobs: freed, marker };
      }
      check?.(rec);
      const marker = await removeEntry(c, rec, conf.versioning, unitsOf(nowSec), freed);
      await this.events.write(c, events, rec);
      return { result: 'deleted' as const, freedBlobs: freed, ...(marker !== undefined ? { marker } : {}) };
    });
  }

  async copyObject(
    from: { bucket: string; key: string; versionId?: string },
    to: { bucket: string; key: string },
    opts: { force: boolean; nowSec: number; putTime: bigint; events?: OutboxRows },
  ): Promise<{ result: 'copied' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal; versionId?: string }> {
    return this.commit(async (c) => {
      const freed: string[] = [];
      const locked = await lockForChange(
        c,
        [
          { name: from.bucket, grows: false },
          { name: to.bucket, grows: true },
        ],
        [
          [from.bucket, from.key],
          [to.bucket, to.key],
        ],
        this.quotaHints,
      );
      const source = locked.buckets.get(from.bucket);
      let src: ObjectRecord | undefined;
      if (source && from.versionId !== undefined) {
        const v = await getVersionOn(c, from.bucket, from.key, from.versionId);
        src = v && !v.deleteMarker ? v.record : undefined;
      } else if (source) src = await this.liveRow(c, locked, from.bucket, from.key, opts.nowSec, freed, confOf(source.settings));
      if (!src) return { result: 'no-source' as const, freedBlobs: freed };
      const target = locked.buckets.get(to.bucket);
      if (!target) return { result: 'no-bucket' as const, freedBlobs: freed };
      if (from.bucket === to.bucket && from.key === to.key && from.versionId === undefined) {
        return { result: opts.force ? ('copied' as const) : ('exists' as const), freedBlobs: freed };
      }
      const conf = confOf(target.settings);
      const dst = await this.liveRow(c, locked, to.bucket, to.key, opts.nowSec, freed, conf);
      if (dst && !opts.force) return { result: 'exists' as const, freedBlobs: freed };
      const copy: ObjectRecord = { ...src, bucket: to.bucket, key: to.key, putTime: opts.putTime };
      delete copy.sums;
      delete copy.corrupt;
      delete copy.pieces;
      await underQuota(c, to.bucket, target.quota, opts.nowSec, freed, async () => {
        // The copy's reference first: the replaced entry may share its blob.
        await addRef(c, copy.blobId);
        if (dst) await retireEntry(c, dst, conf.versioning, freed);
        await assignVersion(c, copy, conf.versioning, opts.putTime, freed);
        await c.query(UPSERT_OBJECT, rowValues(copy));
      });
      await this.events.write(c, opts.events, copy);
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
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      const locked = await lockForChange(c, [{ name: bucket, grows: false }], [[bucket, key]], this.quotaHints);
      const b = locked.buckets.get(bucket);
      if (!b) return { result: 'missing' as const, freedBlobs: freed };
      const conf = confOf(b.settings);
      const rec = await this.liveRow(c, locked, bucket, key, nowSec, freed, conf);
      if (!rec) return { result: 'missing' as const, freedBlobs: freed };
      // `applyRules` may return `rec` itself: give `mutate` a copy of the stored record.
      const next = mutate(rec, applyRules({ ...rec }, conf.rules));
      // Attributes change in place: the version (id, ordering) stays the entry's.
      const stored: ObjectRecord = { ...next, bucket, key, blobId: rec.blobId };
      delete stored.versionId;
      delete stored.versionSort;
      if (rec.versionId !== undefined) stored.versionId = rec.versionId;
      if (rec.versionSort !== undefined) stored.versionSort = rec.versionSort;
      await c.query(UPSERT_OBJECT, rowValues(stored));
      await this.events.write(c, events, stored);
      return { result: 'updated' as const, record: next, freedBlobs: freed };
    });
  }

  async moveObject(
    from: { bucket: string; key: string },
    to: { bucket: string; key: string },
    opts: { force: boolean; nowSec: number; events?: OutboxRows },
  ): Promise<{ result: 'moved' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; freedBlobs: string[]; refusal?: QuotaRefusal }> {
    return this.commit(async (c) => {
      const freed: string[] = [];
      // Within one bucket a move never grows it; into another, the target bucket's quota applies.
      const locked = await lockForChange(
        c,
        [
          { name: from.bucket, grows: false },
          { name: to.bucket, grows: from.bucket !== to.bucket },
        ],
        [
          [from.bucket, from.key],
          [to.bucket, to.key],
        ],
        this.quotaHints,
      );
      const source = locked.buckets.get(from.bucket);
      const fromConf = confOf(source?.settings);
      const src = source && (await this.liveRow(c, locked, from.bucket, from.key, opts.nowSec, freed, fromConf));
      if (!src) return { result: 'no-source' as const, freedBlobs: freed };
      const target = locked.buckets.get(to.bucket);
      if (!target) return { result: 'no-bucket' as const, freedBlobs: freed };
      if (from.bucket === to.bucket && from.key === to.key) return { result: 'moved' as const, freedBlobs: freed };
      const conf = confOf(target.settings);
      const dst = await this.liveRow(c, locked, to.bucket, to.key, opts.nowSec, freed, conf);
      if (dst && !opts.force) return { result: 'exists' as const, freedBlobs: freed };
      const moved: ObjectRecord = { ...src, bucket: to.bucket, key: to.key };
      await underQuota(c, to.bucket, target.quota, opts.nowSec, freed, async () => {
        if (!fromConf.versioning && !conf.versioning) {
          // Unversioned on both sides: the entry changes its key, keeping its reference.
          await assignVersion(c, moved, undefined, 0n, freed);
          if (dst) await deleteEntryAndRelease(c, to.bucket, to.key, dst.blobId, freed);
          await c.query('DELETE FROM objects WHERE bucket = $1 AND key = $2', [from.bucket, from.key]);
          await c.query(UPSERT_OBJECT, rowValues(moved));
          return;
        }
        if (dst) {
          await c.query('DELETE FROM objects WHERE bucket = $1 AND key = $2', [to.bucket, to.key]);
          await retireEntry(c, dst, conf.versioning, freed);
        }
        // A versioned source keeps its entry as a noncurrent version (its own reference) under a delete marker:
        // the moved entry takes one more reference on the same blob.
        if (fromConf.versioning) {
          await addRef(c, src.blobId);
          await removeEntry(c, src, fromConf.versioning, unitsOf(opts.nowSec), freed);
        } else await c.query('DELETE FROM objects WHERE bucket = $1 AND key = $2', [from.bucket, from.key]);
        await assignVersion(c, moved, conf.versioning, unitsOf(opts.nowSec), freed);
        await c.query(UPSERT_OBJECT, rowValues(moved));
      });
      await this.events.write(c, opts.events, moved);
      return { result: 'moved' as const, freedBlobs: freed };
    });
  }

  async deleteExpired(nowSec: number, limit: number): Promise<{ deleted: number; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      // Rows being changed right now are skipped (left for the next sweep); the rest are locked, then deleted (in a
      // versioned bucket each becomes a noncurrent version under a delete marker: versions.ts `sweptEntries`).
      const { rows } = await c.query<ObjectRow>(
        `DELETE FROM objects WHERE (bucket, key) IN (
           SELECT bucket, key FROM objects WHERE expire_at IS NOT NULL AND expire_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [nowSec, limit],
      );
      await sweptEntries(c, rows, nowSec, freed);
      return { deleted: rows.length, freedBlobs: freed };
    });
  }

  async deleteUnderPrefix(
    bucket: string,
    sel: { prefix: string; exclude: readonly string[]; putTimeBefore: bigint },
    after: string | undefined,
    scan: number,
  ): Promise<SweepStep> {
    return deleteUnderPrefix(this.db, bucket, sel, after, scan);
  }

  /** Versions are kept (versions.ts, docs/reference/versioning.md). */
  get keepsVersions(): boolean {
    return true;
  }

  async getVersion(bucket: string, key: string, versionId: string | undefined): Promise<VersionRecord | undefined> {
    return this.db.tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const v = await getVersionOn(c, bucket, key, versionId);
      if (!v || v.deleteMarker) return v;
      if (v.isLatest) {
        const b = await c.query<{ settings: string | null }>('SELECT settings FROM buckets WHERE name = $1', [bucket]);
        v.record = applyRules(v.record, rulesFromSettings(b.rows[0]?.settings));
      }
      v.record = await this.withPieces(c, v.record);
      return v;
    });
  }

  async deleteVersion(
    bucket: string,
    key: string,
    versionId: string,
    events: OutboxRows | undefined,
    mutable: (rec: ObjectRecord) => void,
  ): Promise<{ result: 'deleted' | 'no-version'; deleteMarker: boolean; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      const locked = await lockForChange(c, [{ name: bucket, grows: false }], [[bucket, key]], this.quotaHints);
      if (!locked.buckets.get(bucket)) return { result: 'no-version' as const, deleteMarker: false, freedBlobs: freed };
      // The retention check (objects/retention.ts), inside the transaction that deletes, under the key's lock.
      const version = await getVersionOn(c, bucket, key, versionId);
      if (version && !version.deleteMarker) mutable(version.record);
      const found = await deleteVersionOn(c, bucket, key, versionId, freed, async (rec) => {
        await c.query(UPSERT_OBJECT, rowValues(rec));
      });
      if (!found) return { result: 'no-version' as const, deleteMarker: false, freedBlobs: freed };
      await this.events.write(c, events, found.record);
      return { result: 'deleted' as const, deleteMarker: found.deleteMarker, freedBlobs: freed };
    });
  }

  async expireNoncurrentVersion(
    bucket: string,
    key: string,
    sortId: string,
    // The retention check: PostgreSQL keeps no object lock yet (a lock-enabled bucket is refused there), so no
    // version it holds is locked and there is nothing to check.
    _mutable: (rec: ObjectRecord) => void,
  ): Promise<{ deleted: boolean; freedBlobs: string[] }> {
    return this.db.tx(async (c) => {
      const freed: string[] = [];
      await lockForChange(c, [{ name: bucket, grows: false }], [[bucket, key]], this.quotaHints);
      return { deleted: await expireNoncurrent(c, bucket, key, sortId, freed), freedBlobs: freed };
    });
  }

  async removeExpiredDeleteMarker(bucket: string, key: string, sortId: string): Promise<boolean> {
    return this.db.tx(async (c) => {
      await lockForChange(c, [{ name: bucket, grows: false }], [[bucket, key]], this.quotaHints);
      return removeSoleMarker(c, bucket, key, sortId);
    });
  }

  /** The version counters of every bucket that has kept versions (`version_usage`, kept by triggers: no scan). */
  async versionStats(): Promise<Map<string, VersionStats>> {
    return versionStatsOn(this.db.autocommit);
  }

  async listVersions(query: VersionQuery): Promise<VersionPage> {
    return this.db.tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      return listVersionsOn(c, query);
    });
  }

  async listObjects(query: ListQuery): Promise<ListPage> {
    return listPage(this.db, query);
  }

  async countObjects(bucket: string): Promise<number> {
    const { rows } = await this.db.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM objects WHERE bucket = $1', [bucket]);
    return Number(rows[0]?.n ?? 0);
  }

  async bucketUsage(bucket: string): Promise<BucketUsage | undefined> {
    return this.db.tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      if ((await c.query('SELECT 1 FROM buckets WHERE name = $1', [bucket])).rows.length === 0) return undefined;
      return bucketUsage(c, bucket);
    });
  }

  // ---- blobs ----

  async inlineBlob(blobId: string): Promise<Buffer | undefined> {
    const { rows } = await this.db.query<{ data: Buffer }>('SELECT data FROM inline_blobs WHERE id = $1', [blobId]);
    return rows[0]?.data;
  }

  async listInlineBlobIds(after: string, limit: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM inline_blobs WHERE id > $1 ORDER BY id LIMIT $2', [after, limit]);
    return rows.map((r) => r.id);
  }

  async replaceInlineBlob(blobId: string, data: Buffer): Promise<void> {
    await this.db.query('UPDATE inline_blobs SET data = $2 WHERE id = $1', [blobId, data]);
  }

  async blobReferenced(blobId: string): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM blobs WHERE id = $1', [blobId])).rows.length > 0;
  }

  async knowsFileBlobs(): Promise<boolean> {
    // File blob ids are 32 hex characters; inline ones start with 'i' (store/inline-blob-store.ts).
    const sql = "SELECT 1 FROM blobs WHERE id NOT LIKE 'i%' UNION ALL SELECT 1 FROM blob_deletions WHERE id NOT LIKE 'i%' LIMIT 1";
    return (await this.db.query(sql)).rows.length > 0;
  }

  async pendingBlobDeletions(limit: number, afterId = ''): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM blob_deletions WHERE id > $1 ORDER BY id LIMIT $2', [
      afterId,
      limit,
    ]);
    return rows.map((r) => r.id);
  }

  async blobStates(blobIds: string[]): Promise<Map<string, BlobState>> {
    const out = new Map<string, BlobState>();
    if (blobIds.length === 0) return out;
    const { rows } = await this.db.query<BlobRow>(
      'SELECT id, size, block_bytes, sums, corrupt FROM blobs WHERE id = ANY($1::text[])',
      [blobIds],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    // In the order asked (as the SQLite store answers).
    for (const id of blobIds) {
      const row = byId.get(id);
      if (row) out.set(id, toBlobState(row));
    }
    return out;
  }

  async listBlobStates(afterId: string, limit: number): Promise<BlobState[]> {
    const { rows } = await this.db.query<BlobRow>(
      'SELECT id, size, block_bytes, sums, corrupt FROM blobs WHERE id > $1 ORDER BY id LIMIT $2',
      [afterId, limit],
    );
    return rows.map(toBlobState);
  }

  async corruptBlobIds(): Promise<string[]> {
    return (await this.db.query<{ id: string }>('SELECT id FROM blobs WHERE corrupt')).rows.map((r) => r.id);
  }

  async markBlobCorrupt(blobId: string): Promise<boolean> {
    return (await this.db.query('UPDATE blobs SET corrupt = true WHERE id = $1 AND NOT corrupt', [blobId])).rowCount === 1;
  }

  async setBlobSums(blobId: string, size: number, sums: BlobSums): Promise<void> {
    await this.db.query('UPDATE blobs SET size = $1, block_bytes = $2, sums = $3 WHERE id = $4 AND sums IS NULL', [
      size,
      sums.blockBytes,
      sums.crc32,
      blobId,
    ]);
  }

  async entriesWithoutSums(after: { bucket: string; key: string } | undefined, limit: number): Promise<ObjectRecord[]> {
    // A row value keeps the walk on the (bucket, key) index: each page starts where the last one ended. ('', '')
    // sorts before every entry (bucket names are never empty).
    const { rows } = await this.db.query<ObjectRow>(
      `SELECT o.* FROM objects o JOIN blobs bl ON bl.id = o.blob_id
       WHERE (o.bucket, o.key) > ($1, $2) AND bl.sums IS NULL AND NOT bl.corrupt AND left(o.blob_id, 1) <> 'm'
       ORDER BY o.bucket, o.key LIMIT $3`,
      [after?.bucket ?? '', after?.key ?? '', limit],
    );
    return rows.map(toRecord);
  }

  async entriesOfBlobs(blobIds: string[]): Promise<Array<{ bucket: string; key: string; blobId: string }>> {
    if (blobIds.length === 0) return [];
    // No index on blob_id (it would cost every commit): one scan of the entries for a whole list of blobs, and one
    // for the manifests holding them as pieces.
    const { rows } = await this.db.query<{ bucket: string; key: string; blob_id: string }>(
      `SELECT bucket, key, blob_id FROM objects WHERE blob_id = ANY($1::text[])
       UNION ALL
       SELECT o.bucket, o.key, mp.piece_id AS blob_id FROM objects o
         JOIN manifest_pieces mp ON mp.manifest_id = o.blob_id
       WHERE left(o.blob_id, 1) = 'm' AND mp.piece_id = ANY($1::text[])`,
      [blobIds],
    );
    return rows.map((r) => ({ bucket: r.bucket, key: r.key, blobId: r.blob_id }));
  }

  async forgetBlobDeletions(blobIds: string[]): Promise<void> {
    if (blobIds.length === 0) return;
    await this.db.query('DELETE FROM blob_deletions WHERE id = ANY($1::text[])', [blobIds]);
  }

  // ---- account key pairs ----

  async createAccessKey(rec: AccessKeyRecord): Promise<void> {
    await this.db.query('INSERT INTO access_keys (access_key, secret_key, ctime) VALUES ($1, $2, $3)', [
      rec.accessKey,
      rec.secretKey,
      rec.ctime,
    ]);
  }

  async listAccessKeys(): Promise<AccessKeyRecord[]> {
    const { rows } = await this.db.query<{ access_key: string; secret_key: string; ctime: bigint }>(
      'SELECT access_key, secret_key, ctime FROM access_keys ORDER BY ctime, access_key',
    );
    return rows.map((r) => ({ accessKey: r.access_key, secretKey: r.secret_key, ctime: Number(r.ctime) }));
  }

  async deleteAccessKey(accessKey: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM access_keys WHERE access_key = $1', [accessKey])).rowCount === 1;
  }

  // ---- settings ----

  async getSetting(name: string): Promise<string | undefined> {
    return (await this.db.query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name])).rows[0]?.value;
  }

  async setSetting(name: string, value: string): Promise<void> {
    await this.db.query(
      'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
      [name, value],
    );
  }

  async claimSetting(name: string, value: string): Promise<string> {
    await this.db.query('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, value]);
    return (await this.db.query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name])).rows[0]!.value;
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  /** The number of wake-up notifications received (queues.ts): moves when any node changed a queue or a lease. */
  dataVersion(): number {
    return this.queues.wake.version();
  }

  async changeCount(topic: 'access_keys' | 'domains' | 'iam'): Promise<number> {
    const { rows } = await this.db.query<{ n: bigint }>('SELECT n FROM change_counters WHERE topic = $1', [topic]);
    return Number(rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    await this.queues.wake.close();
    await this.db.close();
  }
}
