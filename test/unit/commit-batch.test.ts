/**
 * Batched commits (store/sqlite/commit-batch.ts): concurrent commit bodies share one transaction and one WAL
 * fdatasync; a failing body is rolled back alone; a write lock held elsewhere is waited for without blocking the
 * event loop; the checkpoint thread rewinds a log that keeps growing (checkpointer.ts).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitBatch } from '../../src/store/sqlite/commit-batch.js';
import { WalSync } from '../../src/store/sqlite/group-commit.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import type { ObjectRecord } from '../../src/ports/meta.js';

let dir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-batch-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A WAL database with one table, and a batch on it. */
function openBatch(): { db: Database.Database; wal: WalSync; batch: CommitBatch; path: string } {
  const path = join(dir, 'b.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 2000');
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
  const wal = new WalSync(`${path}-wal`);
  return { db, wal, batch: new CommitBatch(db, wal, 2000), path };
}

describe('CommitBatch', () => {
  it('runs concurrent bodies in one transaction and one fdatasync, each resolving with its value', async () => {
    const { db, wal, batch } = openBatch();
    const ins = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const syncsBefore = wal.syncs;
    const values = await Promise.all(Array.from({ length: 50 }, (_, i) => batch.run(() => ins.run(`k${i}`, i).changes)));
    expect(values).toEqual(Array.from({ length: 50 }, () => 1));
    expect(batch.stats).toEqual({ transactions: 1, commits: 50 });
    expect(wal.syncs - syncsBefore).toBe(1);
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 50 });
    db.close();
  });

  it('rolls a failing body back alone: the others commit, it rejects with its own error', async () => {
    const { db, batch } = openBatch();
    const ins = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const results = await Promise.allSettled([
      batch.run(() => ins.run('a', 1)),
      batch.run(() => {
        ins.run('b', 2); // written, then undone with its savepoint
        throw new Error('refused');
      }),
      batch.run(() => ins.run('a', 3)), // primary key taken by the first body: a constraint error
      batch.run(() => ins.run('c', 4)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toHaveProperty('message', 'refused');
    expect((results[2] as PromiseRejectedResult).reason).toHaveProperty('code', 'SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(db.prepare('SELECT k, v FROM t ORDER BY k').all()).toEqual([
      { k: 'a', v: 1 },
      { k: 'c', v: 4 },
    ]);
    db.close();
  });

  it('waits for a write lock held by another connection without blocking the event loop', async () => {
    const { db, batch, path } = openBatch();
    const other = new Database(path);
    other.prepare('BEGIN IMMEDIATE').run();
    other.prepare("INSERT INTO t (k, v) VALUES ('other', 0)").run();
    const ins = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    let settled = false;
    const pending = batch.run(() => ins.run('mine', 1)).finally(() => {
      settled = true;
    });
    // Timers keep firing while the batch waits (SQLite's busy handler would sleep inside the call instead).
    let ticks = 0;
    while (ticks < 20) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      ticks++;
    }
    expect(settled).toBe(false);
    const late = batch.run(() => ins.run('late', 2)); // joins the waiting batch
    other.prepare('COMMIT').run();
    await Promise.all([pending, late]);
    expect(batch.stats.transactions).toBe(1);
    expect(db.prepare('SELECT k FROM t ORDER BY k').pluck().all()).toEqual(['late', 'mine', 'other']);
    other.close();
    db.close();
  });

  it('fails with SQLITE_BUSY once the lock stayed taken for the busy timeout', async () => {
    const path = join(dir, 'b.db');
    const { db } = openBatch();
    const batch = new CommitBatch(db, new WalSync(`${path}-wal`), 50);
    const other = new Database(path);
    other.prepare('BEGIN IMMEDIATE').run();
    await expect(batch.run(() => db.prepare("INSERT INTO t (k, v) VALUES ('x', 1)").run())).rejects.toHaveProperty(
      'code',
      'SQLITE_BUSY',
    );
    other.prepare('ROLLBACK').run();
    // The batch works again once the lock is free.
    await batch.run(() => db.prepare("INSERT INTO t (k, v) VALUES ('y', 1)").run());
    expect(db.prepare('SELECT k FROM t').pluck().all()).toEqual(['y']);
    other.close();
    db.close();
  });
});

describe('SqliteMetaStore commits', () => {
  const rec = (key: string, blobId: string): ObjectRecord => ({
    bucket: 'b',
    key,
    blobId,
    fsize: 4096,
    hash: `F${key}`,
    md5: '',
    mimeType: 'application/octet-stream',
    putTime: 17_000_000_000_000_000n,
    type: 0,
    status: 0,
    meta: {},
  });

  it('shares transactions among concurrent uploads (commitPut)', async () => {
    const meta = new SqliteMetaStore(join(dir, 'meta.db'));
    await meta.createBucket({ name: 'b', region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} });
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        meta.commitPut(rec(`k${i}`, `i${String(i).padStart(32, '0')}`), {
          insertOnly: true,
          nowSec: 1_700_000_000,
          inline: Buffer.alloc(4096, i),
        }),
      ),
    );
    expect(outcomes.every((o) => o.result === 'created')).toBe(true);
    expect(meta.batch.stats.commits).toBe(40);
    expect(meta.batch.stats.transactions).toBeLessThan(40);
    expect((await meta.getObject('b', 'k39'))?.hash).toBe('Fk39');
    await meta.close();
  });

  it('the checkpoint thread keeps the log from growing under steady commits', async () => {
    const meta = new SqliteMetaStore(join(dir, 'meta.db'));
    meta.startCheckpoints(20);
    await meta.createBucket({ name: 'b', region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} });
    // ~8 pages per inline 4 KiB commit: 3,000 commits write ~100 MB of frames without a rewind.
    for (let i = 0; i < 3000; i++) {
      await meta.commitPut(rec(`k${i}`, `i${String(i).padStart(32, '0')}`), {
        insertOnly: false,
        nowSec: 1_700_000_000,
        inline: Buffer.alloc(4096, i % 251),
      });
    }
    const size = (await stat(join(dir, 'meta.db-wal'))).size;
    expect(size).toBeLessThan(20 * 1024 * 1024); // ~5 MB with the rewind, ~58 MB without
    await meta.close();
  });
});
