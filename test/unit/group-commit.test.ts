/**
 * Group commit (store/sqlite/group-commit.ts): writes wait for a WAL fdatasync shared by concurrent commits;
 * reads never wait for one.
 */
import { mkdtemp, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { WalSync } from '../../src/store/sqlite/group-commit.js';

describe('WalSync', () => {
  let dir = '';
  let meta: SqliteMetaStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-wal-'));
    meta = new SqliteMetaStore(join(dir, 'meta.db'));
  });
  afterEach(async () => {
    await meta.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('syncs after a write, not after a read', async () => {
    const before = meta.wal.syncs;
    await meta.getBucket('nope');
    await meta.listBuckets();
    expect(meta.wal.syncs).toBe(before);
    await meta.createBucket({ name: 'b', region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} });
    expect(meta.wal.syncs).toBe(before + 1);
  });

  it('the queue stores of the shared SQL layer sync after a change, not after a read or a change of nothing', async () => {
    const before = meta.wal.syncs;
    await meta.fetchTasks.get('nope');
    await meta.jobs.claim('p', 1);
    await meta.fetchTasks.claim(1);
    await meta.tasks.requeueAbandoned(1);
    expect(meta.wal.syncs).toBe(before);
    await meta.fetchTasks.enqueue({ id: 't1', accessKey: 'ak', request: '{}', createdMs: 1 });
    expect(meta.wal.syncs).toBe(before + 1);
    expect((await meta.fetchTasks.claim(2))?.id).toBe('t1');
    expect(meta.wal.syncs).toBe(before + 2);
    expect(await meta.jobs.putPipeline('p', 1, 1)).toBe('created');
    expect(meta.wal.syncs).toBe(before + 3);
  });

  it('shares one fdatasync among concurrent commits', async () => {
    const before = meta.wal.syncs;
    const made = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        meta.createBucket({ name: `b${i}`, region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} }),
      ),
    );
    expect(made.every(Boolean)).toBe(true);
    // All 100 transactions ran before the first sync started: one sync covers them (at most one more queued).
    expect(meta.wal.syncs - before).toBeLessThanOrEqual(2);
  });

  it('a sync requested while one runs waits for the next one', async () => {
    const wal = new WalSync(join(dir, 'meta.db-wal'));
    const first = wal.sync();
    const second = wal.sync();
    const third = wal.sync();
    expect(second).toBe(third); // both wait for the same next sync
    await Promise.all([first, second, third]);
    expect(wal.syncs).toBe(2);
    await wal.close();
  });

  it('keeps the -wal file open between syncs and closes it with the store', async () => {
    const walPath = join(dir, 'kept.db-wal');
    await writeFile(walPath, 'frames');
    const wal = new WalSync(walPath);
    const fds = async (): Promise<number> => {
      let n = 0;
      for (const fd of await readdir('/proc/self/fd')) {
        if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === walPath) n++;
      }
      return n;
    };
    await wal.sync();
    await wal.sync();
    expect(await fds()).toBe(1);
    await wal.close();
    expect(await fds()).toBe(0);
  });

  it('a missing -wal file needs no sync and is opened once it exists', async () => {
    const walPath = join(dir, 'later.db-wal');
    const wal = new WalSync(walPath);
    await wal.sync(); // ENOENT: nothing written yet
    await writeFile(walPath, 'frames');
    await wal.sync();
    await wal.close();
    expect(wal.syncs).toBe(2);
  });
});

describe('withGroupCommit', () => {
  it('wraps a method replaced on the store afresh (instrumentation sees its calls)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'granary-wal-'));
    const meta = new SqliteMetaStore(join(dir, 'meta.db'));
    try {
      const tasks = meta.fetchTasks;
      await tasks.get('none'); // the original method is wrapped and cached
      let seen = 0;
      const original = tasks.get.bind(tasks);
      tasks.get = async (id) => {
        seen++;
        return original(id);
      };
      await meta.fetchTasks.get('none');
      expect(seen).toBe(1);
    } finally {
      await meta.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
