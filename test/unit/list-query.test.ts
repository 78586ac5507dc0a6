/**
 * The listing queries (store/sqlite/list-query.ts, store/postgres/list-query.ts): `successor`, code-point
 * comparison, and listPage edge cases (paging, prefixes, delimiters, expiry, resume points, unicode order) on a
 * real store of each kind — a SqliteMetaStore file and a PgMetaStore on a throw-away PostgreSQL. Index use is
 * checked through each database's query plan and by counting the rows a page reads.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListPage, ListQuery, MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import { listPage as pgListPage } from '../../src/store/postgres/list-query.js';
import type { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { compareCodePoints, listPage, successor } from '../../src/store/sqlite/list-query.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

describe('successor', () => {
  it('increments the last code point', () => {
    expect(successor('a')).toBe('b');
    expect(successor('a/')).toBe('a0');
    expect(successor('dir0001/')).toBe('dir00010');
    expect(successor('ab\u0000')).toBe('ab\u0001');
    expect(successor('中')).toBe(String.fromCodePoint('中'.codePointAt(0)! + 1));
  });

  it('has none for the empty string', () => {
    expect(successor('')).toBeUndefined();
  });

  it('skips the surrogate range: U+D7FF is followed by U+E000', () => {
    expect(successor('x\uD7FF')).toBe('x\uE000');
  });

  it('works on code points, not UTF-16 units (astral characters)', () => {
    expect(successor('a😀')).toBe('a😁');
    expect(successor('a\u{FFFF}')).toBe('a\u{10000}');
    expect(successor('a\u{1FFFF}')).toBe('a\u{20000}');
  });

  it('carries past U+10FFFF, and has none for strings made only of it', () => {
    expect(successor('a\u{10FFFF}')).toBe('b');
    expect(successor('ab\u{10FFFF}\u{10FFFF}')).toBe('ac');
    expect(successor('\u{10FFFF}')).toBeUndefined();
    expect(successor('\u{10FFFF}\u{10FFFF}')).toBeUndefined();
  });

  it('is greater than every string with the prefix and no string between them has it', () => {
    const samples = ['', 'a', 'a/', 'a/b', 'ab', 'a\u{10FFFF}', 'b', 'é', '\uFFFF', '😀', 'a😀', 'a\uE000', 'a\uD7FF'];
    for (const p of ['a', 'a/', 'a\uD7FF', 'a😀', 'é']) {
      const next = successor(p) as string;
      expect(compareCodePoints(next, p)).toBeGreaterThan(0);
      for (const s of samples) {
        if (s.startsWith(p)) expect(compareCodePoints(s, next), `${s} < successor(${p})`).toBeLessThan(0);
        else if (compareCodePoints(s, p) > 0) expect(compareCodePoints(s, next), `${s} ≥ successor(${p})`).toBeGreaterThanOrEqual(0);
      }
    }
  });
});

describe('compareCodePoints', () => {
  it('orders like UTF-8 bytes (astral characters after U+E000–U+FFFF, unlike `<`)', () => {
    const keys = ['\uFFFF', '😀', '\uE000', 'a', '', 'ab', '\u00e9', '\uD7FF'];
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect([...keys].sort(compareCodePoints)).toEqual(byBytes);
    expect('😀' < '\uFFFF').toBe(true); // UTF-16 order differs
    expect(compareCodePoints('😀', '\uFFFF')).toBeGreaterThan(0);
  });
});

const NOW = 1_700_000_000;

function rec(bucket: string, key: string, extra: Partial<ObjectRecord> = {}): ObjectRecord {
  return {
    bucket,
    key,
    blobId: 'blob-shared',
    fsize: 3,
    hash: 'Fhash',
    md5: '',
    mimeType: 'text/plain',
    putTime: 17_000_000_000_000_000n,
    type: 0,
    status: 0,
    meta: {},
    ...extra,
  };
}

function q(bucket: string, over: Partial<ListQuery> = {}): ListQuery {
  return { bucket, prefix: '', delimiter: '', limit: 1000, nowSec: NOW, ...over };
}

/** Entries as strings: keys, and common prefixes marked `P:`. */
function names(page: ListPage): string[] {
  return page.entries.map((e) => (e.kind === 'item' ? e.item.key : `P:${e.prefix}`));
}

/** `db` with every statement's `all()` counted: how many reads, and how many rows they returned. */
function countingDb(real: Database.Database): { db: Database.Database; reads: () => number; rows: () => number } {
  let reads = 0;
  let rows = 0;
  const wrap = (stmt: Database.Statement): Database.Statement =>
    new Proxy(stmt, {
      get(target, prop) {
        if (prop === 'safeIntegers') return (on?: boolean) => wrap(target.safeIntegers(on));
        if (prop === 'all') {
          return (...args: unknown[]) => {
            const out = target.all(...args);
            reads++;
            rows += out.length;
            return out;
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === 'prepare') return (sql: string) => wrap(target.prepare(sql));
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db, reads: () => reads, rows: () => rows };
}

/** A listing function of one kind, with the rows it read counted. */
interface Counted {
  list(query: ListQuery): Promise<ListPage>;
  reads(): number;
  rows(): number;
}

/** One store kind under test: its store, its listing function, and the raw access the index tests need. */
interface Harness {
  store: MetaStore;
  /** The kind's listPage on the store's database (the bucket's rules are not applied: none are set here). */
  list(query: ListQuery): Promise<ListPage>;
  /** The same, counting the statements and rows read. */
  counted(): Counted;
  /** Inserts entries with raw SQL in one transaction (fast seeding, no blob counts). */
  insertRaw(bucket: string, keys: string[]): Promise<void>;
  /** The query plan of a range read of `bucket` between `lo` and `hi` (one string). */
  plan(bucket: string, lo: string, hi: string): Promise<string>;
  close(): Promise<void>;
}

async function sqliteHarness(): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'granary-list-'));
  const store = new SqliteMetaStore(join(dir, 'meta.db'));
  const db = new Database(join(dir, 'meta.db'), { readonly: true });
  return {
    store,
    list: async (query) => listPage(db, query),
    counted() {
      const c = countingDb(db);
      return { list: async (query) => listPage(c.db, query), reads: c.reads, rows: c.rows };
    },
    async insertRaw(bucket, keys) {
      const w = new Database(join(dir, 'meta.db'));
      const ins = w.prepare(
        `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time) VALUES (?, ?, 'b', 1, 'h', '', 'x', 1)`,
      );
      w.transaction(() => {
        for (const key of keys) ins.run(bucket, key);
      })();
      w.close();
    },
    async plan(bucket, lo, hi) {
      const plan = db
        .prepare('EXPLAIN QUERY PLAN SELECT * FROM objects WHERE bucket = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?')
        .all(bucket, lo, hi, 10) as { detail: string }[];
      return plan.map((p) => p.detail).join(' ');
    },
    async close() {
      db.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function postgresHarness(open: () => Promise<MetaStore>): Promise<Harness> {
  const store = (await open()) as PgMetaStore;
  return {
    store,
    list: (query) => pgListPage(store.db, query),
    counted() {
      let reads = 0;
      let rows = 0;
      const counting = (c: pg.PoolClient): pg.PoolClient =>
        new Proxy(c, {
          get(target, prop) {
            if (prop !== 'query') return Reflect.get(target, prop, target) as unknown;
            return async (text: string, values?: unknown[]) => {
              const out = await target.query(text, values);
              if (/^\s*SELECT/i.test(text) && !/FROM buckets/.test(text)) {
                reads++;
                rows += out.rows.length;
              }
              return out;
            };
          },
        });
      const db = { tx: <T,>(fn: (c: pg.PoolClient) => Promise<T>) => store.db.tx((c) => fn(counting(c))) };
      return { list: (query) => pgListPage(db, query), reads: () => reads, rows: () => rows };
    },
    async insertRaw(bucket, keys) {
      await store.db.query(
        `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time)
         SELECT $1, k, 'b', 1, 'h', '', 'x', 1 FROM unnest($2::text[]) AS k`,
        [bucket, keys],
      );
      await store.db.query('ANALYZE objects');
    },
    async plan(bucket, lo, hi) {
      const { rows } = await store.db.query<{ 'QUERY PLAN': string }>(
        'EXPLAIN SELECT * FROM objects WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT 10',
        [bucket, lo, hi],
      );
      return rows.map((r) => r['QUERY PLAN']).join(' | ');
    },
    close: async () => undefined, // closed by metaStoreKinds
  };
}

const TREE = ['a', 'a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1', 'a0', 'b/1', 'b/2', 'c', 'd/e/f'];

const kinds = metaStoreKinds(['postgres']);

describe.each(['sqlite', 'postgres'] as const)('listPage: %s', (kind) => {
  let h: Harness;
  const list = (query: ListQuery): Promise<ListPage> => h.list(query);

  async function fill(bucket: string, keys: string[], extra: Partial<ObjectRecord> = {}): Promise<void> {
    await h.store.createBucket({ name: bucket, region: 'z0', private: false, ctime: NOW, owner: 'ak', settings: {} });
    for (const key of keys) await h.store.commitPut(rec(bucket, key, extra), { insertOnly: false, nowSec: NOW });
  }

  /** Every entry of a listing, paged with `limit`, resuming after each page's last entry. */
  async function listAll(query: ListQuery): Promise<{ all: string[]; pages: number }> {
    const all: string[] = [];
    let after: ListQuery['after'];
    let pages = 0;
    for (;;) {
      const page = await list({ ...query, ...(after ? { after } : {}) });
      pages++;
      all.push(...names(page));
      const last = page.entries[page.entries.length - 1];
      if (!page.more || !last) return { all, pages };
      after = last.kind === 'item' ? { key: last.item.key, isPrefix: false } : { key: last.prefix, isPrefix: true };
    }
  }

  beforeAll(async () => {
    h = kind === 'sqlite' ? await sqliteHarness() : await postgresHarness(async () => (await kinds.fresh('postgres'))[0]!);
    await fill('tree', TREE);
    await fill('other', ['a/1', 'zzz']);
    await fill('empty', []);
  });

  afterAll(async () => {
    await h?.close();
  });

  it('lists a bucket in key order, and only that bucket', async () => {
    const page = await list(q('tree'));
    expect(names(page)).toEqual(TREE);
    expect(page.more).toBe(false);
    expect(names(await list(q('other')))).toEqual(['a/1', 'zzz']);
    expect(await list(q('empty'))).toEqual({ entries: [], more: false });
    expect(await list(q('no-such-bucket'))).toEqual({ entries: [], more: false });
  });

  it('returns full records (bigint putTime)', async () => {
    const e = (await list(q('tree', { limit: 1 }))).entries[0];
    expect(e?.kind).toBe('item');
    if (e?.kind === 'item') expect(e.item).toMatchObject({ bucket: 'tree', key: 'a', putTime: 17_000_000_000_000_000n, fsize: 3 });
  });

  it('more is true exactly when something follows', async () => {
    expect((await list(q('tree', { limit: TREE.length - 1 }))).more).toBe(true);
    expect((await list(q('tree', { limit: TREE.length }))).more).toBe(false);
    expect((await list(q('tree', { limit: TREE.length + 1 }))).more).toBe(false);
  });

  it('pages with every limit give every key exactly once, in order', async () => {
    for (let limit = 1; limit <= TREE.length + 1; limit++) expect((await listAll(q('tree', { limit }))).all).toEqual(TREE);
  });

  it('restricts to a prefix', async () => {
    expect(names(await list(q('tree', { prefix: 'a/' })))).toEqual(['a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1']);
    expect(names(await list(q('tree', { prefix: 'a' })))).toEqual(['a', 'a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1', 'a0']);
    expect(names(await list(q('tree', { prefix: 'zz' })))).toEqual([]);
    expect(names(await list(q('tree', { prefix: 'a/x/1' })))).toEqual(['a/x/1']);
  });

  it('rolls keys up into common prefixes at the delimiter, each once', async () => {
    expect(names(await list(q('tree', { delimiter: '/' })))).toEqual(['a', 'P:a/', 'a0', 'P:b/', 'c', 'P:d/']);
    expect(names(await list(q('tree', { prefix: 'a/', delimiter: '/' })))).toEqual(['a/1', 'a/2', 'P:a/x/', 'P:a/y/']);
    expect(names(await list(q('tree', { prefix: 'a/x', delimiter: '/' })))).toEqual(['P:a/x/']);
    // A multi-character delimiter, searched after the prefix only.
    expect(names(await list(q('tree', { delimiter: '/1' })))).toEqual(['a', 'P:a/1', 'a/2', 'P:a/x/1', 'a/x/2', 'P:a/y/1', 'a0', 'P:b/1', 'b/2', 'c', 'd/e/f']);
  });

  it('counts common prefixes in the limit and pages through them', async () => {
    const query = q('tree', { delimiter: '/' });
    for (let limit = 1; limit <= 7; limit++) {
      expect((await listAll({ ...query, limit })).all).toEqual(['a', 'P:a/', 'a0', 'P:b/', 'c', 'P:d/']);
    }
    const first = await list({ ...query, limit: 2 });
    expect(names(first)).toEqual(['a', 'P:a/']);
    expect(first.more).toBe(true);
    // A page of prefixes only (no item) that is not the last one.
    const prefixesOnly = await list({ ...query, prefix: 'a/', after: { key: 'a/2', isPrefix: false }, limit: 1 });
    expect(names(prefixesOnly)).toEqual(['P:a/x/']);
    expect(prefixesOnly.more).toBe(true);
  });

  it('resumes after a key or after everything under a common prefix', async () => {
    expect(names(await list(q('tree', { after: { key: 'a/2', isPrefix: false } })))).toEqual(TREE.slice(3));
    expect(names(await list(q('tree', { after: { key: 'a/', isPrefix: true } })))).toEqual(['a0', 'b/1', 'b/2', 'c', 'd/e/f']);
    // A resume point that is not a stored key.
    expect(names(await list(q('tree', { after: { key: 'a/3', isPrefix: false } })))).toEqual(TREE.slice(3));
    // Past the end, and a prefix without successor.
    expect(await list(q('tree', { after: { key: 'zzz', isPrefix: false } }))).toEqual({ entries: [], more: false });
    expect(await list(q('tree', { after: { key: '\u{10FFFF}', isPrefix: true } }))).toEqual({ entries: [], more: false });
    // A resume point before the prefix starts at the prefix.
    expect(names(await list(q('tree', { prefix: 'b/', after: { key: 'a', isPrefix: false } })))).toEqual(['b/1', 'b/2']);
  });

  it('skips expired entries (expire_at ≤ now), also inside common prefixes', async () => {
    const store = h.store;
    await fill('exp', []);
    await store.commitPut(rec('exp', 'k1'), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('exp', 'k2', { expireAt: NOW }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'k3', { expireAt: NOW + 1 }), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('exp', 'gone/1', { expireAt: NOW - 5 }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'half/1', { expireAt: NOW - 5 }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'half/2'), { insertOnly: false, nowSec: NOW });
    for (let i = 0; i < 5; i++) await store.commitPut(rec('exp', `z${i}`, { expireAt: NOW - 1 }), { insertOnly: false, nowSec: NOW - 10 });
    expect(names(await list(q('exp')))).toEqual(['half/2', 'k1', 'k3']);
    expect(names(await list(q('exp', { delimiter: '/' })))).toEqual(['P:half/', 'k1', 'k3']);
    // An expired tail does not count as "more".
    const page = await list(q('exp', { limit: 3 }));
    expect(names(page)).toEqual(['half/2', 'k1', 'k3']);
    expect(page.more).toBe(false);
    expect((await listAll(q('exp', { limit: 1 }))).all).toEqual(['half/2', 'k1', 'k3']);
    expect(names(await list(q('exp', { nowSec: NOW + 1 })))).toEqual(['half/2', 'k1']);
  });

  it('orders unicode keys by UTF-8 bytes and handles unicode prefixes and delimiters', async () => {
    const keys = ['\uFFFF', '😀/a', '😀/b', '\uE000', 'é', 'z', 'é/1', 'éa', '中文/文件', '中文/目录/x', '\u{10FFFF}x', '\u{10FFFF}'];
    await fill('uni', keys);
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(names(await list(q('uni')))).toEqual(byBytes);
    expect((await listAll(q('uni', { limit: 2 }))).all).toEqual(byBytes);
    expect(names(await list(q('uni', { prefix: '😀' })))).toEqual(['😀/a', '😀/b']);
    expect(names(await list(q('uni', { prefix: '中文/', delimiter: '/' })))).toEqual(['中文/文件', 'P:中文/目录/']);
    expect(names(await list(q('uni', { delimiter: '文' })))).toEqual(byBytes.map((k) => (k.startsWith('中文') ? 'P:中文' : k)).filter((k, i, a) => a.indexOf(k) === i));
    // A prefix without successor (only U+10FFFF): no upper bound, still only keys with the prefix.
    expect(names(await list(q('uni', { prefix: '\u{10FFFF}' })))).toEqual(['\u{10FFFF}', '\u{10FFFF}x']);
    expect(names(await list(q('uni', { after: { key: '\uFFFF', isPrefix: false } })))).toEqual(byBytes.slice(byBytes.indexOf('\uFFFF') + 1));
  });

  it('skips a big directory with one seek, not a walk over its keys; reads through the (bucket, key) index', async () => {
    const bucket = 'bigdir';
    await fill(bucket, []);
    const keys = ['a'];
    for (let i = 0; i < 50_000; i++) keys.push(`big/${String(i).padStart(6, '0')}`);
    keys.push('big0', 'c');
    await h.insertRaw(bucket, keys);
    const plan = await h.plan(bucket, 'big/', 'big0');
    if (kind === 'sqlite') {
      expect(plan).toMatch(/SEARCH objects USING PRIMARY KEY \(bucket=\? AND key>\? AND key<\?\)/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    } else {
      expect(plan).toMatch(/Index Scan using objects_pkey on objects/);
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
    const counted = h.counted();
    const page = await counted.list(q(bucket, { delimiter: '/' }));
    expect(names(page)).toEqual(['a', 'P:big/', 'big0', 'c']);
    // A handful of reads of a few rows each, not the 50,000 rows under big/.
    expect(counted.rows()).toBeLessThan(20);
    expect(counted.reads()).toBeLessThan(10);
    // Resuming after the directory is a seek too.
    expect(names(await counted.list(q(bucket, { delimiter: '/', after: { key: 'big/', isPrefix: true } })))).toEqual(['big0', 'c']);
    expect(counted.rows()).toBeLessThan(25);
    // Without a delimiter, a page reads what it returns (+1 to learn about more).
    const before = counted.rows();
    expect((await counted.list(q(bucket, { prefix: 'big/', limit: 100 }))).entries).toHaveLength(100);
    expect(counted.rows() - before).toBe(101);
  });
});
