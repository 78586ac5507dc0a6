/**
 * Lifecycle rules in the MetaStores (store/sqlite/lifecycle.ts, store/postgres/lifecycle.ts and the stores' reads),
 * on a real store of each kind: reads answer entries with their rule's dates, every operation counts a rule-deleted
 * entry as absent, listings skip it, and the sweeper's deletion walk covers exactly the keys a rule governs
 * (`rangesUnder`), in bounded steps on the (bucket, key) index.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putTimeCutoff } from '../../src/buckets/lifecycle-rules.js';
import type { LifecycleRule, MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import type { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { rangesUnder } from '../../src/store/sqlite/lifecycle.js';
import { compareCodePoints } from '../../src/store/sqlite/list-query.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds(['postgres']);
const DAY = 86_400;
/** 2023-11-14 22:13:20 UTC. */
const NOW = 1_700_000_000;
/** putTime (100-ns units) of an upload `days` before NOW. */
const putDaysAgo = (days: number): bigint => BigInt((NOW - days * DAY) * 1000) * 10_000n;

const rule = (name: string, prefix: string, days: Partial<LifecycleRule> = {}): LifecycleRule => ({
  name,
  prefix,
  deleteAfterDays: 0,
  toIAAfterDays: 0,
  toArchiveIRAfterDays: 0,
  toArchiveAfterDays: 0,
  toDeepArchiveAfterDays: 0,
  ctime: NOW,
  ...days,
});

function rec(bucket: string, key: string, putTime: bigint, n: number): ObjectRecord {
  return { bucket, key, blobId: `blob-${bucket}-${n}`, fsize: 1, hash: 'h', md5: '', mimeType: 'text/plain', putTime, type: 0, status: 0, meta: {} };
}

describe.each(['sqlite', 'postgres'] as const)('%s store', (kind) => {
  async function bucketWith(name: string, rules: LifecycleRule[], entries: Array<[string, number]>): Promise<void> {
    await store.createBucket({ name, region: 'z0', private: false, ctime: NOW, owner: 'ak', settings: {} });
    await store.updateBucketSettings(name, () => ({ lifecycleRules: rules }));
    // In waves of 32 concurrent commits (PostgreSQL shares a WAL flush among concurrent commits).
    for (let i = 0; i < entries.length; i += 32) {
      await Promise.all(
        entries.slice(i, i + 32).map(([key, daysAgo], j) => store.commitPut(rec(name, key, putDaysAgo(daysAgo), i + j), { insertOnly: false, nowSec: NOW })),
      );
    }
  }

  let dir: string;
  let store: MetaStore;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-rules-store-'));
    store = kind === 'sqlite' ? new SqliteMetaStore(join(dir, 'meta.db')) : (await kinds.fresh('postgres'))[0]!;
  });
  afterAll(async () => {
    if (kind === 'sqlite') await store?.close(); // PostgreSQL stores: closed by metaStoreKinds
    await rm(dir, { recursive: true, force: true });
  });

  describe('reads and operations with rules', () => {
    beforeAll(() =>
      bucketWith('ops', [rule('logs', 'logs/', { deleteAfterDays: 3, toIAAfterDays: 1 })], [
        ['logs/old', 10],
        ['logs/new', 0],
        ['other', 10],
      ]),
    );

    it('getObject and getBucketAndObject carry the rule dates; the stored record keeps its own', async () => {
      const got = await store.getObject('ops', 'logs/new');
      expect(got?.expireAt).toBeGreaterThan(NOW + 3 * DAY - DAY);
      expect(got?.transitions?.toIA).toBeGreaterThan(NOW);
      expect((await store.getBucketAndObject('ops', 'logs/new')).object?.expireAt).toBe(got?.expireAt);
      let seen: { own?: number; effective?: number } = {};
      await store.updateObject('ops', 'logs/new', NOW, (own, effective) => {
        seen = { own: own.expireAt, effective: effective.expireAt };
        return own;
      });
      expect(seen).toEqual({ own: undefined, effective: got?.expireAt });
      expect((await store.getObject('ops', 'other'))?.expireAt).toBeUndefined();
    });

    it('an entry past its rule date is absent to every operation and listing, and deleted when touched', async () => {
      const page = await store.listObjects({ bucket: 'ops', prefix: '', delimiter: '', limit: 10, nowSec: NOW });
      expect(page.entries.map((e) => (e.kind === 'item' ? e.item.key : e.prefix))).toEqual(['logs/new', 'other']);
      const rolled = await store.listObjects({ bucket: 'ops', prefix: 'logs/', delimiter: '/', limit: 10, nowSec: NOW });
      expect(rolled.entries.map((e) => (e.kind === 'item' ? e.item.key : e.prefix))).toEqual(['logs/new']);
      expect((await store.updateObject('ops', 'logs/old', NOW, (r) => r)).result).toBe('missing');
      expect(
        (await store.copyObject({ bucket: 'ops', key: 'logs/old' }, { bucket: 'ops', key: 'x' }, { force: false, nowSec: NOW, putTime: 1n })).result,
      ).toBe('no-source');
      // The touch deleted it for real: one entry fewer, its blob freed.
      expect(await store.countObjects('ops')).toBe(2);
      // insertOnly over a rule-deleted entry with the same content creates a new one (the old one counts as absent).
      await store.commitPut(rec('ops', 'logs/gone', putDaysAgo(10), 98), { insertOnly: false, nowSec: NOW });
      const again = await store.commitPut(rec('ops', 'logs/gone', putDaysAgo(0), 99), { insertOnly: true, nowSec: NOW });
      expect(again).toEqual({ result: 'created', freedBlobs: ['blob-ops-98'] });
    });
  });

  describe('deleteUnderPrefix (the sweeper walk)', () => {
    const keys: Array<[string, number]> = [];
    beforeAll(async () => {
      for (let i = 0; i < 1500; i++) keys.push([`logs/${String(i).padStart(4, '0')}`, i % 2 === 0 ? 10 : 1]);
      for (let i = 0; i < 300; i++) keys.push([`logs/keep/${i}`, 10]);
      keys.push(['logt', 10], ['log', 10], ['a', 10]);
      await bucketWith('walk', [rule('logs', 'logs/', { deleteAfterDays: 3 }), rule('keep', 'logs/keep/')], keys);
    });

    it('deletes the old entries the rule governs, in steps of at most `scan` keys, skipping excluded prefixes', async () => {
      const sel = { prefix: 'logs/', exclude: ['logs/keep/'], putTimeBefore: putTimeCutoff(3, NOW) };
      const steps: Array<{ deleted: number; next?: string }> = [];
      let after: string | undefined;
      const freed: string[] = [];
      for (;;) {
        const step = await store.deleteUnderPrefix('walk', sel, after, 400);
        steps.push({ deleted: step.deleted, ...(step.next !== undefined ? { next: step.next } : {}) });
        freed.push(...step.freedBlobs);
        if (step.next === undefined) break;
        after = step.next;
      }
      // 1500 keys in range (the 300 under logs/keep/ are skipped by one seek): 4 steps of ≤ 400 keys.
      expect(steps.map((s) => s.deleted)).toEqual([200, 200, 200, 150]);
      expect(steps.map((s) => s.next)).toEqual(['logs/0399', 'logs/0799', 'logs/1199', undefined]);
      expect(freed).toHaveLength(750);
      expect(await store.countObjects('walk')).toBe(1803 - 750);
      const left = await store.listObjects({ bucket: 'walk', prefix: 'logs/0', delimiter: '', limit: 3, nowSec: NOW });
      expect(left.entries.map((e) => (e.kind === 'item' ? e.item.key : ''))).toEqual(['logs/0001', 'logs/0003', 'logs/0005']);
      // A second walk at the same cutoff finds nothing.
      expect((await store.deleteUnderPrefix('walk', sel, undefined, 10_000)).deleted).toBe(0);
    });

    it('reads through the (bucket, key) primary key, never a scan of the table', async () => {
      if (kind === 'postgres') {
        const db = (store as PgMetaStore).db;
        await db.query('ANALYZE objects');
        const { rows } = await db.query<{ 'QUERY PLAN': string }>(
          "EXPLAIN SELECT key, put_time FROM objects WHERE bucket = 'walk' AND key > 'logs/' AND key < 'logs0' ORDER BY key LIMIT 400",
        );
        const plan = rows.map((r) => r['QUERY PLAN']).join(' | ');
        expect(plan).toMatch(/Index Scan using objects_pkey on objects/);
        expect(plan).not.toMatch(/Seq Scan|Sort/);
        return;
      }
      const db = new Database(join(dir, 'meta.db'), { readonly: true });
      try {
        const plan = db
          .prepare('EXPLAIN QUERY PLAN SELECT key, put_time, blob_id FROM objects WHERE bucket = ? AND key > ? AND key < ? ORDER BY key LIMIT ?')
          .all('walk', 'logs/', 'logs0', 400) as Array<{ detail: string }>;
        expect(plan.map((p) => p.detail).join(' | ')).toMatch(/SEARCH objects USING PRIMARY KEY \(bucket=\? AND key>\? AND key<\?\)/);
      } finally {
        db.close();
      }
    });
  });
});

describe('rangesUnder (the sweeper walk)', () => {
  it('is the prefix range without the outermost excluded ranges, in key order', () => {
    expect(rangesUnder('logs/', [])).toEqual([{ from: 'logs/', to: 'logs0' }]);
    expect(rangesUnder('logs/', ['logs/keep/', 'logs/keep/deeper/', 'logs/a'])).toEqual([
      { from: 'logs/', to: 'logs/a' },
      { from: 'logs/b', to: 'logs/keep/' },
      { from: 'logs/keep0', to: 'logs0' },
    ]);
    expect(rangesUnder('', ['b'])).toEqual([
      { from: '', to: 'b' },
      { from: 'c', to: undefined },
    ]);
  });
  it('covers exactly the keys governed by the prefix', () => {
    const exclude = ['a/x', 'a/x/y', 'a/', 'b'];
    const keys = ['', 'a', 'a/', 'a/w', 'a/x', 'a/x/y/z', 'a/xz', 'a/y', 'a0', 'b', 'ba', 'c', 'é'];
    const ranges = rangesUnder('a', exclude);
    const inRanges = (k: string): boolean =>
      ranges.some((r) => compareCodePoints(k, r.from) >= 0 && (r.to === undefined || compareCodePoints(k, r.to) < 0));
    for (const k of keys) {
      const governed = k.startsWith('a') && !exclude.some((e) => e.length > 1 && k.startsWith(e));
      expect(inRanges(k), k).toBe(governed);
    }
  });
});
