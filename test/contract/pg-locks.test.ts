/**
 * The advisory locks of the PostgreSQL MetaStore (store/postgres/db.ts `takeLocks`): all of a change's locks are
 * taken in ONE statement, which must take them in the order given — a statement waiting on its n-th lock holds the
 * ones before it and none after it — or two changes could wait for each other in a cycle. Observed in pg_locks on
 * a real server (test/helpers/pg-server.ts). Plus the quota hints of entry changes (entry-locks.ts): a quota set or
 * removed by another node is obeyed whatever this node guessed.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeLocks } from '../../src/store/postgres/db.js';
import { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { entry } from './meta-store.contract.js';
import { startPgServer, type PgTestServer } from '../helpers/pg-server.js';

let server: PgTestServer;
let url: string;

beforeAll(async () => {
  server = await startPgServer({ volatile: true });
  url = await server.createDatabase();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** The advisory locks of backend `pid` among `names`, as pg_locks shows them (name → granted). */
async function locksOf(c: pg.Client, pid: number, names: string[]): Promise<Map<string, boolean>> {
  const { rows } = await c.query<{ name: string; granted: boolean }>(
    `SELECT n AS name, l.granted FROM pg_locks l JOIN unnest($2::text[]) AS n
       ON l.classid::int8 = (hashtextextended(n, 0) >> 32) & 4294967295 AND l.objid::int8 = hashtextextended(n, 0) & 4294967295
     WHERE l.locktype = 'advisory' AND l.pid = $1`,
    [pid, names],
  );
  return new Map(rows.map((r) => [r.name, r.granted]));
}

describe('takeLocks', () => {
  it('takes the locks of one statement in the order given: waiting on the second, it holds the first, not the third', async () => {
    const holder = new pg.Client({ connectionString: url });
    const taker = new pg.Client({ connectionString: url });
    const watcher = new pg.Client({ connectionString: url });
    await Promise.all([holder.connect(), taker.connect(), watcher.connect()]);
    try {
      const names = ['bucket/b', 'entry/b/k1', 'entry/b/k2'];
      await holder.query('BEGIN');
      await takeLocks(holder, [{ name: 'entry/b/k1', mode: 'exclusive' }]);
      await taker.query('BEGIN');
      const taking = takeLocks(taker, [
        { name: 'bucket/b', mode: 'shared' },
        { name: 'entry/b/k1', mode: 'exclusive' },
        { name: 'entry/b/k2', mode: 'exclusive' },
      ]);
      const pid = (taker as pg.Client & { processID: number }).processID;
      // Until the taker waits (pg_locks shows its ungranted lock): polled, as PostgreSQL sends no event for it.
      let seen = await locksOf(watcher, pid, names);
      while (seen.get('entry/b/k1') !== false) {
        await new Promise((r) => setTimeout(r, 20));
        seen = await locksOf(watcher, pid, names);
      }
      expect(Object.fromEntries(seen)).toEqual({ 'bucket/b': true, 'entry/b/k1': false });
      await holder.query('COMMIT');
      await taking;
      expect(Object.fromEntries(await locksOf(watcher, pid, names))).toEqual({
        'bucket/b': true,
        'entry/b/k1': true,
        'entry/b/k2': true,
      });
      await taker.query('COMMIT');
      expect((await locksOf(watcher, pid, names)).size).toBe(0);
    } finally {
      await Promise.all([holder.end(), taker.end(), watcher.end()]);
    }
  });
});

describe('quota hints', () => {
  it('a quota set, then removed, by another node is obeyed by puts, copies and moves of a node that guessed wrong', async () => {
    const db = await server.createDatabase();
    const a = await PgMetaStore.open(db);
    const b = await PgMetaStore.open(db);
    try {
      const NOW = 1_700_000_000;
      const opts = { insertOnly: false, nowSec: NOW };
      await a.createBucket({ name: 'q', region: 'z0', private: false, ctime: NOW, owner: 'o', nrop: false, settings: {} });
      await a.createBucket({ name: 'free', region: 'z0', private: false, ctime: NOW, owner: 'o', nrop: false, settings: {} });
      expect((await a.commitPut(entry('q', 'one'), opts)).result).toBe('created');
      expect((await a.commitPut(entry('free', 'src'), opts)).result).toBe('created');
      // a has seen the bucket without a quota; b sets one: a's shared lock is not enough, it must find out.
      await b.updateBucketSettings('q', (cur) => ({ ...cur, quota: { size: -1, count: 1 } }));
      expect((await a.commitPut(entry('q', 'two'), opts)).result).toBe('over-quota');
      const copy = await a.copyObject({ bucket: 'free', key: 'src' }, { bucket: 'q', key: 'c' }, { force: false, nowSec: NOW, putTime: 1n });
      expect(copy.result).toBe('over-quota');
      expect((await a.moveObject({ bucket: 'free', key: 'src' }, { bucket: 'q', key: 'm' }, { force: false, nowSec: NOW })).result).toBe(
        'over-quota',
      );
      // b removes it: a, now guessing a quota, still commits.
      await b.updateBucketSettings('q', (cur) => ({ ...cur, quota: { size: -1, count: -1 } }));
      expect((await a.commitPut(entry('q', 'two'), opts)).result).toBe('created');
      expect(await a.bucketUsage('q')).toEqual({ count: 2, bytes: 6 });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
