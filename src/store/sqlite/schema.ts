import type Database from 'better-sqlite3';
import { migrateBucketUsage } from './bucket-usage.js';
import { migrateManifests } from './manifests.js';
import { migrateTasks } from './tasks-migration.js';
import { migrateVersionStats } from './version-stats.js';
import { REPLICATION_DDL } from './replication-schema.js';
import { OBJECT_VERSION_COLUMNS, VERSIONS_DDL } from './versions.js';
import { migrateObjectLock } from './object-lock.js';

/**
 * The SQLite schema of the embedded MetaStore. Idempotent (`IF NOT EXISTS`), applied at every open.
 * Units: ctime/expire_at Unix seconds, put_time 100-ns units, created_ms milliseconds, fsize bytes.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS settings (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS buckets (
  name    TEXT PRIMARY KEY,
  region  TEXT NOT NULL,
  private INTEGER NOT NULL DEFAULT 0,
  ctime   INTEGER NOT NULL,
  owner   TEXT NOT NULL DEFAULT '',
  source  TEXT,
  source_host TEXT,
  nrop    INTEGER NOT NULL DEFAULT 0,
  styles  TEXT,
  settings TEXT
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS access_keys (
  access_key TEXT PRIMARY KEY,
  secret_key TEXT NOT NULL,
  ctime      INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS domains (
  domain TEXT PRIMARY KEY,
  bucket TEXT NOT NULL REFERENCES buckets (name),
  ctime  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS domains_bucket ON domains (bucket);

CREATE TABLE IF NOT EXISTS objects (
  bucket    TEXT NOT NULL REFERENCES buckets (name),
  key       TEXT NOT NULL,
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
  version_id TEXT,
  version_sort TEXT,
  PRIMARY KEY (bucket, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS objects_expire ON objects (expire_at) WHERE expire_at IS NOT NULL;

-- Stored blobs: reference count, size, per-block CRC-32s (NULL for blobs stored before checksums) and the
-- corrupt flag set when a read or the scrubber found the bytes differ from their checksums.
CREATE TABLE IF NOT EXISTS blobs (
  id          TEXT PRIMARY KEY,
  refs        INTEGER NOT NULL,
  size        INTEGER,
  block_bytes INTEGER,
  sums        BLOB,
  corrupt     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Bytes of inline blobs (small objects stored with their entry, store/inline-blob-store.ts): a rowid table, so the
-- large values stay out of the WITHOUT ROWID blobs tree; the row lives as long as its blobs row.
CREATE TABLE IF NOT EXISTS inline_blobs (
  id   TEXT PRIMARY KEY,
  data BLOB NOT NULL
);

CREATE TABLE IF NOT EXISTS blob_deletions (
  id TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS blocks (
  id         TEXT PRIMARY KEY,
  access_key TEXT NOT NULL,
  size       INTEGER NOT NULL,
  offset     INTEGER NOT NULL,
  chunks     TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blocks_expiry ON blocks (expires_at);

CREATE TABLE IF NOT EXISTS uploads (
  id         TEXT PRIMARY KEY,
  access_key TEXT NOT NULL,
  bucket     TEXT NOT NULL,
  key        TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS uploads_expiry ON uploads (expires_at);

CREATE TABLE IF NOT EXISTS parts (
  upload_id   TEXT NOT NULL,
  part_number INTEGER NOT NULL,
  blob_id     TEXT NOT NULL,
  size        INTEGER NOT NULL,
  md5         TEXT NOT NULL,
  etag        TEXT NOT NULL,
  put_time    INTEGER NOT NULL,
  PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID;

-- The one durable task queue (ports/tasks.ts; store/sql/tasks.ts, jobs.ts, fetch-tasks.ts; the life cycle in
-- queue-table.ts): kind 'job' (pfop) or 'fetch' (async fetch). seq orders submissions; payload is the submission
-- (a job's commands, a fetch task's request JSON), result the outcome (a job's item outcomes, a fetch task's result
-- or last error), code a done job's final code. The job columns are NULL for fetch tasks. Data dirs of earlier
-- versions: tasks-migration.ts moves the rows of their jobs and fetch_tasks tables here.
CREATE TABLE IF NOT EXISTS tasks (
  seq         INTEGER PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL,
  state       TEXT NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  owner       TEXT,
  next_run_ms INTEGER NOT NULL,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  access_key  TEXT NOT NULL,
  payload     TEXT NOT NULL,
  result      TEXT,
  code        INTEGER,
  bucket      TEXT,
  key         TEXT,
  notify_url  TEXT,
  pipeline    TEXT,
  type        INTEGER,
  force       INTEGER,
  req_id      TEXT,
  task_from   TEXT
);
CREATE INDEX IF NOT EXISTS tasks_due ON tasks (kind, state, next_run_ms, seq);
CREATE INDEX IF NOT EXISTS tasks_lane ON tasks (kind, state, pipeline, type, seq);
CREATE INDEX IF NOT EXISTS tasks_kind_seq ON tasks (kind, seq);
CREATE INDEX IF NOT EXISTS tasks_account ON tasks (kind, access_key, seq);
CREATE INDEX IF NOT EXISTS tasks_bucket ON tasks (kind, bucket, seq);
CREATE INDEX IF NOT EXISTS tasks_updated ON tasks (kind, state, updated_ms);

-- Job pipelines (ports/job-queue.ts): named queues with their own concurrency (0 = paused).
CREATE TABLE IF NOT EXISTS pipelines (
  name        TEXT PRIMARY KEY,
  concurrency INTEGER NOT NULL,
  created_ms  INTEGER NOT NULL
) WITHOUT ROWID;

-- Workflow templates (store/sql/workflow-templates.ts): named command lists, one namespace per owner AccessKey.
CREATE TABLE IF NOT EXISTS workflow_templates (
  owner      TEXT NOT NULL,
  name       TEXT NOT NULL,
  fops       TEXT NOT NULL,
  pipeline   TEXT,
  notify_url TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (owner, name)
) WITHOUT ROWID;

-- Bucket event notifications (store/sqlite/event-outbox.ts): written in the transaction of the change they report;
-- seq orders them; payload is opaque JSON text (events/outbox.ts).
CREATE TABLE IF NOT EXISTS event_outbox (
  seq         INTEGER PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  payload     TEXT NOT NULL,
  state       TEXT NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  result      TEXT,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  next_run_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS event_outbox_queue ON event_outbox (state, next_run_ms, seq);
CREATE INDEX IF NOT EXISTS event_outbox_updated ON event_outbox (updated_ms);

-- Leases (store/sql/leases.ts, ports/leases.ts): process liveness (\`process:<owner>\`) and singletons.
CREATE TABLE IF NOT EXISTS leases (
  name        TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  expires_ms  INTEGER NOT NULL,
  acquired_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS leases_owner ON leases (owner);

-- Web console sessions and the sign-in throttle (console-sessions.ts, ports/console-sessions.ts), shared by the
-- worker processes. Sessions are keyed by the SHA-256 of their id (hex); times in Unix ms.
CREATE TABLE IF NOT EXISTS console_sessions (
  id_hash      TEXT PRIMARY KEY,
  access_key   TEXT NOT NULL,
  root         INTEGER NOT NULL,
  csrf         TEXT NOT NULL,
  created_ms   INTEGER NOT NULL,
  last_used_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS console_sessions_key ON console_sessions (access_key);
CREATE INDEX IF NOT EXISTS console_sessions_used ON console_sessions (last_used_ms);
CREATE TABLE IF NOT EXISTS console_sign_in_failures (
  key      TEXT PRIMARY KEY,
  first_ms INTEGER NOT NULL,
  count    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS console_sign_in_failures_first ON console_sign_in_failures (first_ms);

-- The console Overview's history (console-samples.ts, ports/console-samples.ts): traffic per minute per node,
-- storage per hour per bucket. at_s in Unix seconds; data a JSON object.
CREATE TABLE IF NOT EXISTS console_samples (
  kind   TEXT NOT NULL,
  at_s   INTEGER NOT NULL,
  source TEXT NOT NULL,
  data   TEXT NOT NULL,
  PRIMARY KEY (kind, at_s, source)
) WITHOUT ROWID;

-- Kodo IAM (store/sql/iam.ts, ports/iam.ts): sub-users, their key pairs, groups, policies, links by id and a
-- bounded audit log, one namespace per owner AccessKey. Times in Unix ms.
CREATE TABLE IF NOT EXISTS iam_users (
  id            TEXT PRIMARY KEY,
  owner         TEXT NOT NULL,
  alias         TEXT NOT NULL,
  iuid          INTEGER NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  enabled       INTEGER NOT NULL,
  created_ms    INTEGER NOT NULL,
  updated_ms    INTEGER NOT NULL,
  last_login_ms INTEGER NOT NULL DEFAULT 0,
  UNIQUE (owner, alias)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS iam_keypairs (
  access_key TEXT PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  owner      TEXT NOT NULL,
  user_id    TEXT NOT NULL,
  secret_key TEXT NOT NULL,
  enabled    INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS iam_keypairs_user ON iam_keypairs (user_id, created_ms);
CREATE TABLE IF NOT EXISTS iam_groups (
  id          TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  alias       TEXT NOT NULL,
  description TEXT NOT NULL,
  enabled     INTEGER NOT NULL,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  UNIQUE (owner, alias)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS iam_policies (
  id          TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  alias       TEXT NOT NULL,
  description TEXT NOT NULL,
  edit_type   INTEGER NOT NULL,
  statement   TEXT NOT NULL,
  enabled     INTEGER NOT NULL,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  UNIQUE (owner, alias)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS iam_links (
  kind    TEXT NOT NULL,
  from_id TEXT NOT NULL,
  to_id   TEXT NOT NULL,
  PRIMARY KEY (kind, from_id, to_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS iam_links_to ON iam_links (kind, to_id);
CREATE TABLE IF NOT EXISTS iam_audits (
  seq           INTEGER PRIMARY KEY,
  owner         TEXT NOT NULL,
  actor         TEXT NOT NULL,
  service       TEXT NOT NULL,
  action        TEXT NOT NULL,
  resource      TEXT NOT NULL,
  iuid          INTEGER NOT NULL,
  request_id    TEXT NOT NULL,
  source_ip     TEXT NOT NULL,
  error_code    INTEGER NOT NULL,
  error_message TEXT NOT NULL,
  detail        TEXT NOT NULL,
  at_ms         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS iam_audits_owner ON iam_audits (owner, seq);

-- Change counters of the in-memory views (ports/reloading.ts): bumped by triggers, so a change made by any process
-- (another worker, the CLI) is noticed by reading one row.
CREATE TABLE IF NOT EXISTS change_counters (
  topic TEXT PRIMARY KEY,
  n     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO change_counters (topic, n) VALUES ('access_keys', 0), ('domains', 0);
CREATE TRIGGER IF NOT EXISTS access_keys_ins AFTER INSERT ON access_keys
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'access_keys'; END;
CREATE TRIGGER IF NOT EXISTS access_keys_upd AFTER UPDATE ON access_keys
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'access_keys'; END;
CREATE TRIGGER IF NOT EXISTS access_keys_del AFTER DELETE ON access_keys
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'access_keys'; END;
CREATE TRIGGER IF NOT EXISTS domains_ins AFTER INSERT ON domains
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'domains'; END;
CREATE TRIGGER IF NOT EXISTS domains_upd AFTER UPDATE ON domains
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'domains'; END;
CREATE TRIGGER IF NOT EXISTS domains_del AFTER DELETE ON domains
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'domains'; END;
`;

/**
 * The IAM change counter (auth/key-index.ts, iam/enforcement.ts): every change of a sub-user, key pair, group, policy
 * or link bumps topic `iam` in the same transaction, so every process sees an IAM change by reading one row.
 * Self-contained (idempotent); run after SCHEMA by `migrate`.
 */
const IAM_CHANGE_COUNTER = `
INSERT OR IGNORE INTO change_counters (topic, n) VALUES ('iam', 0);
${['iam_users', 'iam_keypairs', 'iam_groups', 'iam_policies', 'iam_links']
  .flatMap((t) => ['INSERT', 'UPDATE', 'DELETE'].map((op) => `CREATE TRIGGER IF NOT EXISTS ${t}_${op.toLowerCase()}_counted AFTER ${op} ON ${t}
  BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'iam'; END;`))
  .join('\n')}
`;

/** Columns added after a table was first created: (table, column, declaration). Applied by `migrate`. */
const ADDED_COLUMNS: Array<[string, string, string]> = [
  ['buckets', 'owner', "TEXT NOT NULL DEFAULT ''"],
  ['buckets', 'source', 'TEXT'],
  ['buckets', 'source_host', 'TEXT'],
  ['buckets', 'nrop', 'INTEGER NOT NULL DEFAULT 0'],
  ['buckets', 'styles', 'TEXT'],
  ['buckets', 'settings', 'TEXT'],
  ['objects', 'transitions', 'TEXT'],
  ['objects', 'restore_status', 'INTEGER'],
  ['objects', 'parts', 'TEXT'],
  ['objects', 'restore_until', 'INTEGER'],
  // Integrity (objects/integrity.ts): blobs of earlier versions have no checksums until scrubbed or read whole.
  ['blobs', 'size', 'INTEGER'],
  ['blobs', 'block_bytes', 'INTEGER'],
  ['blobs', 'sums', 'BLOB'],
  ['blobs', 'corrupt', 'INTEGER NOT NULL DEFAULT 0'],
  // Zero-copy assembly (manifests.ts): block and part digests recorded as they arrive (NULL for older sessions).
  ['blocks', 'sha1', 'TEXT'],
  ['parts', 'block_sha1s', 'BLOB'],
  // S3 additional checksums of parts (s3api/checksum.ts; NULL: none sent, or a part of an earlier version).
  ['parts', 'checksum', 'TEXT'],
  // Worker processes (workers/): the process that claimed a running row (NULL = none: rows of earlier versions).
  ['event_outbox', 'owner', 'TEXT'],
  // Bucket versioning (versions.ts): the current version's id and ordering id (NULL: the null version, unversioned).
  ...OBJECT_VERSION_COLUMNS,
];

/** Statements run after the columns exist (indexes on added columns, back-filled values). Idempotent. */
const AFTER_MIGRATION = `
CREATE INDEX IF NOT EXISTS blobs_corrupt ON blobs (corrupt) WHERE corrupt = 1;
`;

/** Brings a database made by an earlier version up to SCHEMA (idempotent). */
export function migrate(db: Database.Database): void {
  for (const [table, column, decl] of ADDED_COLUMNS) {
    const cols = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (!cols.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${decl}`);
  }
  db.exec(AFTER_MIGRATION);
  db.exec(IAM_CHANGE_COUNTER);
  // pfop jobs and async-fetch tasks of earlier versions move into the one task table (tasks-migration.ts).
  migrateTasks(db);
  // Per-bucket usage counters kept by triggers, computed here for data dirs of earlier versions (bucket-usage.ts).
  migrateBucketUsage(db);
  // Objects assembled from resumable pieces (manifests.ts).
  migrateManifests(db);
  // Noncurrent versions and delete markers (versions.ts).
  db.exec(VERSIONS_DDL);
  // Their per-bucket counters (version-stats.ts).
  migrateVersionStats(db);
  // Object lock (object-lock.ts): each version's retention and legal hold.
  migrateObjectLock(db);
  // Bucket replication targets and outbox (replication-schema.ts).
  db.exec(REPLICATION_DDL);
}
