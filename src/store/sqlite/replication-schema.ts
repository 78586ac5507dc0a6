/**
 * The replication tables on SQLite (ports/replication.ts, store/sql/replication.ts), self-contained: created by
 * `migrate` (schema.ts) on new and existing data dirs alike. Times in Unix ms, sizes in bytes.
 */
export const REPLICATION_DDL = `
-- Remote targets of bucket replication: endpoint, bucket and the key pair (the secret is never answered or logged).
CREATE TABLE IF NOT EXISTS replication_targets (
  arn           TEXT PRIMARY KEY,
  source_bucket TEXT NOT NULL,
  endpoint      TEXT NOT NULL,
  region        TEXT NOT NULL,
  bucket        TEXT NOT NULL,
  access_key    TEXT NOT NULL,
  secret_key    TEXT NOT NULL,
  path_style    INTEGER NOT NULL DEFAULT 1,
  bandwidth     INTEGER NOT NULL DEFAULT 0,
  created_ms    INTEGER NOT NULL
) WITHOUT ROWID;

-- The replication outbox: one row per (rule, bucket, key), written in the transaction of the change; kept once done
-- (the object's COMPLETED status).
CREATE TABLE IF NOT EXISTS replication_outbox (
  seq         INTEGER PRIMARY KEY,
  rule        TEXT NOT NULL,
  bucket      TEXT NOT NULL,
  key         TEXT NOT NULL,
  state       TEXT NOT NULL,
  gen         INTEGER NOT NULL DEFAULT 1,
  attempts    INTEGER NOT NULL DEFAULT 0,
  owner       TEXT,
  result      TEXT,
  copied      TEXT,
  failed      INTEGER NOT NULL DEFAULT 0,
  size        INTEGER NOT NULL DEFAULT 0,
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  next_run_ms INTEGER NOT NULL,
  UNIQUE (rule, bucket, key)
);
CREATE INDEX IF NOT EXISTS replication_outbox_queue ON replication_outbox (state, next_run_ms, seq);
CREATE INDEX IF NOT EXISTS replication_outbox_key ON replication_outbox (bucket, key);
`;
