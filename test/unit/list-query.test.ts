/**
 * The SQLite listing query (store/sqlite/list-query.ts): `successor`, code-point comparison, and listPage edge
 * cases (paging, prefixes, delimiters, expiry, resume points, unicode order) on a real SqliteMetaStore file.
 * Index use is checked through EXPLAIN QUERY PLAN and by counting rows SQLite visits.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListPage, ListQuery, ObjectRecord } from '../../src/ports/meta.js';
import { compareCodePoints, listPage, successor } from '../../src/store/sqlite/list-query.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

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

let dir: string;
let store: SqliteMetaStore;
let db: Database.Database;
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

async function fill(bucket: string, keys: string[], extra: Partial<ObjectRecord> = {}): Promise<void> {
  await store.createBucket({ name: bucket, region: 'z0', private: false, ctime: NOW, owner: 'ak', settings: {} });
  for (const key of keys) await store.commitPut(rec(bucket, key, extra), { insertOnly: false, nowSec: NOW });
}

function q(bucket: string, over: Partial<ListQuery> = {}): ListQuery {
  return { bucket, prefix: '', delimiter: '', limit: 1000, nowSec: NOW, ...over };
}

/** Entries as strings: keys, and common prefixes marked `P:`. */
function names(page: ListPage): string[] {
  return page.entries.map((e) => (e.kind === 'item' ? e.item.key : `P:${e.prefix}`));
}

/** Every entry of a listing, paged with `limit`, resuming after each page's last entry. */
function listAll(query: ListQuery): { all: string[]; pages: number } {
  const all: string[] = [];
  let after: ListQuery['after'];
  let pages = 0;
  for (;;) {
    const page = listPage(db, { ...query, ...(after ? { after } : {}) });
    pages++;
    all.push(...names(page));
    const last = page.entries[page.entries.length - 1];
    if (!page.more || !last) return { all, pages };
    after = last.kind === 'item' ? { key: last.item.key, isPrefix: false } : { key: last.prefix, isPrefix: true };
  }
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

const TREE = ['a', 'a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1', 'a0', 'b/1', 'b/2', 'c', 'd/e/f'];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-list-'));
  store = new SqliteMetaStore(join(dir, 'meta.db'));
  await fill('tree', TREE);
  await fill('other', ['a/1', 'zzz']);
  await fill('empty', []);
  db = new Database(join(dir, 'meta.db'), { readonly: true });
});

afterAll(async () => {
  db?.close();
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('listPage', () => {
  it('lists a bucket in key order, and only that bucket', () => {
    const page = listPage(db, q('tree'));
    expect(names(page)).toEqual(TREE);
    expect(page.more).toBe(false);
    expect(names(listPage(db, q('other')))).toEqual(['a/1', 'zzz']);
    expect(listPage(db, q('empty'))).toEqual({ entries: [], more: false });
    expect(listPage(db, q('no-such-bucket'))).toEqual({ entries: [], more: false });
  });

  it('returns full records (bigint putTime)', () => {
    const e = listPage(db, q('tree', { limit: 1 })).entries[0];
    expect(e?.kind).toBe('item');
    if (e?.kind === 'item') expect(e.item).toMatchObject({ bucket: 'tree', key: 'a', putTime: 17_000_000_000_000_000n, fsize: 3 });
  });

  it('more is true exactly when something follows', () => {
    expect(listPage(db, q('tree', { limit: TREE.length - 1 })).more).toBe(true);
    expect(listPage(db, q('tree', { limit: TREE.length })).more).toBe(false);
    expect(listPage(db, q('tree', { limit: TREE.length + 1 })).more).toBe(false);
  });

  it('pages with every limit give every key exactly once, in order', () => {
    for (let limit = 1; limit <= TREE.length + 1; limit++) expect(listAll(q('tree', { limit })).all).toEqual(TREE);
  });

  it('restricts to a prefix', () => {
    expect(names(listPage(db, q('tree', { prefix: 'a/' })))).toEqual(['a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1']);
    expect(names(listPage(db, q('tree', { prefix: 'a' })))).toEqual(['a', 'a/1', 'a/2', 'a/x/1', 'a/x/2', 'a/y/1', 'a0']);
    expect(names(listPage(db, q('tree', { prefix: 'zz' })))).toEqual([]);
    expect(names(listPage(db, q('tree', { prefix: 'a/x/1' })))).toEqual(['a/x/1']);
  });

  it('rolls keys up into common prefixes at the delimiter, each once', () => {
    expect(names(listPage(db, q('tree', { delimiter: '/' })))).toEqual(['a', 'P:a/', 'a0', 'P:b/', 'c', 'P:d/']);
    expect(names(listPage(db, q('tree', { prefix: 'a/', delimiter: '/' })))).toEqual(['a/1', 'a/2', 'P:a/x/', 'P:a/y/']);
    expect(names(listPage(db, q('tree', { prefix: 'a/x', delimiter: '/' })))).toEqual(['P:a/x/']);
    // A multi-character delimiter, searched after the prefix only.
    expect(names(listPage(db, q('tree', { delimiter: '/1' })))).toEqual(['a', 'P:a/1', 'a/2', 'P:a/x/1', 'a/x/2', 'P:a/y/1', 'a0', 'P:b/1', 'b/2', 'c', 'd/e/f']);
  });

  it('counts common prefixes in the limit and pages through them', () => {
    const query = q('tree', { delimiter: '/' });
    for (let limit = 1; limit <= 7; limit++) {
      expect(listAll({ ...query, limit }).all).toEqual(['a', 'P:a/', 'a0', 'P:b/', 'c', 'P:d/']);
    }
    const first = listPage(db, { ...query, limit: 2 });
    expect(names(first)).toEqual(['a', 'P:a/']);
    expect(first.more).toBe(true);
    // A page of prefixes only (no item) that is not the last one.
    const prefixesOnly = listPage(db, { ...query, prefix: 'a/', after: { key: 'a/2', isPrefix: false }, limit: 1 });
    expect(names(prefixesOnly)).toEqual(['P:a/x/']);
    expect(prefixesOnly.more).toBe(true);
  });

  it('resumes after a key or after everything under a common prefix', () => {
    expect(names(listPage(db, q('tree', { after: { key: 'a/2', isPrefix: false } })))).toEqual(TREE.slice(3));
    expect(names(listPage(db, q('tree', { after: { key: 'a/', isPrefix: true } })))).toEqual(['a0', 'b/1', 'b/2', 'c', 'd/e/f']);
    // A resume point that is not a stored key.
    expect(names(listPage(db, q('tree', { after: { key: 'a/3', isPrefix: false } })))).toEqual(TREE.slice(3));
    // Past the end, and a prefix without successor.
    expect(listPage(db, q('tree', { after: { key: 'zzz', isPrefix: false } }))).toEqual({ entries: [], more: false });
    expect(listPage(db, q('tree', { after: { key: '\u{10FFFF}', isPrefix: true } }))).toEqual({ entries: [], more: false });
    // A resume point before the prefix starts at the prefix.
    expect(names(listPage(db, q('tree', { prefix: 'b/', after: { key: 'a', isPrefix: false } })))).toEqual(['b/1', 'b/2']);
  });

  it('skips expired entries (expire_at ≤ now), also inside common prefixes', async () => {
    await fill('exp', []);
    await store.commitPut(rec('exp', 'k1'), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('exp', 'k2', { expireAt: NOW }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'k3', { expireAt: NOW + 1 }), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('exp', 'gone/1', { expireAt: NOW - 5 }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'half/1', { expireAt: NOW - 5 }), { insertOnly: false, nowSec: NOW - 10 });
    await store.commitPut(rec('exp', 'half/2'), { insertOnly: false, nowSec: NOW });
    for (let i = 0; i < 5; i++) await store.commitPut(rec('exp', `z${i}`, { expireAt: NOW - 1 }), { insertOnly: false, nowSec: NOW - 10 });
    expect(names(listPage(db, q('exp')))).toEqual(['half/2', 'k1', 'k3']);
    expect(names(listPage(db, q('exp', { delimiter: '/' })))).toEqual(['P:half/', 'k1', 'k3']);
    // An expired tail does not count as "more".
    const page = listPage(db, q('exp', { limit: 3 }));
    expect(names(page)).toEqual(['half/2', 'k1', 'k3']);
    expect(page.more).toBe(false);
    expect(listAll(q('exp', { limit: 1 })).all).toEqual(['half/2', 'k1', 'k3']);
    expect(names(listPage(db, q('exp', { nowSec: NOW + 1 })))).toEqual(['half/2', 'k1']);
  });

  it('orders unicode keys by UTF-8 bytes and handles unicode prefixes and delimiters', async () => {
    const keys = ['\uFFFF', '😀/a', '😀/b', '\uE000', 'é', 'z', 'é/1', 'éa', '中文/文件', '中文/目录/x', '\u{10FFFF}x', '\u{10FFFF}'];
    await fill('uni', keys);
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(names(listPage(db, q('uni')))).toEqual(byBytes);
    expect(listAll(q('uni', { limit: 2 })).all).toEqual(byBytes);
    expect(names(listPage(db, q('uni', { prefix: '😀' })))).toEqual(['😀/a', '😀/b']);
    expect(names(listPage(db, q('uni', { prefix: '中文/', delimiter: '/' })))).toEqual(['中文/文件', 'P:中文/目录/']);
    expect(names(listPage(db, q('uni', { delimiter: '文' })))).toEqual(byBytes.map((k) => (k.startsWith('中文') ? 'P:中文' : k)).filter((k, i, a) => a.indexOf(k) === i));
    // A prefix without successor (only U+10FFFF): no upper bound, still only keys with the prefix.
    expect(names(listPage(db, q('uni', { prefix: '\u{10FFFF}' })))).toEqual(['\u{10FFFF}', '\u{10FFFF}x']);
    expect(names(listPage(db, q('uni', { after: { key: '\uFFFF', isPrefix: false } })))).toEqual(byBytes.slice(byBytes.indexOf('\uFFFF') + 1));
  });

  it('reads through the primary-key index with range bounds', () => {
    const plan = db
      .prepare('EXPLAIN QUERY PLAN SELECT * FROM objects WHERE bucket = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?')
      .all('tree', 'a', 'b', 10) as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/SEARCH objects USING PRIMARY KEY \(bucket=\? AND key>\? AND key<\?\)/);
    expect(plan.map((p) => p.detail).join(' ')).not.toMatch(/TEMP B-TREE/);
  });

  it('skips a big directory with one seek, not a walk over its keys', async () => {
    const bucket = 'bigdir';
    await fill(bucket, []);
    const w = new Database(join(dir, 'meta.db'));
    const ins = w.prepare(
      `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time) VALUES (?, ?, 'b', 1, 'h', '', 'x', 1)`,
    );
    w.transaction(() => {
      ins.run(bucket, 'a');
      for (let i = 0; i < 50_000; i++) ins.run(bucket, `big/${String(i).padStart(6, '0')}`);
      ins.run(bucket, 'big0');
      ins.run(bucket, 'c');
    })();
    w.close();
    const counted = countingDb(db);
    const page = listPage(counted.db, q(bucket, { delimiter: '/' }));
    expect(names(page)).toEqual(['a', 'P:big/', 'big0', 'c']);
    // A handful of reads of a few rows each, not the 50,000 rows under big/.
    expect(counted.rows()).toBeLessThan(20);
    expect(counted.reads()).toBeLessThan(10);
    // Resuming after the directory is a seek too.
    expect(names(listPage(counted.db, q(bucket, { delimiter: '/', after: { key: 'big/', isPrefix: true } })))).toEqual(['big0', 'c']);
    expect(counted.rows()).toBeLessThan(25);
    // Without a delimiter, a page reads what it returns (+1 to learn about more).
    const before = counted.rows();
    expect(listPage(counted.db, q(bucket, { prefix: 'big/', limit: 100 })).entries).toHaveLength(100);
    expect(counted.rows() - before).toBe(101);
  });
});
