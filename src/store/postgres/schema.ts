/**
 * The PostgreSQL schema of the cluster MetaStore, as versioned migrations (migrations.ts applies the missing ones
 * at start, in order, each in its own transaction). Never edit a released migration: add one.
 *
 * The tables mirror the embedded SQLite store (store/sqlite/schema.ts) column for column, so the two
 * implementations read alike. Differences:
 * - Keys, bucket names and every text compared in listings are `COLLATE "C"`: byte order of UTF-8, the order
 *   of SQLite's BINARY collation and of Kodo's listings (docs/development/kodo-protocol.md §8.3).
 * - Integers that may pass 2^31 are `bigint` (sizes in bytes, put_time in 100-ns units, times in ms).
 * - `bucket_usage` is sharded: a row per (bucket, shard) where the shard is the writing connection's backend pid
 *   mod 16, so concurrent commits into one bucket do not queue on one counter row; usage is the sum of the shards.
 *   Its triggers run once per statement (transition tables), so a statement changing many entries updates each
 *   counter row once.
 * - Change counters (access keys, domains) are bumped by triggers as in SQLite; changes of the queue tables and
 *   leases send `NOTIFY granary_wake` (delivered at commit) so idle workers on every node wake (db.ts listener).
 * Units: ctime/expire_at Unix seconds, put_time 100-ns units, *_ms milliseconds, fsize/size bytes.
 */

/** One migration: `version` (1, 2, …, never reused) and the statements applied in one transaction. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const CORE = `
CREATE TABLE settings (
  name  text COLLATE "C" PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE buckets (
  name        text COLLATE "C" PRIMARY KEY,
  region      text NOT NULL,
  private     boolean NOT NULL DEFAULT false,
  ctime       bigint NOT NULL,
  owner       text NOT NULL DEFAULT '',
  source      text,
  source_host text,
  nrop        boolean NOT NULL DEFAULT false,
  styles      text,
  settings    text
);

CREATE TABLE access_keys (
  access_key text COLLATE "C" PRIMARY KEY,
  secret_key text NOT NULL,
  ctime      bigint NOT NULL
);

CREATE TABLE domains (
  domain text COLLATE "C" PRIMARY KEY,
  bucket text COLLATE "C" NOT NULL REFERENCES buckets (name),
  ctime  bigint NOT NULL
);
CREATE INDEX domains_bucket ON domains (bucket);

CREATE TABLE objects (
  bucket         text COLLATE "C" NOT NULL REFERENCES buckets (name),
  key            text COLLATE "C" NOT NULL,
  blob_id        text COLLATE "C" NOT NULL,
  fsize          bigint NOT NULL,
  hash           text NOT NULL,
  md5            text NOT NULL,
  mime           text NOT NULL,
  put_time       bigint NOT NULL,
  type           integer NOT NULL DEFAULT 0,
  status         integer NOT NULL DEFAULT 0,
  end_user       text,
  meta           text,
  expire_at      bigint,
  transitions    text,
  restore_status integer,
  restore_until  bigint,
  parts          text,
  PRIMARY KEY (bucket, key)
);
CREATE INDEX objects_expire ON objects (expire_at) WHERE expire_at IS NOT NULL;

-- Stored blobs (and manifests, ids 'm…'): reference count, size, per-block CRC-32s (NULL for blobs stored without
-- them) and the corrupt flag.
CREATE TABLE blobs (
  id          text COLLATE "C" PRIMARY KEY,
  refs        integer NOT NULL,
  size        bigint,
  block_bytes integer,
  sums        bytea,
  corrupt     boolean NOT NULL DEFAULT false
);
CREATE INDEX blobs_corrupt ON blobs (id) WHERE corrupt;

-- Bytes of inline blobs (small objects stored with their entry, store/inline-blob-store.ts).
CREATE TABLE inline_blobs (
  id   text COLLATE "C" PRIMARY KEY,
  data bytea NOT NULL
);

CREATE TABLE blob_deletions (
  id text COLLATE "C" PRIMARY KEY
);

-- Pieces of manifests (ports/manifest.ts): seq 0.. in object order; each row holds one reference on its blob.
CREATE TABLE manifest_pieces (
  manifest_id text COLLATE "C" NOT NULL,
  seq         integer NOT NULL,
  piece_id    text COLLATE "C" NOT NULL,
  size        bigint NOT NULL,
  PRIMARY KEY (manifest_id, seq)
);

-- Resumable sessions: v1 blocks (chunks: JSON array of blob ids) and v2 uploads with their parts.
CREATE TABLE blocks (
  id         text COLLATE "C" PRIMARY KEY,
  access_key text NOT NULL,
  size       bigint NOT NULL,
  "offset"   bigint NOT NULL,
  chunks     text NOT NULL,
  expires_at bigint NOT NULL,
  sha1       text
);
CREATE INDEX blocks_expiry ON blocks (expires_at);

CREATE TABLE uploads (
  id         text COLLATE "C" PRIMARY KEY,
  access_key text NOT NULL,
  bucket     text COLLATE "C" NOT NULL,
  key        text COLLATE "C",
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX uploads_expiry ON uploads (expires_at);

CREATE TABLE parts (
  upload_id   text COLLATE "C" NOT NULL,
  part_number integer NOT NULL,
  blob_id     text COLLATE "C" NOT NULL,
  size        bigint NOT NULL,
  md5         text NOT NULL,
  etag        text NOT NULL,
  put_time    bigint NOT NULL,
  block_sha1s bytea,
  PRIMARY KEY (upload_id, part_number)
);

-- The one durable task queue (ports/tasks.ts; store/sql/: tasks.ts, jobs.ts, fetch-tasks.ts, life cycle queue-table.ts):
-- kind 'job' (pfop) or 'fetch' (async fetch). seq orders submissions; payload is the submission (a job's commands,
-- a fetch task's request JSON), result the outcome (a job's item outcomes, a fetch task's result or last error),
-- code a done job's final code. The job columns are NULL for fetch tasks.
CREATE TABLE tasks (
  seq         bigserial PRIMARY KEY,
  id          text COLLATE "C" NOT NULL UNIQUE,
  kind        text NOT NULL CHECK (kind IN ('job', 'fetch')),
  state       text NOT NULL,
  attempts    integer NOT NULL DEFAULT 0,
  owner       text,
  next_run_ms bigint NOT NULL,
  created_ms  bigint NOT NULL,
  updated_ms  bigint NOT NULL,
  access_key  text NOT NULL,
  payload     text NOT NULL,
  result      text,
  code        integer,
  bucket      text,
  key         text,
  notify_url  text,
  pipeline    text COLLATE "C",
  type        integer,
  force       boolean,
  req_id      text,
  task_from   text
);
CREATE INDEX tasks_due ON tasks (kind, state, next_run_ms, seq);
CREATE INDEX tasks_lane ON tasks (kind, state, pipeline, type, seq);
CREATE INDEX tasks_kind_seq ON tasks (kind, seq);
CREATE INDEX tasks_account ON tasks (kind, access_key, seq);
CREATE INDEX tasks_bucket ON tasks (kind, bucket, seq);
CREATE INDEX tasks_updated ON tasks (kind, state, updated_ms);

-- Pipelines of the jobs: named queues with their own concurrency (0 = paused).
CREATE TABLE pipelines (
  name        text COLLATE "C" PRIMARY KEY,
  concurrency integer NOT NULL,
  created_ms  bigint NOT NULL
);

-- Workflow templates (ports/workflow-templates.ts): one namespace per owner AccessKey.
CREATE TABLE workflow_templates (
  owner      text COLLATE "C" NOT NULL,
  name       text COLLATE "C" NOT NULL,
  fops       text NOT NULL,
  pipeline   text,
  notify_url text,
  created_ms bigint NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (owner, name)
);

-- Bucket event notifications (ports/events.ts): written in the transaction of the change they report.
CREATE TABLE event_outbox (
  seq         bigserial PRIMARY KEY,
  id          text COLLATE "C" NOT NULL UNIQUE,
  payload     text NOT NULL,
  state       text NOT NULL,
  attempts    integer NOT NULL DEFAULT 0,
  result      text,
  owner       text,
  created_ms  bigint NOT NULL,
  updated_ms  bigint NOT NULL,
  next_run_ms bigint NOT NULL
);
CREATE INDEX event_outbox_queue ON event_outbox (state, next_run_ms, seq);
CREATE INDEX event_outbox_updated ON event_outbox (updated_ms);

-- Leases (ports/leases.ts): process liveness ('process:<owner>') and singletons.
CREATE TABLE leases (
  name        text COLLATE "C" PRIMARY KEY,
  owner       text COLLATE "C" NOT NULL,
  expires_ms  bigint NOT NULL,
  acquired_ms bigint NOT NULL
);
CREATE INDEX leases_owner ON leases (owner);

-- Per-bucket usage (bytes, entries), sharded by the writing connection (see the module comment).
CREATE TABLE bucket_usage (
  bucket text COLLATE "C" NOT NULL,
  shard  integer NOT NULL,
  bytes  bigint NOT NULL,
  count  bigint NOT NULL,
  PRIMARY KEY (bucket, shard)
);

-- The usage triggers are per statement, over transition tables: one counter update per statement and bucket, so a
-- statement inserting or deleting many entries (a sweep, a bulk import) does not update one row once per entry
-- (each new version of a row updated again in the same transaction costs a walk of its version chain).
CREATE FUNCTION granary_usage_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bucket_usage (bucket, shard, bytes, count)
    SELECT bucket, pg_backend_pid() % 16, SUM(fsize), COUNT(*) FROM new_rows GROUP BY bucket
  ON CONFLICT (bucket, shard) DO UPDATE SET bytes = bucket_usage.bytes + excluded.bytes,
    count = bucket_usage.count + excluded.count;
  RETURN NULL;
END $$;

CREATE FUNCTION granary_usage_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bucket_usage (bucket, shard, bytes, count)
    SELECT bucket, pg_backend_pid() % 16, -SUM(fsize), -COUNT(*) FROM old_rows GROUP BY bucket
  ON CONFLICT (bucket, shard) DO UPDATE SET bytes = bucket_usage.bytes + excluded.bytes,
    count = bucket_usage.count + excluded.count;
  RETURN NULL;
END $$;

-- An update changes usage only when it changes a size or a bucket: the buckets whose sums differ.
CREATE FUNCTION granary_usage_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bucket_usage (bucket, shard, bytes, count)
    SELECT bucket, pg_backend_pid() % 16, SUM(dbytes), SUM(dcount) FROM (
      SELECT bucket, -fsize AS dbytes, -1 AS dcount FROM old_rows
      UNION ALL SELECT bucket, fsize, 1 FROM new_rows) d
    GROUP BY bucket HAVING SUM(dbytes) <> 0 OR SUM(dcount) <> 0
  ON CONFLICT (bucket, shard) DO UPDATE SET bytes = bucket_usage.bytes + excluded.bytes,
    count = bucket_usage.count + excluded.count;
  RETURN NULL;
END $$;

CREATE TRIGGER objects_usage_insert AFTER INSERT ON objects REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION granary_usage_inserted();
CREATE TRIGGER objects_usage_delete AFTER DELETE ON objects REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION granary_usage_deleted();
CREATE TRIGGER objects_usage_update AFTER UPDATE ON objects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION granary_usage_updated();

CREATE FUNCTION granary_bucket_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bucket_usage WHERE bucket = OLD.name;
  RETURN NULL;
END $$;
CREATE TRIGGER buckets_usage_drop AFTER DELETE ON buckets FOR EACH ROW EXECUTE FUNCTION granary_bucket_dropped();

-- Change counters of the in-memory views (ports/reloading.ts).
CREATE TABLE change_counters (
  topic text COLLATE "C" PRIMARY KEY,
  n     bigint NOT NULL
);
INSERT INTO change_counters (topic, n) VALUES ('access_keys', 0), ('domains', 0);

CREATE FUNCTION granary_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE change_counters SET n = n + 1 WHERE topic = TG_ARGV[0];
  RETURN NULL;
END $$;
CREATE TRIGGER access_keys_changed AFTER INSERT OR UPDATE OR DELETE ON access_keys
  FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('access_keys');
CREATE TRIGGER domains_changed AFTER INSERT OR UPDATE OR DELETE ON domains
  FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('domains');

-- Wake-ups: a change of a queue table or of the leases notifies every listening node at commit (one
-- notification per transaction and table: PostgreSQL folds identical ones). Row-level: a statement that changes
-- no row (a claim finding nothing, a requeue with nothing abandoned) notifies nobody, so an idle node's look for
-- work never wakes the others (statement-level triggers fire even for zero rows, and idle nodes would wake each
-- other forever). Leases notify on insert and delete only (renewals are updates).
CREATE FUNCTION granary_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('granary_wake', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_wake AFTER INSERT OR UPDATE OR DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION granary_wake();
CREATE TRIGGER pipelines_wake AFTER INSERT OR UPDATE OR DELETE ON pipelines
  FOR EACH ROW EXECUTE FUNCTION granary_wake();
CREATE TRIGGER event_outbox_wake AFTER INSERT OR UPDATE OR DELETE ON event_outbox
  FOR EACH ROW EXECUTE FUNCTION granary_wake();
CREATE TRIGGER leases_wake AFTER INSERT OR DELETE ON leases FOR EACH ROW EXECUTE FUNCTION granary_wake();
`;

/** Every migration, in order. */
/**
 * Web console sessions and the sign-in throttle (console-sessions.ts, ports/console-sessions.ts), shared by every
 * node. Sessions are keyed by the SHA-256 of their id (hex); times in Unix ms.
 */
const CONSOLE_SESSIONS = `
CREATE TABLE console_sessions (
  id_hash      text PRIMARY KEY,
  access_key   text NOT NULL,
  root         boolean NOT NULL,
  csrf         text NOT NULL,
  created_ms   bigint NOT NULL,
  last_used_ms bigint NOT NULL
);
CREATE INDEX console_sessions_key ON console_sessions (access_key);
CREATE INDEX console_sessions_used ON console_sessions (last_used_ms);
CREATE TABLE console_sign_in_failures (
  key      text PRIMARY KEY,
  first_ms bigint NOT NULL,
  count    integer NOT NULL
);
CREATE INDEX console_sign_in_failures_first ON console_sign_in_failures (first_ms);
`;

/**
 * The console Overview's history (console-samples.ts, ports/console-samples.ts): traffic per minute per node,
 * storage per hour per bucket. `at_s` Unix seconds; `data` the sample's figures.
 */
const CONSOLE_SAMPLES = `
CREATE TABLE console_samples (
  kind   text NOT NULL,
  at_s   bigint NOT NULL,
  source text NOT NULL,
  data   jsonb NOT NULL,
  PRIMARY KEY (kind, at_s, source)
);
`;

/** S3 additional checksums of multipart parts (s3api/checksum.ts; NULL: none sent, or a part of an earlier version). */
const PART_CHECKSUMS = `
ALTER TABLE parts ADD COLUMN checksum text;
`;

/**
 * Kodo IAM (store/sql/iam.ts, ports/iam.ts): sub-users, their key pairs, groups, policies, links by id and a
 * bounded audit log, one namespace per owner AccessKey. Times in Unix ms.
 */
const IAM = `
CREATE TABLE iam_users (
  id            text COLLATE "C" PRIMARY KEY,
  owner         text COLLATE "C" NOT NULL,
  alias         text COLLATE "C" NOT NULL,
  iuid          bigint NOT NULL UNIQUE,
  password_hash text NOT NULL,
  enabled       boolean NOT NULL,
  created_ms    bigint NOT NULL,
  updated_ms    bigint NOT NULL,
  last_login_ms bigint NOT NULL DEFAULT 0,
  UNIQUE (owner, alias)
);
CREATE TABLE iam_keypairs (
  access_key text COLLATE "C" PRIMARY KEY,
  id         text COLLATE "C" NOT NULL UNIQUE,
  owner      text COLLATE "C" NOT NULL,
  user_id    text COLLATE "C" NOT NULL,
  secret_key text NOT NULL,
  enabled    boolean NOT NULL,
  created_ms bigint NOT NULL
);
CREATE INDEX iam_keypairs_user ON iam_keypairs (user_id, created_ms);
CREATE TABLE iam_groups (
  id          text COLLATE "C" PRIMARY KEY,
  owner       text COLLATE "C" NOT NULL,
  alias       text COLLATE "C" NOT NULL,
  description text NOT NULL,
  enabled     boolean NOT NULL,
  created_ms  bigint NOT NULL,
  updated_ms  bigint NOT NULL,
  UNIQUE (owner, alias)
);
CREATE TABLE iam_policies (
  id          text COLLATE "C" PRIMARY KEY,
  owner       text COLLATE "C" NOT NULL,
  alias       text COLLATE "C" NOT NULL,
  description text NOT NULL,
  edit_type   integer NOT NULL,
  statement   text NOT NULL,
  enabled     boolean NOT NULL,
  created_ms  bigint NOT NULL,
  updated_ms  bigint NOT NULL,
  UNIQUE (owner, alias)
);
CREATE TABLE iam_links (
  kind    text COLLATE "C" NOT NULL,
  from_id text COLLATE "C" NOT NULL,
  to_id   text COLLATE "C" NOT NULL,
  PRIMARY KEY (kind, from_id, to_id)
);
CREATE INDEX iam_links_to ON iam_links (kind, to_id);
CREATE TABLE iam_audits (
  seq           bigserial PRIMARY KEY,
  owner         text COLLATE "C" NOT NULL,
  actor         text NOT NULL,
  service       text NOT NULL,
  action        text NOT NULL,
  resource      text NOT NULL,
  iuid          bigint NOT NULL,
  request_id    text NOT NULL,
  source_ip     text NOT NULL,
  error_code    integer NOT NULL,
  error_message text NOT NULL,
  detail        text NOT NULL,
  at_ms         bigint NOT NULL
);
CREATE INDEX iam_audits_owner ON iam_audits (owner, seq);
`;

/**
 * The IAM change counter (auth/key-index.ts): every change of a sub-user, key pair, group, policy or link bumps
 * topic `iam` in the same transaction, so every node sees an IAM change by reading one row (within its poll).
 */
const IAM_CHANGE_COUNTER = `
INSERT INTO change_counters (topic, n) VALUES ('iam', 0) ON CONFLICT (topic) DO NOTHING;
CREATE TRIGGER iam_users_changed AFTER INSERT OR UPDATE OR DELETE ON iam_users FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('iam');
CREATE TRIGGER iam_keypairs_changed AFTER INSERT OR UPDATE OR DELETE ON iam_keypairs FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('iam');
CREATE TRIGGER iam_groups_changed AFTER INSERT OR UPDATE OR DELETE ON iam_groups FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('iam');
CREATE TRIGGER iam_policies_changed AFTER INSERT OR UPDATE OR DELETE ON iam_policies FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('iam');
CREATE TRIGGER iam_links_changed AFTER INSERT OR UPDATE OR DELETE ON iam_links FOR EACH STATEMENT EXECUTE FUNCTION granary_count_change('iam');
`;

/**
 * Bucket versioning (versions.ts, docs/reference/versioning.md): the current version's id and ordering id on
 * `objects` (NULL, NULL: the null version written while the bucket was unversioned — every row before this
 * migration), and `object_versions` holding noncurrent versions and delete markers (`marker`; a marker has no
 * blob: blob_id ''), keyed by (bucket, key, sort_id) — the primary key serves every version read and the
 * ListObjectVersions walk. Each non-marker row holds one blob reference (blob-refs.ts). Not counted in
 * `bucket_usage` (usage counts current entries); `version_usage` counts them instead (MetaStore.versionStats: the
 * version gauges of /metrics), sharded like `bucket_usage` and kept by per-statement triggers (rows of
 * `object_versions` are inserted and deleted, never updated). Self-contained: renumbering it is one line.
 */
const OBJECT_VERSIONS = `
ALTER TABLE objects ADD COLUMN version_id text COLLATE "C", ADD COLUMN version_sort text COLLATE "C";
CREATE TABLE object_versions (
  bucket         text COLLATE "C" NOT NULL REFERENCES buckets (name),
  key            text COLLATE "C" NOT NULL,
  sort_id        text COLLATE "C" NOT NULL,
  version_id     text COLLATE "C" NOT NULL,
  marker         boolean NOT NULL DEFAULT false,
  blob_id        text COLLATE "C" NOT NULL,
  fsize          bigint NOT NULL,
  hash           text NOT NULL,
  md5            text NOT NULL,
  mime           text NOT NULL,
  put_time       bigint NOT NULL,
  type           integer NOT NULL DEFAULT 0,
  status         integer NOT NULL DEFAULT 0,
  end_user       text,
  meta           text,
  expire_at      bigint,
  transitions    text,
  restore_status integer,
  restore_until  bigint,
  parts          text,
  PRIMARY KEY (bucket, key, sort_id)
);

CREATE TABLE version_usage (
  bucket   text COLLATE "C" NOT NULL,
  shard    integer NOT NULL,
  versions bigint NOT NULL,
  markers  bigint NOT NULL,
  bytes    bigint NOT NULL,
  PRIMARY KEY (bucket, shard)
);

CREATE FUNCTION granary_versions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO version_usage (bucket, shard, versions, markers, bytes)
      SELECT bucket, pg_backend_pid() % 16, COUNT(*) FILTER (WHERE NOT marker), COUNT(*) FILTER (WHERE marker),
        COALESCE(SUM(fsize) FILTER (WHERE NOT marker), 0) FROM new_rows GROUP BY bucket
    ON CONFLICT (bucket, shard) DO UPDATE SET versions = version_usage.versions + excluded.versions,
      markers = version_usage.markers + excluded.markers, bytes = version_usage.bytes + excluded.bytes;
  ELSE
    INSERT INTO version_usage (bucket, shard, versions, markers, bytes)
      SELECT bucket, pg_backend_pid() % 16, -COUNT(*) FILTER (WHERE NOT marker), -COUNT(*) FILTER (WHERE marker),
        -COALESCE(SUM(fsize) FILTER (WHERE NOT marker), 0) FROM old_rows GROUP BY bucket
    ON CONFLICT (bucket, shard) DO UPDATE SET versions = version_usage.versions + excluded.versions,
      markers = version_usage.markers + excluded.markers, bytes = version_usage.bytes + excluded.bytes;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER object_versions_usage_insert AFTER INSERT ON object_versions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION granary_versions_changed();
CREATE TRIGGER object_versions_usage_delete AFTER DELETE ON object_versions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION granary_versions_changed();

CREATE FUNCTION granary_bucket_versions_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM version_usage WHERE bucket = OLD.name;
  RETURN NULL;
END $$;
CREATE TRIGGER buckets_versions_drop AFTER DELETE ON buckets FOR EACH ROW EXECUTE FUNCTION granary_bucket_versions_dropped();
`;

/**
 * Bucket replication (ports/replication.ts, store/sql/replication.ts): remote targets with their key pair (never
 * answered or logged) and the outbox, one row per (rule, bucket, key) written in the transaction of the change and
 * kept once done (the object's COMPLETED status). Self-contained (migration REPLICATION_VERSION).
 */
const REPLICATION = `
CREATE TABLE replication_targets (
  arn           text COLLATE "C" PRIMARY KEY,
  source_bucket text COLLATE "C" NOT NULL,
  endpoint      text NOT NULL,
  region        text NOT NULL,
  bucket        text NOT NULL,
  access_key    text NOT NULL,
  secret_key    text NOT NULL,
  path_style    boolean NOT NULL DEFAULT true,
  bandwidth     bigint NOT NULL DEFAULT 0,
  created_ms    bigint NOT NULL
);
CREATE TABLE replication_outbox (
  seq         bigserial PRIMARY KEY,
  rule        text COLLATE "C" NOT NULL,
  bucket      text COLLATE "C" NOT NULL,
  key         text COLLATE "C" NOT NULL,
  state       text NOT NULL,
  gen         bigint NOT NULL DEFAULT 1,
  attempts    integer NOT NULL DEFAULT 0,
  owner       text,
  result      text,
  copied      text,
  failed      integer NOT NULL DEFAULT 0,
  size        bigint NOT NULL DEFAULT 0,
  created_ms  bigint NOT NULL,
  updated_ms  bigint NOT NULL,
  next_run_ms bigint NOT NULL,
  UNIQUE (rule, bucket, key)
);
CREATE INDEX replication_outbox_queue ON replication_outbox (state, next_run_ms, seq);
CREATE INDEX replication_outbox_key ON replication_outbox (bucket, key);
CREATE TRIGGER replication_outbox_wake AFTER INSERT OR UPDATE OR DELETE ON replication_outbox
  FOR EACH ROW EXECUTE FUNCTION granary_wake();
`;

/** The replication migration's number. */
const REPLICATION_VERSION = 8;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'core', sql: CORE },
  { version: 2, name: 'console-sessions', sql: CONSOLE_SESSIONS },
  { version: 3, name: 'console-samples', sql: CONSOLE_SAMPLES },
  { version: 4, name: 'part-checksums', sql: PART_CHECKSUMS },
  { version: 5, name: 'iam', sql: IAM },
  { version: 6, name: 'iam-change-counter', sql: IAM_CHANGE_COUNTER },
  { version: 7, name: 'object-versions', sql: OBJECT_VERSIONS },
  { version: REPLICATION_VERSION, name: 'replication', sql: REPLICATION },
];
