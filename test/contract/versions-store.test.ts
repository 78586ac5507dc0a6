/**
 * Bucket versioning as a MetaStore contract (docs/reference/versioning.md; store/sqlite/versions.ts,
 * store/postgres/versions.ts): the same outcomes on both stores, each on a real database — blob references follow
 * versions (an overwritten or deleted entry keeps its blob referenced until its version is deleted for good, a copy
 * shares it), a Suspended bucket's null version, a move and an expiry leave markers, DeleteBucket refused while
 * versions remain, ListObjectVersions paging through more versions than one read chunk, and ids made by two store
 * instances sharing one database (two nodes, or two processes) with clocks far apart still sort in commit order.
 */
import { describe, expect, it } from 'vitest';
import type { MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import type { VersionQuery } from '../../src/ports/versions.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();
const NOW = 1_700_000_000;
let n = 0;

function rec(bucket: string, key: string, putTime = BigInt(NOW) * 10_000_000n + BigInt(++n)): ObjectRecord {
  return { bucket, key, blobId: `blob-${++n}`, fsize: 1, hash: `h${n}`, md5: '', mimeType: 'text/plain', putTime, type: 0, status: 0, meta: {} };
}

async function versioned(store: MetaStore, name: string, state: 'Enabled' | 'Suspended' = 'Enabled'): Promise<void> {
  await store.createBucket({ name, region: 'z0', private: false, ctime: NOW, owner: 'ak', settings: {} });
  await store.updateBucketSettings(name, (s) => ({ ...s, versioning: state }));
}

/** Every version of the query, page by page (`limit` each): [key, wire id, latest, marker]. */
async function walk(store: MetaStore, q: Omit<VersionQuery, 'after'>): Promise<Array<[string, string, boolean, boolean]>> {
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

const ID = /^[0-9a-f]{32}$/;

/** The version id a commit answered. */
const vid = (out: unknown): string | undefined => (out as { versionId?: string }).versionId;
/** The retention check the store requires, allowing every deletion (no version here is locked). */
const allow = (): void => undefined;

describe.each(kinds.names)('versions on %s', (kind) => {
  it('overwrite and delete keep blobs; deleting versions for good frees them; the bucket is not empty meanwhile', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'refs');
    const a = rec('refs', 'k');
    const b = rec('refs', 'k');
    const first = await store!.commitPut(a, { insertOnly: false, nowSec: NOW });
    const second = await store!.commitPut(b, { insertOnly: false, nowSec: NOW });
    expect([first.result, second.result]).toEqual(['created', 'replaced']);
    const ids = [(first as { versionId: string }).versionId, (second as { versionId: string }).versionId];
    expect(ids[1]! > ids[0]!).toBe(true);
    expect(second.freedBlobs).toEqual([]);
    const del = await store!.deleteObject('refs', 'k', NOW);
    expect(del.marker).toMatch(ID);
    expect(await store!.blobReferenced(a.blobId)).toBe(true);
    expect(await store!.blobReferenced(b.blobId)).toBe(true);
    expect(await store!.getObject('refs', 'k')).toBeUndefined();
    expect((await store!.getVersion('refs', 'k', undefined))?.deleteMarker).toBe(true);
    expect((await store!.getVersion('refs', 'k', ids[0]))?.record.blobId).toBe(a.blobId);
    // A copy of an old version shares its blob.
    const copy = await store!.copyObject({ bucket: 'refs', key: 'k', versionId: ids[0] }, { bucket: 'refs', key: 'c' }, { force: true, nowSec: NOW, putTime: 1n });
    expect(copy.result).toBe('copied');
    expect(copy.versionId).toMatch(ID);
    expect((await store!.deleteVersion('refs', 'k', ids[0]!, undefined, allow)).freedBlobs).toEqual([]);
    expect(await store!.blobReferenced(a.blobId)).toBe(true);
    const lastOfB = await store!.deleteVersion('refs', 'k', ids[1]!, undefined, allow);
    expect(lastOfB.freedBlobs).toEqual([b.blobId]);
    expect(await store!.blobReferenced(b.blobId)).toBe(false);
    expect((await store!.deleteVersion('refs', 'k', ids[1]!, undefined, allow)).result).toBe('no-version');
    await store!.deleteVersion('refs', 'c', copy.versionId!, undefined, allow);
    // Only the marker is left: the bucket is not empty until it goes.
    expect(await store!.dropBucket('refs')).toBe('not-empty');
    expect((await store!.deleteVersion('refs', 'k', del.marker!, undefined, allow)).deleteMarker).toBe(true);
    expect(await store!.dropBucket('refs')).toBe('dropped');
  });

  it('deleting the current version or the current marker makes the previous version current again', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'back');
    const one = await store!.commitPut(rec('back', 'k'), { insertOnly: false, nowSec: NOW });
    const two = await store!.commitPut(rec('back', 'k'), { insertOnly: false, nowSec: NOW });
    await store!.deleteVersion('back', 'k', vid(two)!, undefined, allow);
    expect((await store!.getObject('back', 'k'))?.versionId).toBe(vid(one));
    const del = await store!.deleteObject('back', 'k', NOW);
    expect(await store!.getObject('back', 'k')).toBeUndefined();
    await store!.deleteVersion('back', 'k', del.marker!, undefined, allow);
    expect((await store!.getObject('back', 'k'))?.versionId).toBe(vid(one));
    expect(await walk(store!, { bucket: 'back', prefix: '', delimiter: '', limit: 10 })).toEqual([['k', vid(one), true, false]]);
  });

  it('Suspended writes and deletes replace the one null version (its blob freed)', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'sus');
    const v1 = await store!.commitPut(rec('sus', 'k'), { insertOnly: false, nowSec: NOW });
    await store!.updateBucketSettings('sus', (s) => ({ ...s, versioning: 'Suspended' }));
    const n1 = rec('sus', 'k');
    const put = await store!.commitPut(n1, { insertOnly: false, nowSec: NOW });
    expect(vid(put)).toBeUndefined();
    const n2 = rec('sus', 'k');
    expect((await store!.commitPut(n2, { insertOnly: false, nowSec: NOW })).freedBlobs).toEqual([n1.blobId]);
    const del = await store!.deleteObject('sus', 'k', NOW);
    expect(del.marker).toBe('null');
    expect(await walk(store!, { bucket: 'sus', prefix: '', delimiter: '', limit: 10 })).toEqual([
      ['k', 'null', true, true],
      ['k', vid(v1), false, false],
    ]);
    expect(await store!.blobReferenced(n2.blobId)).toBe(false);
  });

  it('a move leaves the source as a noncurrent version under a marker, sharing the blob', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'mv');
    const a = rec('mv', 'from');
    await store!.commitPut(a, { insertOnly: false, nowSec: NOW });
    expect((await store!.moveObject({ bucket: 'mv', key: 'from' }, { bucket: 'mv', key: 'to' }, { force: false, nowSec: NOW })).result).toBe('moved');
    expect(await walk(store!, { bucket: 'mv', prefix: '', delimiter: '', limit: 1000 })).toEqual([
      ['from', expect.stringMatching(ID), true, true],
      ['from', expect.stringMatching(ID), false, false],
      ['to', expect.stringMatching(ID), true, false],
    ]);
    const to = (await store!.getVersion('mv', 'to', undefined))!;
    expect((await store!.deleteVersion('mv', 'to', to.record.versionId!, undefined, allow)).freedBlobs).toEqual([]);
    expect(await store!.blobReferenced(a.blobId)).toBe(true);
  });

  it('an expiry (deleteAfterDays) leaves a marker and keeps the version', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'exp');
    const a = { ...rec('exp', 'k'), expireAt: NOW - 1 };
    await store!.commitPut(a, { insertOnly: false, nowSec: NOW - 10 });
    expect((await store!.deleteExpired(NOW, 100)).freedBlobs).toEqual([]);
    expect((await walk(store!, { bucket: 'exp', prefix: '', delimiter: '', limit: 10 })).map((v) => [v[2], v[3]])).toEqual([
      [true, true],
      [false, false],
    ]);
    expect(await store!.blobReferenced(a.blobId)).toBe(true);
  });

  it('two stores on one database with clocks an hour apart: each new id sorts after the newest', async () => {
    const [s1, s2] = await kinds.fresh(kind, 2);
    await versioned(s1!, 'clocks');
    const ahead = BigInt(NOW + 3600) * 10_000_000n;
    const behind = BigInt(NOW) * 10_000_000n;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const store = i % 2 === 0 ? s1! : s2!;
      const out = await store.commitPut(rec('clocks', 'k', i % 2 === 0 ? ahead : behind), { insertOnly: false, nowSec: NOW });
      ids.push(vid(out)!);
    }
    const marker = (await s2!.deleteObject('clocks', 'k', NOW)).marker!;
    ids.push(marker);
    expect([...ids].sort()).toEqual(ids);
    expect((await walk(s1!, { bucket: 'clocks', prefix: '', delimiter: '', limit: 3 })).map((v) => v[1])).toEqual([...ids].reverse());
  });

  it('noncurrent expiry and expired markers: only while still noncurrent / sole; the counters follow', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'keep');
    const a = rec('keep', 'k');
    const one = await store!.commitPut(a, { insertOnly: false, nowSec: NOW });
    await store!.commitPut(rec('keep', 'k'), { insertOnly: false, nowSec: NOW });
    const stats = async (): Promise<unknown> => (await store!.versionStats())?.get('keep');
    expect(await stats()).toEqual({ noncurrentVersions: 1, deleteMarkers: 0, noncurrentBytes: 1 });
    const old = (await store!.getVersion('keep', 'k', vid(one)))!;
    expect(await store!.expireNoncurrentVersion('keep', 'k', old.sortId, allow)).toEqual({ deleted: true, freedBlobs: [a.blobId] });
    expect(await stats()).toEqual({ noncurrentVersions: 0, deleteMarkers: 0, noncurrentBytes: 0 });
    // The current entry is never expired as noncurrent.
    const cur = (await store!.getVersion('keep', 'k', undefined))!;
    expect((await store!.expireNoncurrentVersion('keep', 'k', cur.sortId, allow)).deleted).toBe(false);
    // A marker over a version is not sole; once the version goes, it is.
    const marker = (await store!.deleteObject('keep', 'k', NOW)).marker!;
    expect(await stats()).toEqual({ noncurrentVersions: 1, deleteMarkers: 1, noncurrentBytes: 1 });
    const markerSort = (await store!.getVersion('keep', 'k', marker))!.sortId;
    expect(await store!.removeExpiredDeleteMarker('keep', 'k', markerSort)).toBe(false);
    expect((await store!.expireNoncurrentVersion('keep', 'k', cur.sortId, allow)).deleted).toBe(true);
    expect(await store!.removeExpiredDeleteMarker('keep', 'k', markerSort)).toBe(true);
    expect(await walk(store!, { bucket: 'keep', prefix: '', delimiter: '', limit: 10 })).toEqual([]);
    expect(await store!.dropBucket('keep')).toBe('dropped');
  });

  it('pages through 600 versions of one key (more than a read chunk), prefixes and markers, each once', async () => {
    const [store] = await kinds.fresh(kind);
    await versioned(store!, 'many');
    for (let i = 0; i < 600; i++) await store!.commitPut(rec('many', 'hot'), { insertOnly: false, nowSec: NOW });
    await store!.commitPut(rec('many', 'a/1'), { insertOnly: false, nowSec: NOW });
    await store!.commitPut(rec('many', 'a/2'), { insertOnly: false, nowSec: NOW });
    await store!.deleteObject('many', 'z', NOW, undefined, undefined, { markMissing: true });
    for (const limit of [7, 1000]) {
      const all = await walk(store!, { bucket: 'many', prefix: '', delimiter: '/', limit });
      expect(all.length).toBe(1 + 600 + 1);
      expect(all[0]).toEqual(['a/', '', false, false]);
      const hot = all.slice(1, 601);
      expect(hot.map((v) => v[2])).toEqual([true, ...Array(599).fill(false)]);
      const ids = hot.map((v) => v[1]);
      expect([...ids].sort().reverse()).toEqual(ids);
      expect(new Set(ids).size).toBe(600);
      expect([all[601]![0], all[601]![2], all[601]![3]]).toEqual(['z', true, true]);
    }
    expect((await walk(store!, { bucket: 'many', prefix: 'a/', delimiter: '/', limit: 1 })).map((v) => v[0])).toEqual(['a/1', 'a/2']);
  });
});
