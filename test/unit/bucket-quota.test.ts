/**
 * Bucket quotas below the wire: the pure rule (store/quota-rule.ts), the wire parsing and merging (buckets/quota.ts),
 * and the usage counters of both stores (store/sqlite/bucket-usage.ts on a real store file, store/postgres/
 * bucket-usage.ts on a throw-away PostgreSQL) — kept by every kind of change, refusing a change with nothing of it
 * left behind, and looking up expired entries on the expiry index (never a scan of the bucket); and, SQLite only,
 * computed for a data dir of an earlier version.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeQuota, parseQuotaPath, parseQuotaValue, quotaExceeded } from '../../src/buckets/quota.js';
import type { BucketUsage, MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import { quotaRefusal } from '../../src/store/quota-rule.js';
import { EXPIRED_IN_BUCKET } from '../../src/store/sqlite/bucket-usage.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { EXPIRED_IN_BUCKET as PG_EXPIRED_IN_BUCKET } from '../../src/store/postgres/bucket-usage.js';
import type { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';
import { status400 } from '../helpers/errors.js';

const use = (count: number, bytes: number): BucketUsage => ({ count, bytes });

describe('quotaRefusal', () => {
  it('allows everything without a quota or with -1 limits', () => {
    expect(quotaRefusal(undefined, use(0, 0), use(1e6, 1e12))).toBeUndefined();
    expect(quotaRefusal({ size: -1, count: -1 }, use(0, 0), use(1e6, 1e12))).toBeUndefined();
  });

  it('refuses growing the count past its limit, and allows reaching it', () => {
    expect(quotaRefusal({ size: -1, count: 2 }, use(1, 10), use(2, 20))).toBeUndefined();
    expect(quotaRefusal({ size: -1, count: 2 }, use(2, 20), use(3, 30))).toEqual({ limit: 'count', max: 2 });
  });

  it('refuses growing the bytes past the size limit, and allows reaching it exactly', () => {
    expect(quotaRefusal({ size: 100, count: -1 }, use(1, 60), use(2, 100))).toBeUndefined();
    expect(quotaRefusal({ size: 100, count: -1 }, use(1, 60), use(2, 101))).toEqual({ limit: 'size', max: 100 });
  });

  it('counts an overwrite by its difference: a same-count change that grows the bytes', () => {
    expect(quotaRefusal({ size: 100, count: 1 }, use(1, 90), use(1, 100))).toBeUndefined();
    expect(quotaRefusal({ size: 100, count: 1 }, use(1, 90), use(1, 110))).toEqual({ limit: 'size', max: 100 });
  });

  it('never refuses a change that does not grow a dimension, even over the quota (a lowered quota)', () => {
    // A smaller overwrite in a bucket over both limits.
    expect(quotaRefusal({ size: 10, count: 1 }, use(5, 500), use(5, 400))).toBeUndefined();
    // A move within the bucket (same usage).
    expect(quotaRefusal({ size: 10, count: 1 }, use(5, 500), use(5, 500))).toBeUndefined();
    // A bigger overwrite there is still refused (bytes grow).
    expect(quotaRefusal({ size: 10, count: 1 }, use(5, 500), use(5, 501))).toEqual({ limit: 'size', max: 10 });
  });

  it('names the count limit first when both are passed', () => {
    expect(quotaRefusal({ size: 10, count: 1 }, use(1, 10), use(2, 20))).toEqual({ limit: 'count', max: 1 });
  });
});

describe('parseQuotaValue / parseQuotaPath', () => {
  it('takes -1, 0 and positive integers up to 2^53-1', () => {
    expect(parseQuotaValue('-1', 'size')).toBe(-1);
    expect(parseQuotaValue('0', 'count')).toBe(0);
    expect(parseQuotaValue('1048576', 'size')).toBe(1048576);
    expect(parseQuotaValue(String(Number.MAX_SAFE_INTEGER), 'size')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each(['', 'abc', '1.5', '-2', '+5', '01', '1e3', ' 1', '9007199254740992', '-0'])('refuses %j with a 400 naming the field', (text) => {
    status400(() => parseQuotaValue(text, 'size'), /^invalid argument: size must be -1/);
    status400(() => parseQuotaValue(text, 'count'), /^invalid argument: count must be -1/);
  });

  it('reads size and count pairs in either order, either alone', () => {
    expect(parseQuotaPath(['size', '100', 'count', '2'])).toEqual({ size: 100, count: 2 });
    expect(parseQuotaPath(['count', '-1', 'size', '0'])).toEqual({ size: 0, count: -1 });
    expect(parseQuotaPath(['size', '5'])).toEqual({ size: 5 });
    expect(parseQuotaPath(['count', '7'])).toEqual({ count: 7 });
  });

  it('refuses missing, odd, unknown or repeated parameters', () => {
    status400(() => parseQuotaPath([]), /expected \/setbucketquota/);
    status400(() => parseQuotaPath(['size']), /expected \/setbucketquota/);
    status400(() => parseQuotaPath(['bytes', '5']), /unknown quota parameter "bytes"/);
    status400(() => parseQuotaPath(['size', '5', 'size', '6']), /size given twice/);
    status400(() => parseQuotaPath(['size', '5', 'count', 'x']), /count must be/);
  });
});

describe('mergeQuota', () => {
  it('0 and absent keep a limit, -1 removes it, a positive value sets it', () => {
    expect(mergeQuota(undefined, { size: 100, count: 0 })).toEqual({ size: 100, count: -1 });
    expect(mergeQuota({ size: 100, count: -1 }, { size: 0, count: 3 })).toEqual({ size: 100, count: 3 });
    expect(mergeQuota({ size: 100, count: 3 }, { count: 5 })).toEqual({ size: 100, count: 5 });
    expect(mergeQuota({ size: 100, count: 3 }, { size: -1 })).toEqual({ size: -1, count: 3 });
  });

  it('is undefined (no quota) when neither limit remains', () => {
    expect(mergeQuota({ size: 100, count: -1 }, { size: -1, count: 0 })).toBeUndefined();
    expect(mergeQuota(undefined, { size: 0, count: 0 })).toBeUndefined();
  });
});

describe('quotaExceeded', () => {
  it('is a 403 naming the bucket and the limit', () => {
    const e = quotaExceeded('b', { limit: 'count', max: 2 });
    expect(e.status).toBe(403);
    expect(e.message).toBe('bucket quota exceeded: bucket b is limited to 2 files (count quota)');
    expect(quotaExceeded('b', { limit: 'size', max: 10 }).message).toMatch(/10 bytes \(size quota\)/);
  });
});

const kinds = metaStoreKinds(['postgres']);

describe.each(['sqlite', 'postgres'] as const)('usage counters and quota guard: %s', (kind) => {
  let dir: string;
  let store: MetaStore;
  let n = 0;

  const rec = (bucket: string, key: string, fsize: number, extra: Partial<ObjectRecord> = {}): ObjectRecord => ({
    bucket,
    key,
    blobId: `blob-${++n}`,
    fsize,
    hash: `hash-${n}`,
    md5: '',
    mimeType: 'application/octet-stream',
    putTime: 1n,
    type: 0,
    status: 0,
    meta: {},
    ...extra,
  });
  const put = (r: ObjectRecord, nowSec = 1000) => store.commitPut(r, { insertOnly: false, nowSec });
  const setQuota = (bucket: string, size: number, count: number) =>
    store.updateBucketSettings(bucket, (s) => ({ ...s, quota: { size, count } }));
  const bucket = (name: string) => store.createBucket({ name, region: 'z0', private: false, ctime: 1, owner: 'ak', settings: {} });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-quota-'));
    store = kind === 'sqlite' ? new SqliteMetaStore(join(dir, 'meta.db')) : (await kinds.fresh('postgres'))[0]!;
  });

  /** Rows of `bucket_usage` for `bucket` (PostgreSQL: one per shard written). */
  const usageRows = async (name: string): Promise<number> => {
    if (kind === 'postgres') {
      const { rows } = await (store as PgMetaStore).db.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM bucket_usage WHERE bucket = $1', [name]);
      return Number(rows[0]!.n);
    }
    const raw = new Database(join(dir, 'meta.db'), { readonly: true });
    const row = raw.prepare('SELECT COUNT(*) AS n FROM bucket_usage WHERE bucket = ?').get(name) as { n: number };
    raw.close();
    return row.n;
  };
  afterAll(async () => {
    if (kind === 'sqlite') await store?.close(); // PostgreSQL stores: closed by metaStoreKinds
    await rm(dir, { recursive: true, force: true });
  });

  it('follow creates, overwrites, copies, moves, deletes, the expiry sweep and drop', async () => {
    await bucket('ua');
    await bucket('ub');
    expect(await store.bucketUsage('ua')).toEqual(use(0, 0));
    expect(await store.bucketUsage('missing')).toBeUndefined();
    await put(rec('ua', 'a', 10));
    await put(rec('ua', 'b', 5));
    expect(await store.bucketUsage('ua')).toEqual(use(2, 15));
    await put(rec('ua', 'a', 3)); // overwrite: the difference
    expect(await store.bucketUsage('ua')).toEqual(use(2, 8));
    await store.copyObject({ bucket: 'ua', key: 'a' }, { bucket: 'ub', key: 'a' }, { force: false, nowSec: 1000, putTime: 2n });
    expect(await store.bucketUsage('ub')).toEqual(use(1, 3)); // a copy shares the blob, but counts in full
    await store.moveObject({ bucket: 'ua', key: 'b' }, { bucket: 'ub', key: 'b' }, { force: false, nowSec: 1000 });
    expect(await store.bucketUsage('ua')).toEqual(use(1, 3));
    expect(await store.bucketUsage('ub')).toEqual(use(2, 8));
    await store.moveObject({ bucket: 'ub', key: 'b' }, { bucket: 'ub', key: 'a' }, { force: true, nowSec: 1000 });
    expect(await store.bucketUsage('ub')).toEqual(use(1, 5));
    await store.updateObject('ub', 'a', 1000, (r) => ({ ...r, mimeType: 'text/plain' }));
    expect(await store.bucketUsage('ub')).toEqual(use(1, 5));
    await store.deleteObject('ub', 'a', 1000);
    expect(await store.bucketUsage('ub')).toEqual(use(0, 0));
    await put(rec('ua', 'ttl', 7, { expireAt: 1500 }));
    expect(await store.bucketUsage('ua')).toEqual(use(2, 10));
    expect((await store.deleteExpired(2000, 100)).deleted).toBe(1);
    expect(await store.bucketUsage('ua')).toEqual(use(1, 3));
    await store.deleteObject('ua', 'a', 1000);
    expect(await store.dropBucket('ua')).toBe('dropped');
    expect(await store.bucketUsage('ua')).toBeUndefined();
    expect(await usageRows('ua')).toBe(0);
  });

  it('a refused commit, copy or move changes nothing and frees nothing', async () => {
    await bucket('uq');
    await bucket('uo');
    await setQuota('uq', -1, 1);
    const first = rec('uq', 'one', 4);
    expect((await put(first)).result).toBe('created');
    const over = await put(rec('uq', 'two', 4));
    expect(over).toEqual({ result: 'over-quota', freedBlobs: [], refusal: { limit: 'count', max: 1 } });
    expect(await store.getObject('uq', 'two')).toBeUndefined();
    expect(await store.blobReferenced(`blob-${n}`)).toBe(false);
    expect(await store.bucketUsage('uq')).toEqual(use(1, 4));
    // Overwriting the one entry keeps the count: allowed.
    expect((await put(rec('uq', 'one', 9))).result).toBe('replaced');

    await put(rec('uo', 'x', 1));
    const copy = await store.copyObject({ bucket: 'uo', key: 'x' }, { bucket: 'uq', key: 'x' }, { force: false, nowSec: 1000, putTime: 2n });
    expect(copy).toMatchObject({ result: 'over-quota', refusal: { limit: 'count', max: 1 } });
    const move = await store.moveObject({ bucket: 'uo', key: 'x' }, { bucket: 'uq', key: 'x' }, { force: false, nowSec: 1000 });
    expect(move.result).toBe('over-quota');
    expect(await store.getObject('uo', 'x')).toBeDefined();
    expect(await store.getObject('uq', 'x')).toBeUndefined();
    // Within the bucket a move never grows it.
    expect((await store.moveObject({ bucket: 'uq', key: 'one' }, { bucket: 'uq', key: 'uno' }, { force: false, nowSec: 1000 })).result).toBe('moved');
    expect(await store.bucketUsage('uq')).toEqual(use(1, 9));
  });

  it('expired entries not yet swept do not hold room', async () => {
    await bucket('ux');
    await setQuota('ux', -1, 1);
    await put(rec('ux', 'old', 1, { expireAt: 1500 }));
    expect((await put(rec('ux', 'new', 1), 1000)).result).toBe('over-quota');
    const later = await put(rec('ux', 'new', 1), 2000);
    expect(later.result).toBe('created');
    expect(later.freedBlobs).toHaveLength(1); // the expired entry's blob
    expect(await store.bucketUsage('ux')).toEqual(use(1, 1));
  });

  it('looks expired entries up on the expiry index, not by scanning the bucket', async () => {
    if (kind === 'sqlite') {
      const raw = new Database(join(dir, 'meta.db'), { readonly: true });
      const plan = raw.prepare(`EXPLAIN QUERY PLAN ${EXPIRED_IN_BUCKET}`).all(5, 'ux') as { detail: string }[];
      raw.close();
      expect(plan.map((p) => p.detail).join('\n')).toMatch(/^SEARCH objects USING INDEX objects_expire \(expire_at>\? AND expire_at<\?\)$/);
      return;
    }
    // A bucket big enough for the planner to care (few rows are read by a scan whatever the plan).
    const db = (store as PgMetaStore).db;
    await bucket('big');
    await db.query(
      `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time)
       SELECT 'big', 'k' || i, 'b', 1, 'h', '', 'x', 1 FROM generate_series(1, 20000) AS i`,
    );
    await db.query('ANALYZE objects');
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${PG_EXPIRED_IN_BUCKET.replace('$2', '5').replace('$1', "'big'")}`);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Index (Only )?Scan using objects_expire on objects/);
    expect(plan).not.toMatch(/Seq Scan/);
    await db.query("DELETE FROM objects WHERE bucket = 'big'");
  });

  // SQLite only: a data dir of an earlier version (the PostgreSQL schema had the counters from its first migration).
  if (kind === 'sqlite') it('are computed at open for a data dir of an earlier version (no counters, no triggers)', async () => {
    await bucket('um');
    for (let i = 0; i < 5; i++) await put(rec('um', `k${i}`, 100 + i));
    await bucket('uempty');
    await store.close();
    // Make it look like a data dir written before the counters existed.
    const raw = new Database(join(dir, 'meta.db'));
    raw.exec(`DROP TRIGGER bucket_usage_bucket_insert; DROP TRIGGER bucket_usage_bucket_delete;
      DROP TRIGGER bucket_usage_object_insert; DROP TRIGGER bucket_usage_object_delete; DROP TRIGGER bucket_usage_object_update;
      DROP TABLE bucket_usage;`);
    raw.prepare("INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time) VALUES ('um', 'raw', 'b', 1000, 'h', '', 'x', 1)").run();
    raw.close();
    store = new SqliteMetaStore(join(dir, 'meta.db'));
    expect(await store.bucketUsage('um')).toEqual(use(6, 100 + 101 + 102 + 103 + 104 + 1000));
    expect(await store.bucketUsage('uempty')).toEqual(use(0, 0));
    expect(await store.bucketUsage('uq')).toEqual(use(1, 9));
    // Opening again changes nothing; later writes keep counting.
    await store.close();
    store = new SqliteMetaStore(join(dir, 'meta.db'));
    await put(rec('um', 'more', 1));
    expect(await store.bucketUsage('um')).toEqual(use(7, 1511));
  });
});
