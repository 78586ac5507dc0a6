/**
 * The download read cache of the SQLite store (store/sqlite/read-cache.ts), on real store files: a repeated read
 * is answered from memory, and never after a change — made by the same store, by another store on the same file
 * (another worker process), or by a plain connection (the CLI, a test corrupting a row); answers are frozen; the
 * bound counts inline bytes; size 0 turns it off.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ObjectRecord } from '../../src/ports/meta.js';
import { deepFreeze } from '../../src/store/sqlite/read-cache.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

let dir: string;
let stores: SqliteMetaStore[] = [];
let n = 0;

const open = (readCacheBytes?: number): SqliteMetaStore => {
  const s = new SqliteMetaStore(join(dir, 'meta.db'), undefined, readCacheBytes === undefined ? {} : { readCacheBytes });
  stores.push(s);
  return s;
};
const rec = (bucket: string, key: string, extra: Partial<ObjectRecord> = {}): ObjectRecord => ({
  bucket,
  key,
  blobId: `blob-${++n}`,
  fsize: 3,
  hash: `hash-${n}`,
  md5: '',
  mimeType: 'text/plain',
  putTime: 1n,
  type: 0,
  status: 0,
  meta: {},
  ...extra,
});
const put = (s: SqliteMetaStore, r: ObjectRecord, inline?: Buffer) => s.commitPut(r, { insertOnly: false, nowSec: 1000, inline });
const bucket = (s: SqliteMetaStore, name: string) => s.createBucket({ name, region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-read-cache-'));
});
afterEach(async () => {
  for (const s of stores) await s.close();
  stores = [];
  await rm(dir, { recursive: true, force: true });
});

describe('the download read cache', () => {
  it('answers a repeated read from memory, the same frozen record', async () => {
    const s = open();
    await bucket(s, 'b1');
    await put(s, rec('b1', 'k'), Buffer.from('abc'));
    const first = await s.getBucketAndObject('b1', 'k');
    const misses = s.readCache.misses;
    const again = await s.getBucketAndObject('b1', 'k');
    expect(again).toBe(first);
    expect(s.readCache.misses).toBe(misses);
    expect(s.readCache.hits).toBeGreaterThan(0);
    expect(again.object?.inline?.toString()).toBe('abc');
    // Shared by every caller: a change throws instead of reaching the next request's answer.
    expect(() => {
      (again.object as { mimeType: string }).mimeType = 'x/y';
    }).toThrow(TypeError);
    expect(() => {
      (again.object as { meta: Record<string, string> }).meta.x = '1';
    }).toThrow(TypeError);
    expect(() => {
      (again.bucket as { private: boolean }).private = true;
    }).toThrow(TypeError);
  });

  it("sees this store's own writes at once", async () => {
    const s = open();
    await bucket(s, 'b1');
    await put(s, rec('b1', 'k', { mimeType: 'text/plain' }));
    expect((await s.getBucketAndObject('b1', 'k')).object?.mimeType).toBe('text/plain');
    await put(s, rec('b1', 'k', { mimeType: 'image/png' }));
    expect((await s.getBucketAndObject('b1', 'k')).object?.mimeType).toBe('image/png');
    await s.setBucketPrivate('b1', true);
    expect((await s.getBucketAndObject('b1', 'k')).bucket?.private).toBe(true);
    await s.deleteObject('b1', 'k', 1000);
    expect((await s.getBucketAndObject('b1', 'k')).object).toBeUndefined();
  });

  it("sees another store's commits on the same file (another worker process)", async () => {
    const a = open();
    const b = open();
    await bucket(a, 'b1');
    expect((await a.getBucketAndObject('b1', 'k')).object).toBeUndefined(); // a miss is kept too
    await put(b, rec('b1', 'k', { hash: 'from-b' }), Buffer.from('xyz'));
    const seen = await a.getBucketAndObject('b1', 'k');
    expect(seen.object?.hash).toBe('from-b');
    expect(seen.object?.inline?.toString()).toBe('xyz');
    await b.setBucketPrivate('b1', true);
    expect((await a.getBucketAndObject('b1', 'k')).bucket?.private).toBe(true);
  });

  it('sees a plain connection change a row (the CLI; a test corrupting inline bytes)', async () => {
    const s = open();
    await bucket(s, 'b1');
    const r = rec('b1', 'k');
    await put(s, r, Buffer.from('abc'));
    expect((await s.getBucketAndObject('b1', 'k')).object?.inline?.toString()).toBe('abc');
    const raw = new Database(join(dir, 'meta.db'));
    raw.prepare('UPDATE inline_blobs SET data = ? WHERE id = ?').run(Buffer.from('abd'), r.blobId);
    raw.close();
    expect((await s.getBucketAndObject('b1', 'k')).object?.inline?.toString()).toBe('abd');
  });

  it('keeps a bucket and key apart from another pair that joins to the same text', async () => {
    const s = open();
    await bucket(s, 'ab');
    await put(s, rec('ab', 'c/d'));
    expect((await s.getBucketAndObject('ab/c', 'd')).bucket).toBeUndefined();
    expect((await s.getBucketAndObject('ab', 'c/d')).object?.key).toBe('c/d');
  });

  it('bounds the memory by the inline bytes it holds, and is off at size 0', async () => {
    const small = open(8 * 1024);
    await bucket(small, 'b1');
    await put(small, rec('b1', 'big'), Buffer.alloc(16 * 1024, 1)); // over the whole bound: never kept
    await small.getBucketAndObject('b1', 'big');
    await small.getBucketAndObject('b1', 'big');
    expect(small.readCache.hits).toBe(0);
    const off = open(0);
    await off.getBucketAndObject('b1', 'big');
    await off.getBucketAndObject('b1', 'big');
    expect(off.readCache.hits + off.readCache.misses).toBe(0);
    expect((await off.getBucketAndObject('b1', 'big')).object?.inline?.length).toBe(16 * 1024);
  });
});

describe('deepFreeze', () => {
  it('freezes nested objects and arrays, leaves Buffers writable', () => {
    const v = deepFreeze({ a: { b: [1, { c: 2 }] }, buf: Buffer.from('x') });
    expect(Object.isFrozen(v.a.b[1])).toBe(true);
    expect(Object.isFrozen(v.a.b)).toBe(true);
    v.buf[0] = 0x79;
    expect(v.buf.toString()).toBe('y');
  });
});
