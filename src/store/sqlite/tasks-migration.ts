/**
 * Data dirs of earlier versions kept pfop jobs in `jobs` and async-fetch tasks in `fetch_tasks`; both now live in
 * the one task table `tasks` (schema.ts, ports/tasks.ts). `migrateTasks` moves their rows over and drops the old
 * tables, in one IMMEDIATE transaction at open: idempotent (nothing to do once they are gone), and a second
 * process opening the same data dir at the same time waits, then finds the work done.
 *
 * Every schema the old tables had is read (columns added over time may be missing): a job row without `state`
 * (the first job engine) is waiting when its code was 1 or 2, else done with that code; without `pipeline` it is
 * in `0.default`; without `seq` the submission order is `created_ms`. Order is kept: jobs by their `seq`, fetch
 * tasks by theirs, so claims and list pages go on in the same order. Running rows keep their owner: recovery
 * (workers/recovery.ts) puts them back once that process is known to be gone.
 */
import type Database from 'better-sqlite3';

/** Moves the rows of the old `jobs` and `fetch_tasks` tables into `tasks` and drops those tables. */
export function migrateTasks(db: Database.Database): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").pluck();
  if (exists.get('jobs') === undefined && exists.get('fetch_tasks') === undefined) return; // a read: no lock taken
  db.transaction(() => {
    if (exists.get('jobs') !== undefined) moveJobs(db);
    if (exists.get('fetch_tasks') !== undefined) moveFetchTasks(db);
  }).immediate();
}

/** `name` when the table has that column, else `fallback` (an SQL expression). */
function columns(db: Database.Database, table: string): (name: string, fallback: string) => string {
  const have = new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));
  return (name, fallback) => (have.has(name) ? name : fallback);
}

function moveJobs(db: Database.Database): void {
  const col = columns(db, 'jobs');
  const state = col('state', "CASE WHEN code IN (1, 2) THEN 'waiting' ELSE 'done' END");
  const created = 'created_ms';
  db.exec(`
    INSERT OR IGNORE INTO tasks (id, kind, access_key, bucket, key, payload, notify_url, pipeline, type, force, req_id,
      task_from, state, code, attempts, result, owner, created_ms, updated_ms, next_run_ms)
    SELECT id, 'job', ${col('access_key', "''")}, bucket, key, fops, notify_url, COALESCE(NULLIF(pipeline, ''), '0.default'),
      type, ${col('force', '0')}, ${col('req_id', "''")}, ${col('task_from', "''")}, st, CASE WHEN st = 'done' THEN code END,
      ${col('attempts', '0')}, ${col('items', 'NULL')}, ${col('owner', 'NULL')}, ${created},
      MAX(${col('updated_ms', '0')}, ${created}), ${created}
    FROM (SELECT *, ${state} AS st FROM jobs)
    ORDER BY ${col('seq', created)}, ${created}, id;
    DROP TABLE jobs;
  `);
}

function moveFetchTasks(db: Database.Database): void {
  const col = columns(db, 'fetch_tasks');
  db.exec(`
    INSERT OR IGNORE INTO tasks (id, kind, access_key, payload, state, attempts, result, owner, created_ms, updated_ms,
      next_run_ms)
    SELECT id, 'fetch', access_key, request, state, attempts, result, ${col('owner', 'NULL')}, created_ms, updated_ms, next_run_ms
    FROM fetch_tasks ORDER BY seq;
    DROP TABLE fetch_tasks;
  `);
}
