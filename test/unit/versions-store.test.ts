/**
 * Bucket versioning in the SQLite MetaStore (store/sqlite/versions.ts, docs/reference/versioning.md), on a real
 * store: blob references follow versions (an overwritten or deleted entry keeps its blob referenced until its version
 * is deleted for good, a copy shares it), ids sort in creation order, a move and an expiry leave markers, and
 * ListObjectVersions pages through a key with more versions than one read chunk, each once, newest first; the
 * lifecycle's guarded removals (a noncurrent version, a sole delete marker) and the per-bucket version counters.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectRecord } from '../../src/ports/meta.js';
import type { VersionQuery } from '../../src/ports/versions.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

const NOW = 1_700_000_000;
let dir: string;
let store: SqliteMetaStore;
let n = 0;

function rec(bucket: string, key: string, blobId = `blob-${++n}`): ObjectRecord {
  return { bucket, key, blobId, fsize: 1, hash: `h${n}`, md5: '', mimeType: 'text/plain', putTime: BigInt(NOW) * 10_000_000n + BigInt(n), type: 0, status: 0, meta: {} };
}

async function versioned(name: string): Promise<void> {
  await store.createBucket({ name, region: 'z0', private: false, ctime: NOW, owner: 'ak', settings: {} });
  await store.updateBucketSettings(name, (s) => ({ ...s, versioning: 'Enabled' }));
}

/** Every version of the query, page by page (`limit` each): [key, wire id, latest, marker]. */
async function walk(q: Omit<VersionQuery, 'after'>): Promise<Array<[string, string, boolean, boolean]>> {
  const out: Array<[string, string, boolean, boolean]> = [];
  let after: VersionQuery['after'];
  for (;;) {
    const page = await store.listVersions({ ...q, ...(after ? { after } : {}) });
    for (const e of page.entries) {
      if (e.kind === 'prefix') out.push([e.prefix, '', false, false]);
      else out.push([e.version.record.key, e.version.record.versionId ?? 'null', e.version.isLatest, e.version.deleteMarker]);
    }
    if (!page.more) return out;
    const last = page.entries[page.entries.length - 1]!;
    after = last.kind === 'prefix' ? { key: last.prefix, isPrefix: true } : { key: last.version.record.key, versionId: last.version.record.versionId ?? 'null' };
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'granary-versions-store-'));
  store = new SqliteMetaStore(join(dir, 'meta.db'));
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('blob references follow versions', () => {
  it('overwrite and delete keep blobs; deleting versions for good frees them', async () => {
    await versioned('refs');
    const a = rec('refs', 'k');
    const b = rec('refs', 'k');
    const first = await store.commitPut(a, { insertOnly: false, nowSec: NOW });
    const second = await store.commitPut(b, { insertOnly: false, nowSec: NOW });
    expect(first.result === 'created' && second.result === 'replaced').toBe(true);
    const ids = [(first as { versionId: string }).versionId, (second as { versionId: string }).versionId];
    expect(ids[1]! > ids[0]!).toBe(true);
    expect(second.freedBlobs).toEqual([]);
    const del = await store.deleteObject('refs', 'k', NOW, undefined, undefined);
    expect(del.marker).toMatch(/^[0-9a-f]{32}$/);
    expect(await store.blobReferenced(a.blobId)).toBe(true);
    expect(await store.blobReferenced(b.blobId)).toBe(true);
    expect(await store.getObject('refs', 'k')).toBeUndefined();
    // A copy of an old version shares its blob.
    const copy = await store.copyObject({ bucket: 'refs', key: 'k', versionId: ids[0] }, { bucket: 'refs', key: 'c' }, { force: true, nowSec: NOW, putTime: 1n });
    expect(copy.result).toBe('copied');
    expect((await store.deleteVersion('refs', 'k', ids[0]!)).freedBlobs).toEqual([]);
    expect(await store.blobReferenced(a.blobId)).toBe(true);
    const lastOfB = await store.deleteVersion('refs', 'k', ids[1]!);
    expect(lastOfB.freedBlobs).toEqual([b.blobId]);
    expect(await store.blobReferenced(b.blobId)).toBe(false);
    expect((await store.deleteVersion('refs', 'k', ids[1]!)).result).toBe('no-version');
    // Only the marker is left: the bucket is not empty until it goes.
    expect(await store.dropBucket('refs')).toBe('not-empty');
  });

  it('a move in a versioned bucket leaves the source as a noncurrent version under a marker, sharing the blob', async () => {
    await versioned('mv');
    const a = rec('mv', 'from');
    await store.commitPut(a, { insertOnly: false, nowSec: NOW });
    expect((await store.moveObject({ bucket: 'mv', key: 'from' }, { bucket: 'mv', key: 'to' }, { force: false, nowSec: NOW })).result).toBe('moved');
    expect(await walk({ bucket: 'mv', prefix: '', delimiter: '', limit: 1000 })).toEqual([
      ['from', expect.stringMatching(/^[0-9a-f]{32}$/), true, true],
      ['from', expect.stringMatching(/^[0-9a-f]{32}$/), false, false],
      ['to', expect.stringMatching(/^[0-9a-f]{32}$/), true, false],
    ]);
    const from = (await store.getVersion('mv', 'from', undefined))!;
    expect(from.deleteMarker).toBe(true);
    // Deleting the current entry for good leaves the noncurrent copy's reference.
    const to = (await store.getVersion('mv', 'to', undefined))!;
    expect((await store.deleteVersion('mv', 'to', to.record.versionId!)).freedBlobs).toEqual([]);
    expect(await store.blobReferenced(a.blobId)).toBe(true);
  });

  it('an expiry (deleteAfterDays) leaves a marker and keeps the version', async () => {
    await versioned('exp');
    const a = { ...rec('exp', 'k'), expireAt: NOW - 1 };
    await store.commitPut(a, { insertOnly: false, nowSec: NOW - 10 });
    expect((await store.deleteExpired(NOW, 100)).freedBlobs).toEqual([]);
    expect((await walk({ bucket: 'exp', prefix: '', delimiter: '', limit: 10 })).map((v) => v[3])).toEqual([true, false]);
    expect(await store.blobReferenced(a.blobId)).toBe(true);
  });
});

describe('listing versions', () => {
  it('pages through 600 versions of one key (more than a read chunk), prefixes and markers, each once', async () => {
    await versioned('many');
    for (let i = 0; i < 600; i++) await store.commitPut(rec('many', 'hot'), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('many', 'a/1'), { insertOnly: false, nowSec: NOW });
    await store.commitPut(rec('many', 'a/2'), { insertOnly: false, nowSec: NOW });
    await store.deleteObject('many', 'z', NOW, undefined, undefined, { markMissing: true });
    for (const limit of [1, 7, 1000]) {
      const all = await walk({ bucket: 'many', prefix: '', delimiter: '/', limit });
      expect(all.length).toBe(1 + 600 + 1);
      expect(all[0]).toEqual(['a/', '', false, false]);
      const hot = all.slice(1, 601);
      expect(hot.map((v) => v[2])).toEqual([true, ...Array(599).fill(false)]);
      const ids = hot.map((v) => v[1]);
      expect([...ids].sort().reverse()).toEqual(ids);
      expect(new Set(ids).size).toBe(600);
      expect(all[601]!.slice(0, 1).concat(all[601]!.slice(2))).toEqual(['z', true, true]);
    }
    expect((await walk({ bucket: 'many', prefix: 'a/', delimiter: '/', limit: 1 })).map((v) => v[0])).toEqual(['a/1', 'a/2']);
  });
});

describe('version maintenance: guarded removals and the counters', () => {
  it('expires only noncurrent versions, removes only sole markers, and keeps the counters exact', async () => {
    await versioned('maint');
    const a = rec('maint', 'k');
    const b = { ...rec('maint', 'k'), fsize: 5 };
    await store.commitPut(a, { insertOnly: false, nowSec: NOW });
    await store.commitPut(b, { insertOnly: false, nowSec: NOW });
    const sortOf = async (key: string): Promise<string[]> => (await store.listVersions({ bucket: 'maint', prefix: key, delimiter: '', limit: 10 })).entries.map((e) => (e.kind === 'version' ? e.version.sortId : ''));
    const [current, old] = await sortOf('k');
    expect((await store.versionStats()).get('maint')).toEqual({ noncurrentVersions: 1, deleteMarkers: 0, noncurrentBytes: 1 });
    // The current version is not noncurrent: left alone.
    expect(await store.expireNoncurrentVersion('maint', 'k', current!)).toEqual({ deleted: false, freedBlobs: [] });
    expect(await store.expireNoncurrentVersion('maint', 'k', old!)).toEqual({ deleted: true, freedBlobs: [a.blobId] });
    expect((await store.versionStats()).get('maint')).toEqual({ noncurrentVersions: 0, deleteMarkers: 0, noncurrentBytes: 0 });

    // A marker over a version is not alone; once the version is gone it is removed.
    await store.deleteObject('maint', 'k', NOW, undefined, undefined);
    const [marker, under] = await sortOf('k');
    expect((await store.versionStats()).get('maint')).toEqual({ noncurrentVersions: 1, deleteMarkers: 1, noncurrentBytes: 5 });
    expect(await store.removeExpiredDeleteMarker('maint', 'k', marker!)).toBe(false);
    expect((await store.expireNoncurrentVersion('maint', 'k', under!)).deleted).toBe(true);
    // The marker is current: never expired as a noncurrent version.
    expect((await store.expireNoncurrentVersion('maint', 'k', marker!)).deleted).toBe(false);
    expect(await store.removeExpiredDeleteMarker('maint', 'k', marker!)).toBe(true);
    expect(await sortOf('k')).toEqual([]);
    expect((await store.versionStats()).get('maint')).toEqual({ noncurrentVersions: 0, deleteMarkers: 0, noncurrentBytes: 0 });
  });

  it('computes the counters of a data dir that kept versions before they existed', async () => {
    await store.commitPut(rec('maint', 'old'), { insertOnly: false, nowSec: NOW });
    await store.commitPut({ ...rec('maint', 'old'), fsize: 7 }, { insertOnly: false, nowSec: NOW });
    await store.deleteObject('maint', 'old', NOW, undefined, undefined);
    await store.close();
    const raw = new Database(join(dir, 'meta.db'));
    raw.exec('DROP TRIGGER version_stats_insert; DROP TRIGGER version_stats_delete; DROP TRIGGER version_stats_bucket_delete; DROP TABLE version_stats;');
    raw.close();
    store = new SqliteMetaStore(join(dir, 'meta.db'));
    expect((await store.versionStats()).get('maint')).toEqual({ noncurrentVersions: 2, deleteMarkers: 1, noncurrentBytes: 8 });
  });
});
