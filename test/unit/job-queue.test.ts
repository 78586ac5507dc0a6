/**
 * The JobQueue port (store/sql/jobs.ts) on SQLite and PostgreSQL: claim order (per
 * pipeline, type 0 before type 1, then submission order), state changes as compare-and-set, release and crash
 * recovery, notifying jobs, pipelines, list pages, subscriptions; and, on SQLite, databases made by earlier schemas
 * (the first job engine's rows stay valid; the two tables `jobs` and `fetch_tasks` move into `tasks` at open).
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobQueue, NewJob } from '../../src/ports/job-queue.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();

const job = (id: string, over: Partial<NewJob> = {}): NewJob => ({
  id,
  accessKey: 'ak',
  bucket: 'b',
  key: 'k',
  fops: 'imageInfo',
  pipeline: 'p',
  type: 0,
  force: false,
  reqId: 'r',
  taskFrom: 'pfop',
  createdMs: 1000,
  ...over,
});

describe.each(kinds.names)('JobQueue on %s', (kind) => {
  let q: JobQueue;
  beforeEach(async () => {
    q = (await kinds.fresh(kind))[0]!.jobs;
  });

  it('claims per pipeline: type 0 before type 1, then in submission order; each job once', async () => {
    await q.enqueue(job('idle', { type: 1 }));
    await q.enqueue(job('a'));
    await q.enqueue(job('other', { pipeline: 'x' }));
    await q.enqueue(job('b'));
    expect((await q.pipelinesWithWaitingJobs()).sort()).toEqual(['p', 'x']);
    expect((await q.claim('p', 2000))?.id).toBe('a');
    expect((await q.claim('p', 2000))?.id).toBe('b');
    expect((await q.claim('p', 2000))?.id).toBe('idle');
    expect(await q.claim('p', 2000)).toBeUndefined();
    expect(await q.pipelinesWithWaitingJobs()).toEqual(['x']);
    expect(await q.get('a')).toMatchObject({ state: 'running', code: 2, attempts: 1, updatedMs: 2000, reqId: 'r', force: false });
    expect(await q.get('nope')).toBeUndefined();
  });

  it('saves items only while running; ends with or without notification; finish only from notifying', async () => {
    await q.enqueue(job('a', { notifyUrl: 'http://n/' }));
    expect(await q.saveItems('a', '[1]', 1)).toBe(false); // not running yet
    await q.claim('p', 1);
    expect(await q.saveItems('a', '[2]', 2)).toBe(true);
    expect((await q.get('a'))?.items).toBe('[2]');
    expect(await q.finish('a', 0, 3)).toBe(false); // not notifying
    expect(await q.endItems('a', '[3]', 3, true, 3)).toBe(true);
    expect(await q.get('a')).toMatchObject({ state: 'notifying', code: 2, items: '[3]', notifyUrl: 'http://n/' });
    expect(await q.claimNotifying(4)).toBeUndefined(); // notifying, still this process's
    expect(await q.saveItems('a', '[4]', 4)).toBe(false);
    expect(await q.finish('a', 4, 5)).toBe(true);
    expect(await q.get('a')).toMatchObject({ state: 'done', code: 4 });
    expect(await q.finish('a', 0, 6)).toBe(false);

    await q.enqueue(job('b'));
    await q.claim('p', 7);
    expect(await q.endItems('b', '[]', 3, false, 8)).toBe(true);
    expect(await q.get('b')).toMatchObject({ state: 'done', code: 3 });
    expect(await q.endItems('b', '[]', 0, false, 9)).toBe(false);
  });

  it('release gives the attempt back; requeueAbandoned keeps it (a crash counts)', async () => {
    await q.enqueue(job('a'));
    await q.claim('p', 1);
    expect(await q.release('a', 2)).toBe(true);
    expect(await q.get('a')).toMatchObject({ state: 'waiting', code: 1, attempts: 0 });
    expect(await q.release('a', 3)).toBe(false);
    await q.claim('p', 4);
    await q.saveItems('a', '["first done"]', 5);
    expect(await q.requeueAbandoned(6)).toBe(1);
    expect(await q.get('a')).toMatchObject({ state: 'waiting', code: 1, attempts: 1, items: '["first done"]' });
    expect((await q.claim('p', 7))?.attempts).toBe(2);
  });

  it('pipelines: create, update, ensure keeps an existing one; subscribers hear of jobs and pipeline changes', async () => {
    let heard = 0;
    const off = q.subscribe(() => heard++);
    expect(await q.putPipeline('p', 2, 10)).toBe('created');
    expect(await q.putPipeline('p', 0, 20)).toBe('updated');
    await q.ensurePipeline('p', 5, 30);
    await q.ensurePipeline('0.default', 3, 40);
    expect(await q.listPipelines()).toEqual([
      { name: '0.default', concurrency: 3, createdMs: 40 },
      { name: 'p', concurrency: 0, createdMs: 10 },
    ]);
    await q.enqueue(job('a'));
    expect(heard).toBe(3);
    off();
    await q.enqueue(job('b'));
    expect(heard).toBe(3);
  });

  it('lists newest first with filters and a cursor; counts by state', async () => {
    for (let i = 0; i < 5; i++) await q.enqueue(job(`j${i}`, { accessKey: i % 2 === 0 ? 'even' : 'odd' }));
    await q.claim('p', 10);
    const first = await q.list({}, undefined, 2);
    expect(first.jobs.map((j) => j.id)).toEqual(['j4', 'j3']);
    expect(first.next).toBeTypeOf('number');
    const second = await q.list({}, first.next, 2);
    expect(second.jobs.map((j) => j.id)).toEqual(['j2', 'j1']);
    const last = await q.list({}, second.next, 2);
    expect(last.jobs.map((j) => j.id)).toEqual(['j0']);
    expect(last.next).toBeUndefined();
    expect((await q.list({ accessKey: 'even' }, undefined, 10)).jobs.map((j) => j.id)).toEqual(['j4', 'j2', 'j0']);
    expect((await q.list({ code: 2 }, undefined, 10)).jobs.map((j) => j.id)).toEqual(['j0']);
    expect((await q.list({ pipeline: 'x' }, undefined, 10)).jobs).toEqual([]);
    expect(await q.countByState()).toEqual({ waiting: 4, running: 1, notifying: 0, done: 0 });
    expect(await q.countByState('odd')).toEqual({ waiting: 2, running: 0, notifying: 0, done: 0 });
    expect(await q.depth()).toEqual({ waiting: 4, running: 1, notifying: 0 });
    expect(await q.getPipeline('nope')).toBeUndefined();
  });
});

/** A database file at `path` with the jobs table of the first schema (no state column) and the row `insert` adds. */
function firstSchemaDb(path: string, insert: string): string {
  const old = new Database(path);
  old.exec(`CREATE TABLE jobs (id TEXT PRIMARY KEY, bucket TEXT NOT NULL, key TEXT NOT NULL, fops TEXT NOT NULL,
    notify_url TEXT, pipeline TEXT, type INTEGER NOT NULL DEFAULT 0, code INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL) WITHOUT ROWID`);
  old.prepare(insert).run();
  old.close();
  return path;
}

describe('SqliteJobQueue', () => {
  let dir = '';
  let meta: SqliteMetaStore;
  let q: JobQueue;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-jobs-'));
    meta = new SqliteMetaStore(join(dir, 'meta.db'));
    q = meta.jobs;
  });
  afterEach(async () => {
    await meta.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('jobs of the previous schema stay valid: waiting, in 0.default, claimable', async () => {
    await meta.close();
    const path = firstSchemaDb(
      join(dir, 'old.db'),
      "INSERT INTO jobs (id, bucket, key, fops, notify_url, pipeline, type, code, created_ms) VALUES ('z0.old', 'b', 'k', 'imageInfo', NULL, NULL, 0, 1, 5)",
    );
    meta = new SqliteMetaStore(path);
    q = meta.jobs;
    expect(await q.get('z0.old')).toMatchObject({ state: 'waiting', code: 1, pipeline: '0.default', attempts: 0, force: false });
    await q.enqueue(job('new', { pipeline: '0.default' }));
    expect((await q.claim('0.default', 10))?.id).toBe('z0.old');
    expect((await q.claim('0.default', 10))?.id).toBe('new');
  });

  it('a data dir of the two-table schema: jobs and fetch tasks move into the one task table at open, once', async () => {
    await meta.close();
    const path = join(dir, 'two-tables.db');
    const old = new Database(path);
    // The jobs and fetch_tasks tables as the previous release left them (store/sqlite/schema.ts before `tasks`).
    old.exec(`CREATE TABLE jobs (id TEXT PRIMARY KEY, bucket TEXT NOT NULL, key TEXT NOT NULL, fops TEXT NOT NULL,
      notify_url TEXT, pipeline TEXT, type INTEGER NOT NULL DEFAULT 0, code INTEGER NOT NULL DEFAULT 1,
      created_ms INTEGER NOT NULL, seq INTEGER NOT NULL DEFAULT 0, access_key TEXT NOT NULL DEFAULT '',
      force INTEGER NOT NULL DEFAULT 0, req_id TEXT NOT NULL DEFAULT '', task_from TEXT NOT NULL DEFAULT '',
      state TEXT NOT NULL DEFAULT 'waiting', attempts INTEGER NOT NULL DEFAULT 0, items TEXT,
      updated_ms INTEGER NOT NULL DEFAULT 0, owner TEXT) WITHOUT ROWID;
      CREATE TABLE fetch_tasks (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, access_key TEXT NOT NULL,
      request TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, result TEXT,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, next_run_ms INTEGER NOT NULL, owner TEXT);`);
    const insertJob = old.prepare(`INSERT INTO jobs (id, seq, bucket, key, fops, notify_url, pipeline, type, code, state,
      attempts, items, access_key, force, req_id, task_from, owner, created_ms, updated_ms)
      VALUES (?, ?, 'b', 'k', 'imageInfo', ?, 'p', ?, ?, ?, ?, ?, 'ak', 1, 'r', 'pfop', ?, 10, 20)`);
    insertJob.run('j.done', 1, null, 0, 3, 'done', 1, '["x"]', null);
    insertJob.run('j.running', 2, 'http://n/', 0, 2, 'running', 1, '["half"]', 'host:9:dead');
    insertJob.run('j.idle', 3, null, 1, 1, 'waiting', 0, null, null);
    insertJob.run('j.next', 4, null, 0, 1, 'waiting', 0, null, null);
    const insertTask = old.prepare(`INSERT INTO fetch_tasks (id, access_key, request, state, attempts, result, created_ms,
      updated_ms, next_run_ms) VALUES (?, 'ak', ?, ?, ?, ?, 10, 20, ?)`);
    insertTask.run('t.retry', '{"n":1}', 'waiting', 1, '{"error":"busy"}', 5000);
    insertTask.run('t.done', '{"n":2}', 'done', 1, '{"key":"k"}', 10);
    insertTask.run('t.new', '{"n":3}', 'waiting', 0, null, 10);
    old.close();

    const check = async (m: SqliteMetaStore): Promise<void> => {
      expect(await m.jobs.get('j.done')).toMatchObject({ state: 'done', code: 3, items: '["x"]', force: true, attempts: 1 });
      expect(await m.jobs.get('j.running')).toMatchObject({ state: 'running', code: 2, items: '["half"]', notifyUrl: 'http://n/' });
      expect((await m.jobs.list({}, undefined, 10)).jobs.map((j) => j.id)).toEqual(['j.next', 'j.idle', 'j.running', 'j.done']);
      expect(await m.fetchTasks.get('t.retry')).toMatchObject({ state: 'waiting', attempts: 1, result: '{"error":"busy"}', nextRunMs: 5000 });
      expect((await m.fetchTasks.list(undefined, undefined, 10)).tasks.map((t) => t.id)).toEqual(['t.new', 't.done', 't.retry']);
    };
    meta = new SqliteMetaStore(path);
    await check(meta);
    await meta.close();
    meta = new SqliteMetaStore(path); // idempotent: a second open finds nothing to move
    await check(meta);
    const db = new Database(path, { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('jobs', 'fetch_tasks', 'tasks')").pluck().all();
    const byKind = db.prepare('SELECT kind, COUNT(*) AS n FROM tasks GROUP BY kind ORDER BY kind').all();
    db.close();
    expect(tables).toEqual(['tasks']);
    expect(byKind).toEqual([{ kind: 'fetch', n: 3 }, { kind: 'job', n: 4 }]);
    // The moved rows go on: the dead owner's job is taken back, claims keep their order (type 0 first; due first).
    expect(await meta.tasks.requeueAbandoned(30)).toEqual({ job: 1, fetch: 0 });
    expect((await meta.jobs.claim('p', 40))?.id).toBe('j.running');
    expect((await meta.jobs.claim('p', 40))?.id).toBe('j.next');
    expect((await meta.jobs.claim('p', 40))?.id).toBe('j.idle');
    expect((await meta.fetchTasks.claim(40))?.id).toBe('t.new');
    expect(await meta.fetchTasks.claim(40)).toBeUndefined();
    expect((await meta.fetchTasks.claim(5000))?.id).toBe('t.retry');
  });

  it('a done job of the first schema (no state column, final code) stays done', async () => {
    await meta.close();
    const path = firstSchemaDb(
      join(dir, 'first.db'),
      "INSERT INTO jobs (id, bucket, key, fops, pipeline, code, created_ms) VALUES ('z0.done', 'b', 'k', 'imageInfo', '', 0, 5)",
    );
    meta = new SqliteMetaStore(path);
    expect(await meta.jobs.get('z0.done')).toMatchObject({ state: 'done', code: 0, pipeline: '0.default' });
    expect(await meta.jobs.claim('0.default', 10)).toBeUndefined();
  });
});
