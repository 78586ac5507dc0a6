/**
 * The MetaStore contract (src/ports/meta.ts), run against every implementation (meta-store.test.ts: the embedded
 * SQLite and PostgreSQL, test/helpers/meta-stores.ts). Entries, buckets, blobs, manifests, sessions, listings,
 * lifecycle rules, sweeps, usage and quotas, driven only through the port — plus, for concurrency, two stores
 * sharing one database (two processes, or two cluster nodes) racing on the same keys, quota and blobs.
 * Units as in the port: sizes bytes, times Unix seconds, putTime 100-ns units.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newManifestId } from '../../src/ports/manifest.js';
import type { BucketRecord, ListPage, ListQuery, MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import { newInlineBlobId } from '../../src/ports/inline-blob-id.js';
import type { MetaStoreKind, MetaStoreKinds } from '../helpers/meta-stores.js';

/** 2023-11-14 22:13:20 UTC. */
export const NOW = 1_700_000_000;
/** A putTime past 2^53 (100-ns units of NOW). */
const PUT = 17_000_000_000_000_000n + 7n;

/** A fresh file-blob id (32 hex characters, as the BlobStore makes them). */
export const blobId = (): string => randomBytes(16).toString('hex');

export function bucketRec(name: string): BucketRecord {
  return { name, region: 'z0', private: false, ctime: NOW, owner: 'ak', nrop: false, settings: {} };
}

export function entry(bucket: string, key: string, extra: Partial<ObjectRecord> = {}): ObjectRecord {
  return {
    bucket,
    key,
    blobId: blobId(),
    fsize: 3,
    hash: `F${key}`,
    md5: 'abc',
    mimeType: 'text/plain',
    putTime: PUT,
    type: 0,
    status: 0,
    meta: {},
    ...extra,
  };
}

const names = (page: ListPage): string[] => page.entries.map((e) => (e.kind === 'item' ? e.item.key : `P:${e.prefix}`));

/** Every entry of a listing, paged with `limit`. */
async function listAll(store: MetaStore, query: ListQuery): Promise<string[]> {
  const all: string[] = [];
  let after: ListQuery['after'];
  for (;;) {
    const page = await store.listObjects({ ...query, ...(after ? { after } : {}) });
    all.push(...names(page));
    const last = page.entries[page.entries.length - 1];
    if (!page.more || !last) return all;
    after = last.kind === 'item' ? { key: last.item.key, isPrefix: false } : { key: last.prefix, isPrefix: true };
  }
}

/** A deterministic pseudo-random sequence in [0, 1) (mulberry32). */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Registers the contract for every kind of `kinds`. */
export function metaStoreContract(kinds: MetaStoreKinds): void {
  describe.each(kinds.names)('MetaStore contract: %s', (kind: MetaStoreKind) => {
    const open = async (n = 1): Promise<MetaStore[]> => kinds.fresh(kind, n);
    const one = async (...buckets: string[]): Promise<MetaStore> => {
      const [s] = await open();
      for (const b of buckets) await s!.createBucket(bucketRec(b));
      return s!;
    };
    const put = (s: MetaStore, rec: ObjectRecord, insertOnly = false, nowSec = NOW) => s.commitPut(rec, { insertOnly, nowSec });

    it('buckets, styles, settings, domains, key pairs, settings and change counters', async () => {
      const s = await one();
      expect(await s.createBucket(bucketRec('b1'))).toBe(true);
      expect(await s.createBucket(bucketRec('b1'))).toBe(false);
      await s.createBucket({ ...bucketRec('a0'), private: true });
      expect(await s.getBucket('b1')).toEqual(bucketRec('b1'));
      expect((await s.listBuckets()).map((b) => [b.name, b.private])).toEqual([
        ['a0', true],
        ['b1', false],
      ]);
      expect(await s.setBucketPrivate('b1', true)).toBe(true);
      expect(await s.setBucketSource('b1', { url: 'http://origin.example', host: 'h.example' })).toBe(true);
      expect(await s.setBucketNrop('b1', true)).toBe(true);
      expect(await s.setBucketNrop('nope', true)).toBe(false);
      expect(await s.updateBucketStyles('b1', (st) => ({ ...st, styles: { ...st.styles, small: 'imageView2/2/w/10' } }))).toBe(true);
      expect(await s.updateBucketStyles('nope', (st) => st)).toBe(false);
      const updated = await s.updateBucketSettings('b1', (cur) => ({ ...cur, maxAge: 60 }));
      expect(updated?.settings).toEqual({ maxAge: 60 });
      expect(await s.updateBucketSettings('nope', (cur) => cur)).toBeUndefined();
      await expect(s.updateBucketSettings('b1', () => { throw new Error('abort'); })).rejects.toThrow('abort');
      expect(await s.getBucket('b1')).toEqual({
        ...bucketRec('b1'),
        private: true,
        source: 'http://origin.example',
        sourceHost: 'h.example',
        nrop: true,
        styles: { separator: '-', styles: { small: 'imageView2/2/w/10' } },
        settings: { maxAge: 60 },
      });
      await s.setBucketSource('b1', undefined);
      expect((await s.getBucket('b1'))?.source).toBeUndefined();
      // Clearing every setting stores nothing: `{}` again.
      expect((await s.updateBucketSettings('b1', () => ({})))?.settings).toEqual({});

      const domains0 = await s.changeCount('domains');
      expect(await s.bindDomain('d.example', 'b1', NOW)).toBe('bound');
      expect(await s.bindDomain('d.example', 'b1', NOW)).toBe('bound');
      expect(await s.bindDomain('d.example', 'a0', NOW)).toBe('taken');
      expect(await s.bindDomain('e.example', 'nope', NOW)).toBe('no-bucket');
      expect(await s.bindDomain('e.example', 'b1', NOW + 1)).toBe('bound');
      expect(await s.domainsOf('b1')).toEqual([
        { domain: 'd.example', bucket: 'b1', ctime: NOW },
        { domain: 'e.example', bucket: 'b1', ctime: NOW + 1 },
      ]);
      expect(await s.bucketOfDomain('d.example')).toBe('b1');
      expect(await s.unbindDomain('e.example')).toBe(true);
      expect(await s.unbindDomain('e.example')).toBe(false);
      expect(await s.changeCount('domains')).toBeGreaterThan(domains0);

      const keys0 = await s.changeCount('access_keys');
      await s.createAccessKey({ accessKey: 'AK2', secretKey: 'SK2', ctime: NOW + 1 });
      await s.createAccessKey({ accessKey: 'AK1', secretKey: 'SK1', ctime: NOW });
      await expect(s.createAccessKey({ accessKey: 'AK1', secretKey: 'x', ctime: NOW })).rejects.toThrow();
      expect(await s.listAccessKeys()).toEqual([
        { accessKey: 'AK1', secretKey: 'SK1', ctime: NOW },
        { accessKey: 'AK2', secretKey: 'SK2', ctime: NOW + 1 },
      ]);
      const keys1 = await s.changeCount('access_keys');
      expect(keys1).toBeGreaterThan(keys0);
      expect(await s.deleteAccessKey('AK2')).toBe(true);
      expect(await s.deleteAccessKey('AK2')).toBe(false);
      // Moved by the deletion (a statement that changed nothing may move it too: a reload costs nothing).
      expect(await s.changeCount('access_keys')).toBeGreaterThan(keys1);

      expect(await s.getSetting('x')).toBeUndefined();
      await s.setSetting('x', '1');
      await s.setSetting('x', '2');
      expect(await s.getSetting('x')).toBe('2');
      // claimSetting: the first value stays; a later claim resolves with it.
      expect(await s.claimSetting('deployment_id', 'first')).toBe('first');
      expect(await s.claimSetting('deployment_id', 'second')).toBe('first');
      expect(await s.getSetting('deployment_id')).toBe('first');
      await s.ping();

      // Only inline blobs so far (none): the metadata knows no file blob until one is committed.
      expect(await s.knowsFileBlobs()).toBe(false);
      await put(s, entry('b1', 'k'));
      expect(await s.knowsFileBlobs()).toBe(true);

      expect(await s.dropBucket('b1')).toBe('not-empty');
      await s.deleteObject('b1', 'k', NOW);
      expect(await s.dropBucket('b1')).toBe('dropped');
      expect(await s.dropBucket('b1')).toBe('missing');
      expect(await s.getBucket('b1')).toBeUndefined();
      expect(await s.bucketOfDomain('d.example')).toBeUndefined();
    });

    it('commitPut: created, replaced, identical, exists, no-bucket; records round-trip exactly', async () => {
      const s = await one('b');
      const full = entry('b', 'k', {
        meta: { a: '1' },
        endUser: 'eu',
        expireAt: NOW + 100,
        transitions: { toIA: NOW + 10 },
        restoreStatus: 2,
        restoreUntil: NOW + 5,
        parts: [1, 2],
        type: 1,
        status: 1,
      });
      const sums = { blockBytes: 4096, crc32: Buffer.from([1, 2, 3, 4]) };
      expect(await s.commitPut(full, { insertOnly: false, nowSec: NOW, sums })).toEqual({ result: 'created', freedBlobs: [] });
      const got = await s.getObject('b', 'k');
      expect(got).toEqual({ ...full, sums });
      expect(got?.putTime).toBe(PUT);
      expect((await s.getBucketAndObject('b', 'k')).object).toEqual(got);
      expect(await s.getBucketAndObject('b', 'nokey')).toEqual({ bucket: bucketRec('b') });
      expect(await s.getBucketAndObject('nob', 'k')).toEqual({});
      expect(await s.getObject('b', 'nokey')).toBeUndefined();

      const same = entry('b', 'k', { hash: full.hash });
      const identical = await put(s, same, true);
      expect(identical.result).toBe('identical');
      expect(identical.freedBlobs).toEqual([]);
      expect(await s.blobReferenced(same.blobId)).toBe(false);
      const other = entry('b', 'k', { hash: 'Fother' });
      const exists = await put(s, other, true);
      expect(exists).toMatchObject({ result: 'exists', freedBlobs: [], existing: { blobId: full.blobId } });
      const replaced = await put(s, other);
      expect(replaced).toMatchObject({ result: 'replaced', freedBlobs: [full.blobId], previous: { blobId: full.blobId } });
      expect(await s.blobReferenced(full.blobId)).toBe(false);
      expect(await s.pendingBlobDeletions(10)).toEqual([full.blobId]);
      await s.forgetBlobDeletions([full.blobId]);
      expect(await s.pendingBlobDeletions(10)).toEqual([]);
      expect(await put(s, entry('nob', 'k'))).toEqual({ result: 'no-bucket', freedBlobs: [] });
    });

    it('commitPut precondition: sees the live entry in the transaction; its error refuses the commit, nothing changed', async () => {
      const s = await one('b');
      const seen: Array<string | undefined> = [];
      const refuse = new Error('refused');
      const first = entry('b', 'p', { hash: 'Ffirst' });
      const created = await s.commitPut(first, { insertOnly: false, nowSec: NOW, precondition: (e) => (seen.push(e?.hash), undefined) });
      expect(created.result).toBe('created');
      const second = entry('b', 'p', { hash: 'Fsecond' });
      const refused = await s.commitPut(second, { insertOnly: false, nowSec: NOW, precondition: (e) => (seen.push(e?.hash), refuse) });
      expect(refused).toEqual({ result: 'refused', freedBlobs: [], error: refuse });
      expect(seen).toEqual([undefined, 'Ffirst']);
      expect((await s.getObject('b', 'p'))?.blobId).toBe(first.blobId);
      expect(await s.blobReferenced(second.blobId)).toBe(false);
      // An expired entry is absent to the precondition too.
      const old = entry('b', 'gone', { expireAt: NOW });
      await put(s, old, false, NOW - 10);
      const fresh = entry('b', 'gone');
      expect((await s.commitPut(fresh, { insertOnly: false, nowSec: NOW, precondition: (e) => (e ? refuse : undefined) })).result).toBe('created');
    });

    it('commitPut: an expired entry counts as absent; an identical one with a corrupt blob is replaced', async () => {
      const s = await one('b');
      const old = entry('b', 'ttl', { expireAt: NOW });
      await put(s, old, false, NOW - 10);
      const again = entry('b', 'ttl', { hash: old.hash });
      expect(await put(s, again, true)).toEqual({ result: 'created', freedBlobs: [old.blobId] });

      const first = entry('b', 'rot');
      await put(s, first);
      expect(await s.markBlobCorrupt(first.blobId)).toBe(true);
      expect(await s.markBlobCorrupt(first.blobId)).toBe(false);
      expect((await s.getObject('b', 'rot'))?.corrupt).toBe(true);
      const heal = entry('b', 'rot', { hash: first.hash });
      expect(await put(s, heal, true)).toMatchObject({ result: 'replaced', freedBlobs: [first.blobId] });
      expect((await s.getObject('b', 'rot'))?.corrupt).toBeUndefined();
    });

    it('inline blobs live with their entry and go with their last reference (no file freed)', async () => {
      const s = await one('b');
      const id = newInlineBlobId();
      const bytes = Buffer.from('hello inline');
      await s.commitPut(entry('b', 'small', { blobId: id, fsize: bytes.length }), { insertOnly: false, nowSec: NOW, inline: bytes });
      expect(await s.inlineBlob(id)).toEqual(bytes);
      // The download read carries the bytes (no second query); other reads and file blobs do not.
      expect((await s.getBucketAndObject('b', 'small')).object?.inline).toEqual(bytes);
      expect((await s.getObject('b', 'small'))?.inline).toBeUndefined();
      await s.commitPut(entry('b', 'file'), { insertOnly: false, nowSec: NOW });
      expect((await s.getBucketAndObject('b', 'file')).object).not.toHaveProperty('inline');
      await s.copyObject({ bucket: 'b', key: 'small' }, { bucket: 'b', key: 'copy' }, { force: false, nowSec: NOW, putTime: PUT });
      expect((await s.deleteObject('b', 'small', NOW)).freedBlobs).toEqual([]);
      expect(await s.inlineBlob(id)).toEqual(bytes);
      expect(await s.deleteObject('b', 'copy', NOW)).toEqual({ result: 'deleted', freedBlobs: [] });
      expect(await s.inlineBlob(id)).toBeUndefined();
      expect(await s.blobReferenced(id)).toBe(false);
      expect(await s.inlineBlob(newInlineBlobId())).toBeUndefined();
    });

    it('copy, move, delete and updateObject share and release blob references', async () => {
      const s = await one('b', 'c');
      const a = entry('b', 'a');
      await put(s, a);
      const copy = (from: string, to: string, force = false, toBucket = 'b') =>
        s.copyObject({ bucket: 'b', key: from }, { bucket: toBucket, key: to }, { force, nowSec: NOW, putTime: 5n });
      const move = (from: string, to: string, force = false, fromBucket = 'b', toBucket = 'b') =>
        s.moveObject({ bucket: fromBucket, key: from }, { bucket: toBucket, key: to }, { force, nowSec: NOW });
      expect(await copy('a', 'a2')).toEqual({ result: 'copied', freedBlobs: [] });
      expect((await s.getObject('b', 'a2'))?.putTime).toBe(5n);
      expect((await copy('a', 'a2')).result).toBe('exists');
      expect((await copy('a', 'a')).result).toBe('exists');
      expect((await copy('a', 'a', true)).result).toBe('copied');
      expect((await copy('zz', 'a3')).result).toBe('no-source');
      expect((await copy('a', 'x', false, 'nob')).result).toBe('no-bucket');
      expect((await copy('a', 'x', false, 'c')).result).toBe('copied');
      // Three entries share a's blob: two deletions free nothing, the third frees it.
      expect(await s.deleteObject('b', 'a', NOW)).toEqual({ result: 'deleted', freedBlobs: [] });
      expect(await s.deleteObject('b', 'a', NOW)).toEqual({ result: 'missing', freedBlobs: [] });
      expect((await s.deleteObject('c', 'x', NOW)).freedBlobs).toEqual([]);
      expect(await s.blobReferenced(a.blobId)).toBe(true);

      const t = entry('b', 't');
      await put(s, t);
      expect((await move('a2', 't')).result).toBe('exists');
      expect(await move('a2', 't', true)).toEqual({ result: 'moved', freedBlobs: [t.blobId] });
      expect(await s.getObject('b', 'a2')).toBeUndefined();
      expect((await s.getObject('b', 't'))?.blobId).toBe(a.blobId);
      expect((await move('t', 't')).result).toBe('moved');
      expect((await move('nokey', 'u')).result).toBe('no-source');
      expect((await move('t', 'u', false, 'b', 'nob')).result).toBe('no-bucket');
      expect((await move('t', 'u', false, 'b', 'c')).result).toBe('moved');

      const upd = await s.updateObject('c', 'u', NOW, (r) => ({ ...r, mimeType: 'image/png', meta: { x: 'y' }, blobId: 'ignored' }));
      expect(upd.result).toBe('updated');
      expect(await s.getObject('c', 'u')).toMatchObject({ mimeType: 'image/png', meta: { x: 'y' }, blobId: a.blobId });
      expect((await s.updateObject('c', 'none', NOW, (r) => r)).result).toBe('missing');
      await expect(s.updateObject('c', 'u', NOW, () => { throw new Error('abort'); })).rejects.toThrow('abort');
      expect((await s.getObject('c', 'u'))?.mimeType).toBe('image/png');
      expect(await s.deleteObject('c', 'u', NOW)).toEqual({ result: 'deleted', freedBlobs: [a.blobId] });
      expect(await s.blobReferenced(a.blobId)).toBe(false);
    });

    it('manifests: committed with their claim, shared by copies, their pieces freed with the last reference', async () => {
      const s = await one('b');
      const chunks = [blobId(), blobId()];
      const sums = { blockBytes: 4096, crc32: Buffer.alloc(4, 7) };
      await s.sessions.createBlock({ id: 'blk1', accessKey: 'ak', size: 8, offset: 4, chunks: [chunks[0]!], expiresAt: NOW + 60 }, sums);
      expect(await s.sessions.appendChunk('blk1', 4, { blobId: chunks[1]!, size: 4 })).toEqual({ result: 'ok', offset: 8 });
      const id = newManifestId();
      const rec = entry('b', 'big', { blobId: id, fsize: 8 });
      const manifest = { id, pieces: chunks.map((c) => ({ blobId: c, size: 4 })), claim: { kind: 'blocks' as const, ids: ['blk1'] } };
      expect(await s.commitPut(rec, { insertOnly: false, nowSec: NOW, manifest })).toEqual({ result: 'created', freedBlobs: [] });
      expect(await s.sessions.getBlock('blk1')).toBeUndefined();
      const got = await s.getObject('b', 'big');
      expect(got?.pieces).toEqual([
        { blobId: chunks[0], size: 4, sums },
        { blobId: chunks[1], size: 4 },
      ]);
      expect(got?.corrupt).toBeUndefined();
      expect(await s.entriesOfBlobs([chunks[1]!])).toEqual([{ bucket: 'b', key: 'big', blobId: chunks[1] }]);
      // The same claim again: the session is gone.
      const again = entry('b', 'big2', { blobId: newManifestId(), fsize: 8 });
      expect(await s.commitPut(again, { insertOnly: false, nowSec: NOW, manifest: { ...manifest, id: again.blobId } })).toEqual({
        result: 'session-lost',
        freedBlobs: [],
        reason: 'gone',
      });
      await s.markBlobCorrupt(chunks[1]!);
      expect((await s.getObject('b', 'big'))?.corrupt).toBe(true);
      await s.copyObject({ bucket: 'b', key: 'big' }, { bucket: 'b', key: 'big-copy' }, { force: false, nowSec: NOW, putTime: PUT });
      expect((await s.deleteObject('b', 'big', NOW)).freedBlobs).toEqual([]);
      expect(await s.blobReferenced(chunks[0]!)).toBe(true);
      const last = await s.deleteObject('b', 'big-copy', NOW);
      expect(last.freedBlobs.sort()).toEqual([...chunks].sort());
      expect(await s.blobReferenced(id)).toBe(false);
      expect(await s.pendingBlobDeletions(10)).not.toContain(id);
    });

    it('lists live uploads of a bucket by key (byte order) then id, after a marker, under a prefix', async () => {
      const s = await one('lb');
      const up = (id: string, bucket: string, key: string | undefined, expiresAt = NOW + 60) =>
        s.sessions.createUpload({ id, accessKey: 'ak', bucket, ...(key !== undefined ? { key } : {}), createdAt: NOW, expiresAt });
      await up('u3', 'lb', 'a/é');
      await up('u2', 'lb', 'a/z');
      await up('u1', 'lb', 'a/z');
      await up('u4', 'lb', 'b/x');
      await up('u5', 'lb', undefined);
      await up('u6', 'other', 'a/z');
      await up('u7', 'lb', 'a/old', NOW);
      const ids = async (prefix: string, after?: { key: string; id: string }, limit = 10) =>
        (await s.sessions.listUploads('lb', prefix, after, limit, NOW)).map((u) => `${u.key}:${u.id}`);
      expect(await ids('')).toEqual(['a/z:u1', 'a/z:u2', 'a/é:u3', 'b/x:u4']);
      expect(await ids('a/')).toEqual(['a/z:u1', 'a/z:u2', 'a/é:u3']);
      expect(await ids('', { key: 'a/z', id: 'u1' })).toEqual(['a/z:u2', 'a/é:u3', 'b/x:u4']);
      expect(await ids('', undefined, 2)).toEqual(['a/z:u1', 'a/z:u2']);
    });

    it('manifests from v2 parts: a replaced part loses the claim; identical content consumes the session', async () => {
      const s = await one('b');
      await s.sessions.createUpload({ id: 'up1', accessKey: 'ak', bucket: 'b', key: 'k', createdAt: NOW, expiresAt: NOW + 60 });
      const p1 = blobId();
      const p2 = blobId();
      const part = (n: number, id: string) => ({ partNumber: n, blobId: id, size: 5, md5: 'm', etag: 'e', putTime: NOW });
      await s.sessions.putPart('up1', part(1, p1));
      await s.sessions.putPart('up1', part(2, p2));
      const claim = { kind: 'upload' as const, id: 'up1', parts: [{ partNumber: 1, blobId: p1 }, { partNumber: 2, blobId: p2 }] };
      const p2b = blobId();
      expect((await s.sessions.putPart('up1', part(2, p2b))).freedBlobs).toEqual([p2]);
      const id = newManifestId();
      const pieces = [{ blobId: p1, size: 5 }, { blobId: p2, size: 5 }];
      const lost = await s.commitPut(entry('b', 'k', { blobId: id, fsize: 10 }), { insertOnly: false, nowSec: NOW, manifest: { id, pieces, claim } });
      expect(lost).toEqual({ result: 'session-lost', freedBlobs: [], reason: 'replaced' });
      expect(await s.blobReferenced(id)).toBe(false);

      const existing = entry('b', 'k', { hash: 'Fsame' });
      await put(s, existing);
      const claim2 = { ...claim, parts: [{ partNumber: 1, blobId: p1 }, { partNumber: 2, blobId: p2b }] };
      const pieces2 = [{ blobId: p1, size: 5 }, { blobId: p2b, size: 5 }];
      const same = await s.commitPut(entry('b', 'k', { blobId: id, fsize: 10, hash: 'Fsame' }), {
        insertOnly: true,
        nowSec: NOW,
        manifest: { id, pieces: pieces2, claim: claim2 },
      });
      expect(same.result).toBe('identical');
      expect(same.freedBlobs.sort()).toEqual([p1, p2b].sort());
      expect(await s.sessions.getUpload('up1')).toBeUndefined();
    });

    it('sessions: appendChunk compare-and-set, parts replaced and listed, deletions and the expiry sweep', async () => {
      const s = await one();
      const c1 = blobId();
      await s.sessions.createBlock({ id: 'b1', accessKey: 'ak', size: 10, offset: 4, chunks: [c1], expiresAt: NOW, sha1: 'S' });
      expect(await s.sessions.getBlock('b1')).toEqual({ id: 'b1', accessKey: 'ak', size: 10, offset: 4, chunks: [c1], expiresAt: NOW, sha1: 'S' });
      const c2 = blobId();
      expect(await s.sessions.appendChunk('b1', 0, { blobId: c2, size: 3 })).toEqual({ result: 'mismatch' });
      expect(await s.sessions.appendChunk('nope', 0, { blobId: c2, size: 3 })).toEqual({ result: 'missing' });
      expect(await s.blobReferenced(c2)).toBe(false);
      // Two racing appends at the same offset: exactly one wins.
      const c3 = blobId();
      const raced = await Promise.all([
        s.sessions.appendChunk('b1', 4, { blobId: c2, size: 3 }),
        s.sessions.appendChunk('b1', 4, { blobId: c3, size: 3 }),
      ]);
      expect(raced.map((r) => r.result).sort()).toEqual(['mismatch', 'ok']);
      expect((await s.sessions.getBlock('b1'))?.offset).toBe(7);

      await s.sessions.createUpload({ id: 'u1', accessKey: 'ak', bucket: 'bk', createdAt: NOW, expiresAt: NOW + 1 });
      expect(await s.sessions.getUpload('u1')).toEqual({ id: 'u1', accessKey: 'ak', bucket: 'bk', createdAt: NOW, expiresAt: NOW + 1 });
      const part = (n: number, id: string) => ({ partNumber: n, blobId: id, size: 5, md5: 'm', etag: `e${n}`, putTime: NOW, blockSha1s: Buffer.alloc(20, n) });
      const [q1, q2, q3] = [blobId(), blobId(), blobId()];
      expect(await s.sessions.putPart('u1', part(1, q1!))).toEqual({ result: 'ok', freedBlobs: [] });
      expect(await s.sessions.putPart('u1', part(3, q2!))).toEqual({ result: 'ok', freedBlobs: [] });
      expect(await s.sessions.putPart('u1', part(3, q3!))).toEqual({ result: 'ok', freedBlobs: [q2] });
      expect(await s.sessions.putPart('u-none', part(1, blobId()))).toEqual({ result: 'missing', freedBlobs: [] });
      expect(await s.sessions.listParts('u1', 0, 10)).toEqual([part(1, q1!), part(3, q3!)]);
      // A part's S3 checksum round-trips, and a re-upload without one clears it.
      await s.sessions.createUpload({ id: 'uc', accessKey: 'ak', bucket: 'bk', createdAt: NOW, expiresAt: NOW + 1 });
      const sha = 'sha256:arcu6553sHVAiX4MjW0j7I7vD4w6R+Gz9Ok0Q9lTa+0=';
      await s.sessions.putPart('uc', { ...part(2, blobId()), checksum: sha });
      expect((await s.sessions.listParts('uc', 0, 1))[0]?.checksum).toBe(sha);
      const q5 = blobId();
      await s.sessions.putPart('uc', part(2, q5));
      expect(await s.sessions.listParts('uc', 0, 1)).toEqual([part(2, q5)]);
      await s.sessions.deleteUpload('uc');
      expect(await s.sessions.listParts('u1', 1, 10)).toEqual([part(3, q3!)]);
      expect(await s.sessions.listParts('u1', 0, 1)).toEqual([part(1, q1!)]);

      await s.sessions.createUpload({ id: 'u2', accessKey: 'ak', bucket: 'bk', key: 'k', createdAt: NOW, expiresAt: NOW + 100 });
      const r2 = blobId();
      await s.sessions.putPart('u2', part(1, r2));
      expect(await s.sessions.deleteUpload('u2')).toEqual({ deleted: true, freedBlobs: [r2] });
      expect(await s.sessions.deleteUpload('u2')).toEqual({ deleted: false, freedBlobs: [] });

      const swept = await s.sessions.deleteExpired(NOW + 1);
      expect(swept.sessions).toBe(2);
      expect(swept.freedBlobs.sort()).toEqual([c1, raced[0]!.result === 'ok' ? c2 : c3, q1, q3].sort());
      expect(await s.sessions.getBlock('b1')).toBeUndefined();
      expect(await s.sessions.getUpload('u1')).toBeUndefined();
      await s.sessions.createBlock({ id: 'b2', accessKey: 'ak', size: 1, offset: 1, chunks: [blobId()], expiresAt: NOW });
      expect((await s.sessions.deleteBlocks(['b2', 'none'])).freedBlobs).toHaveLength(1);
    });

    it('listing: prefixes, delimiters, markers, byte order of non-ASCII keys, expired entries skipped', async () => {
      const s = await one('l');
      const keys = ['a', 'a/1', 'a/2', 'a/x/1', 'a0', 'b/1', 'c', '\uFFFF', '😀/a', '\uE000', 'é', 'é/1', '中文/文件'];
      for (const key of keys) await put(s, entry('l', key));
      await put(s, entry('l', 'dead', { expireAt: NOW }), false, NOW - 1);
      await put(s, entry('l', 'dir/dead', { expireAt: NOW }), false, NOW - 1);
      const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      const q = (over: Partial<ListQuery> = {}): ListQuery => ({ bucket: 'l', prefix: '', delimiter: '', limit: 1000, nowSec: NOW, ...over });
      expect(names(await s.listObjects(q()))).toEqual(byBytes);
      for (const limit of [1, 2, 5]) expect(await listAll(s, q({ limit }))).toEqual(byBytes);
      expect(names(await s.listObjects(q({ prefix: 'a/' })))).toEqual(['a/1', 'a/2', 'a/x/1']);
      expect(names(await s.listObjects(q({ delimiter: '/' })))).toEqual(
        byBytes.map((k) => (k.includes('/') ? `P:${k.slice(0, k.indexOf('/') + 1)}` : k)).filter((k, i, all) => all.indexOf(k) === i),
      );
      expect(await listAll(s, q({ prefix: 'a/', delimiter: '/', limit: 1 }))).toEqual(['a/1', 'a/2', 'P:a/x/']);
      expect(names(await s.listObjects(q({ after: { key: 'a/', isPrefix: true } })))).toEqual(byBytes.slice(byBytes.indexOf('a0')));
      expect(names(await s.listObjects(q({ after: { key: 'c', isPrefix: false }, limit: 2 })))).toEqual(byBytes.slice(byBytes.indexOf('c') + 1).slice(0, 2));
      const page = await s.listObjects(q({ prefix: 'c', limit: 1 }));
      expect(page).toMatchObject({ more: false, entries: [{ kind: 'item', item: { key: 'c', putTime: PUT } }] });
      expect(await s.listObjects(q({ bucket: 'nob' }))).toEqual({ entries: [], more: false });
      expect(await s.countObjects('l')).toBe(keys.length + 2);
    });

    it('lifecycle rules: reads carry the rule dates, a rule-deleted entry is absent everywhere', async () => {
      const s = await one('r');
      const DAY = 86_400;
      const putDaysAgo = (days: number): bigint => BigInt((NOW - days * DAY) * 1000) * 10_000n;
      const rule = { name: 'logs', prefix: 'logs/', deleteAfterDays: 3, toIAAfterDays: 1, toArchiveIRAfterDays: 0, toArchiveAfterDays: 0, toDeepArchiveAfterDays: 0, ctime: NOW };
      await s.updateBucketSettings('r', () => ({ lifecycleRules: [rule] }));
      const old = entry('r', 'logs/old', { putTime: putDaysAgo(10) });
      await put(s, old);
      await put(s, entry('r', 'logs/new', { putTime: putDaysAgo(0) }));
      const fresh = await s.getObject('r', 'logs/new');
      expect(fresh?.expireAt).toBeGreaterThan(NOW);
      expect(fresh?.transitions?.toIA).toBeGreaterThan(NOW);
      expect((await s.getBucketAndObject('r', 'logs/new')).object?.expireAt).toBe(fresh?.expireAt);
      let seen: Array<number | undefined> = [];
      await s.updateObject('r', 'logs/new', NOW, (own, effective) => {
        seen = [own.expireAt, effective.expireAt];
        return own;
      });
      expect(seen).toEqual([undefined, fresh?.expireAt]);
      const listed = await s.listObjects({ bucket: 'r', prefix: '', delimiter: '/', limit: 10, nowSec: NOW });
      expect(names(listed)).toEqual(['P:logs/']);
      expect(names(await s.listObjects({ bucket: 'r', prefix: 'logs/', delimiter: '', limit: 10, nowSec: NOW }))).toEqual(['logs/new']);
      expect(await s.deleteObject('r', 'logs/old', NOW)).toEqual({ result: 'missing', freedBlobs: [old.blobId] });
      expect(await s.countObjects('r')).toBe(1);
    });

    it('sweeps: deleteExpired and deleteUnderPrefix in bounded steps', async () => {
      const s = await one('e', 'w');
      const ttl = [entry('e', 't1', { expireAt: NOW }), entry('e', 't2', { expireAt: NOW - 5 }), entry('e', 't3', { expireAt: NOW + 5 })];
      for (const r of ttl) await put(s, r, false, NOW - 100);
      const first = await s.deleteExpired(NOW, 1);
      const second = await s.deleteExpired(NOW, 10);
      expect(first.deleted + second.deleted).toBe(2);
      expect([...first.freedBlobs, ...second.freedBlobs].sort()).toEqual([ttl[0]!.blobId, ttl[1]!.blobId].sort());
      expect((await s.deleteExpired(NOW, 10)).deleted).toBe(0);

      const old = 1000n;
      for (let i = 0; i < 12; i++) await put(s, entry('w', `logs/${String(i).padStart(2, '0')}`, { putTime: i % 2 ? PUT : old }));
      await put(s, entry('w', 'logs/keep/1', { putTime: old }));
      await put(s, entry('w', 'logt', { putTime: old }));
      const sel = { prefix: 'logs/', exclude: ['logs/keep/'], putTimeBefore: 2000n };
      const steps: Array<{ deleted: number; next?: string }> = [];
      let after: string | undefined;
      for (;;) {
        const step = await s.deleteUnderPrefix('w', sel, after, 5);
        steps.push({ deleted: step.deleted, ...(step.next !== undefined ? { next: step.next } : {}) });
        expect(step.freedBlobs).toHaveLength(step.deleted);
        if (step.next === undefined) break;
        after = step.next;
      }
      expect(steps).toEqual([
        { deleted: 3, next: 'logs/04' },
        { deleted: 2, next: 'logs/09' },
        { deleted: 1 },
      ]);
      expect(await s.countObjects('w')).toBe(8);
      expect(await s.getObject('w', 'logs/keep/1')).toBeDefined();
    });

    it('bucketUsage is exact after a mix of operations; a quota refuses growth and changes nothing', async () => {
      const s = await one('ua', 'ub', 'uq');
      const use = (count: number, bytes: number) => ({ count, bytes });
      expect(await s.bucketUsage('ua')).toEqual(use(0, 0));
      expect(await s.bucketUsage('none')).toBeUndefined();
      await put(s, entry('ua', 'a', { fsize: 10 }));
      await put(s, entry('ua', 'b', { fsize: 5 }));
      await put(s, entry('ua', 'a', { fsize: 3 }));
      expect(await s.bucketUsage('ua')).toEqual(use(2, 8));
      await s.copyObject({ bucket: 'ua', key: 'a' }, { bucket: 'ub', key: 'a' }, { force: false, nowSec: NOW, putTime: PUT });
      await s.moveObject({ bucket: 'ua', key: 'b' }, { bucket: 'ub', key: 'b' }, { force: false, nowSec: NOW });
      expect(await s.bucketUsage('ua')).toEqual(use(1, 3));
      expect(await s.bucketUsage('ub')).toEqual(use(2, 8));
      await s.moveObject({ bucket: 'ub', key: 'b' }, { bucket: 'ub', key: 'a' }, { force: true, nowSec: NOW });
      expect(await s.bucketUsage('ub')).toEqual(use(1, 5));
      await s.deleteObject('ub', 'a', NOW);
      await put(s, entry('ua', 'ttl', { fsize: 7, expireAt: NOW }), false, NOW - 1);
      expect(await s.bucketUsage('ua')).toEqual(use(2, 10));
      await s.deleteExpired(NOW, 10);
      expect(await s.bucketUsage('ua')).toEqual(use(1, 3));
      expect(await s.bucketUsage('ub')).toEqual(use(0, 0));

      await s.updateBucketSettings('uq', (cur) => ({ ...cur, quota: { size: 10, count: 2 } }));
      await put(s, entry('uq', 'x', { fsize: 4, expireAt: NOW }), false, NOW - 1);
      // The expired entry does not hold room: the first commit under the quota removes it, the second entry fits.
      expect((await put(s, entry('uq', 'one', { fsize: 4 }))).freedBlobs).toHaveLength(1);
      expect((await put(s, entry('uq', 'two', { fsize: 4 }))).result).toBe('created');
      const over = entry('uq', 'three', { fsize: 1 });
      expect(await put(s, over)).toEqual({ result: 'over-quota', freedBlobs: [], refusal: { limit: 'count', max: 2 } });
      expect(await s.blobReferenced(over.blobId)).toBe(false);
      expect((await put(s, entry('uq', 'one', { fsize: 7 }))).result).toBe('over-quota');
      expect((await put(s, entry('uq', 'one', { fsize: 6 }))).result).toBe('replaced');
      expect(await s.bucketUsage('uq')).toEqual(use(2, 10));
      await put(s, entry('ua', 'in', { fsize: 1 }));
      const copied = await s.copyObject({ bucket: 'ua', key: 'in' }, { bucket: 'uq', key: 'in' }, { force: false, nowSec: NOW, putTime: PUT });
      expect(copied).toMatchObject({ result: 'over-quota', refusal: { limit: 'count', max: 2 } });
      expect((await s.moveObject({ bucket: 'ua', key: 'in' }, { bucket: 'uq', key: 'in' }, { force: false, nowSec: NOW })).result).toBe('over-quota');
      expect((await s.moveObject({ bucket: 'uq', key: 'one' }, { bucket: 'uq', key: 'uno' }, { force: false, nowSec: NOW })).result).toBe('moved');
      expect(await s.bucketUsage('uq')).toEqual(use(2, 10));
      expect(await s.getObject('ua', 'in')).toBeDefined();
    });

    it('blob states, corrupt marks, checksums, entries without sums, entries of blobs', async () => {
      const s = await one('s');
      const withSums = entry('s', 'a');
      const without = entry('s', 'b');
      const sums = { blockBytes: 1024, crc32: Buffer.from([9, 9, 9, 9]) };
      await s.commitPut(withSums, { insertOnly: false, nowSec: NOW, sums });
      await put(s, without);
      await s.copyObject({ bucket: 's', key: 'b' }, { bucket: 's', key: 'c' }, { force: false, nowSec: NOW, putTime: PUT });
      const states = await s.blobStates([without.blobId, 'missing', withSums.blobId]);
      expect([...states.keys()]).toEqual([without.blobId, withSums.blobId]);
      expect(states.get(withSums.blobId)).toEqual({ id: withSums.blobId, size: 3, sums, corrupt: false });
      expect(states.get(without.blobId)).toEqual({ id: without.blobId, size: 3, corrupt: false });
      const sorted = [withSums.blobId, without.blobId].sort();
      expect((await s.listBlobStates('', 10)).map((b) => b.id)).toEqual(sorted);
      expect((await s.listBlobStates(sorted[0]!, 10)).map((b) => b.id)).toEqual([sorted[1]]);
      expect((await s.entriesWithoutSums(undefined, 10)).map((r) => r.key)).toEqual(['b', 'c']);
      expect((await s.entriesWithoutSums({ bucket: 's', key: 'b' }, 10)).map((r) => r.key)).toEqual(['c']);
      await s.setBlobSums(without.blobId, 3, sums);
      await s.setBlobSums(without.blobId, 3, { blockBytes: 1, crc32: Buffer.alloc(4) }); // has some already: kept
      expect((await s.blobStates([without.blobId])).get(without.blobId)?.sums).toEqual(sums);
      expect(await s.entriesWithoutSums(undefined, 10)).toEqual([]);
      expect(await s.corruptBlobIds()).toEqual([]);
      expect(await s.markBlobCorrupt(without.blobId)).toBe(true);
      expect(await s.markBlobCorrupt('missing')).toBe(false);
      expect(await s.corruptBlobIds()).toEqual([without.blobId]);
      const of = await s.entriesOfBlobs([without.blobId, 'missing']);
      expect(of.map((e) => e.key).sort()).toEqual(['b', 'c']);
      expect(await s.entriesOfBlobs([])).toEqual([]);
    });

    describe('two stores on one database (processes, cluster nodes)', () => {
      it('20 concurrent insertOnly commits of one key: exactly one is created', async () => {
        const [a, b] = await open(2);
        await a!.createBucket(bucketRec('race'));
        const recs = Array.from({ length: 20 }, (_, i) => entry('race', 'k', { hash: `F${i}` }));
        const outs = await Promise.all(recs.map((r, i) => (i % 2 ? b! : a!).commitPut(r, { insertOnly: true, nowSec: NOW })));
        expect(outs.filter((o) => o.result === 'created')).toHaveLength(1);
        expect(outs.filter((o) => o.result === 'exists')).toHaveLength(19);
        const winner = recs[outs.findIndex((o) => o.result === 'created')]!;
        expect((await b!.getObject('race', 'k'))?.blobId).toBe(winner.blobId);
        for (const r of recs) expect(await a!.blobReferenced(r.blobId)).toBe(r === winner);
      });

      it('20 concurrent create-only preconditions of one key: exactly one commits', async () => {
        const [a, b] = await open(2);
        await a!.createBucket(bucketRec('race'));
        const exists = new Error('exists');
        const recs = Array.from({ length: 20 }, (_, i) => entry('race', 'pre', { hash: `F${i}` }));
        const outs = await Promise.all(
          recs.map((r, i) => (i % 2 ? b! : a!).commitPut(r, { insertOnly: false, nowSec: NOW, precondition: (e) => (e ? exists : undefined) })),
        );
        expect(outs.filter((o) => o.result === 'created')).toHaveLength(1);
        expect(outs.filter((o) => o.result === 'refused')).toHaveLength(19);
        const winner = recs[outs.findIndex((o) => o.result === 'created')]!;
        expect((await b!.getObject('race', 'pre'))?.blobId).toBe(winner.blobId);
      });

      it('a count quota of 1 with 20 parallel puts of different keys: exactly one', async () => {
        const [a, b] = await open(2);
        await a!.createBucket(bucketRec('q'));
        await b!.updateBucketSettings('q', (cur) => ({ ...cur, quota: { size: -1, count: 1 } }));
        const outs = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? b! : a!).commitPut(entry('q', `k${i}`), { insertOnly: false, nowSec: NOW })),
        );
        expect(outs.filter((o) => o.result === 'created')).toHaveLength(1);
        expect(outs.filter((o) => o.result === 'over-quota')).toHaveLength(19);
        expect(await a!.bucketUsage('q')).toEqual({ count: 1, bytes: 3 });
        expect(await b!.countObjects('q')).toBe(1);
      });

      it('sweeps racing with commits, copies and deletions of the same keys release each expired entry once', async () => {
        const [a, b] = await open(2);
        await a!.createBucket(bucketRec('sw'));
        // Each expired entry shares its blob with a live one: a reference released twice would free a live blob.
        const old = Array.from({ length: 48 }, (_, i) => entry('sw', `k${String(i).padStart(2, '0')}`, { expireAt: NOW, putTime: 1000n }));
        for (const r of old) {
          await put(a!, r, false, NOW - 10);
          await put(a!, { ...r, key: `live-${r.key}`, expireAt: undefined, putTime: PUT });
        }
        const freed: string[] = [];
        const fresh: ObjectRecord[] = [];
        const work: Array<Promise<{ freedBlobs: string[] }>> = [];
        for (let i = 0; i < old.length; i++) {
          const key = old[i]!.key;
          if (i % 3 === 0) {
            const r = entry('sw', key);
            fresh.push(r);
            work.push(b!.commitPut(r, { insertOnly: i % 2 === 0, nowSec: NOW }));
          } else if (i % 3 === 1) {
            work.push(b!.deleteObject('sw', key, NOW));
          } else {
            work.push(b!.copyObject({ bucket: 'sw', key }, { bucket: 'sw', key: `${key}-copy` }, { force: true, nowSec: NOW, putTime: PUT }));
          }
          if (i % 2 === 0) work.push(a!.deleteExpired(NOW, 3));
          if (i % 6 === 0) work.push(a!.deleteUnderPrefix('sw', { prefix: 'k', exclude: [], putTimeBefore: 2000n }, undefined, 10));
        }
        for (const out of await Promise.all(work)) freed.push(...out.freedBlobs);
        for (;;) {
          const more = await a!.deleteExpired(NOW, 100);
          freed.push(...more.freedBlobs);
          if (more.deleted === 0) break;
        }
        expect(freed).toEqual([]);
        for (const r of fresh) expect((await a!.getObject('sw', r.key))?.blobId).toBe(r.blobId);
        expect(await a!.countObjects('sw')).toBe(old.length + fresh.length);
        // The live entries hold the last references: deleting them frees each blob once.
        for (const r of old) expect((await b!.deleteObject('sw', `live-${r.key}`, NOW)).freedBlobs).toEqual([r.blobId]);
        expect(await a!.bucketUsage('sw')).toEqual({ count: fresh.length, bytes: 3 * fresh.length });
      });

      it('copy, move, delete and put storms leave every blob counted once per reference', async () => {
        const stores = await open(2);
        const [a] = stores;
        await a!.createBucket(bucketRec('s1'));
        await a!.createBucket(bucketRec('s2'));
        const slots: Array<[string, string]> = [];
        for (const b of ['s1', 's2']) for (let i = 0; i < 4; i++) slots.push([b, `k${i}`]);
        const everBlobs = new Set<string>();
        const freedOnce = new Map<string, number>();
        const noteFreed = (ids: string[]): void => {
          for (const id of ids) freedOnce.set(id, (freedOnce.get(id) ?? 0) + 1);
        };
        // A manifest among the entries: its pieces are references too.
        await a!.sessions.createBlock({ id: 'storm', accessKey: 'ak', size: 2, offset: 2, chunks: [blobId()], expiresAt: NOW + 60 });
        const block = await a!.sessions.getBlock('storm');
        const mid = newManifestId();
        await a!.commitPut(entry('s1', 'k0', { blobId: mid, fsize: 2 }), {
          insertOnly: false,
          nowSec: NOW,
          manifest: { id: mid, pieces: [{ blobId: block!.chunks[0]!, size: 2 }], claim: { kind: 'blocks', ids: ['storm'] } },
        });
        everBlobs.add(block!.chunks[0]!);
        const rnd = prng(kind === 'sqlite' ? 1 : 2);
        const pick = <T,>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
        const ops: Array<() => Promise<void>> = [];
        for (let i = 0; i < 160; i++) {
          const s = pick(stores)!;
          const [fb, fk] = pick(slots);
          const [tb, tk] = pick(slots);
          const force = rnd() < 0.7;
          const r = rnd();
          if (r < 0.3) {
            ops.push(async () => noteFreed((await s.copyObject({ bucket: fb, key: fk }, { bucket: tb, key: tk }, { force, nowSec: NOW, putTime: PUT })).freedBlobs));
          } else if (r < 0.55) {
            ops.push(async () => noteFreed((await s.moveObject({ bucket: fb, key: fk }, { bucket: tb, key: tk }, { force, nowSec: NOW })).freedBlobs));
          } else if (r < 0.75) {
            ops.push(async () => noteFreed((await s.deleteObject(fb, fk, NOW)).freedBlobs));
          } else {
            const rec = entry(tb, tk);
            everBlobs.add(rec.blobId);
            ops.push(async () => noteFreed((await s.commitPut(rec, { insertOnly: rnd() < 0.3, nowSec: NOW })).freedBlobs));
          }
        }
        // Run them in waves of 16 concurrent operations, spread over both stores.
        for (let i = 0; i < ops.length; i += 16) await Promise.all(ops.slice(i, i + 16).map((op) => op()));

        // What the entries reference now: each blob once per entry, and each piece once per live manifest.
        const live = new Map<string, number>();
        const bump = (id: string): void => {
          live.set(id, (live.get(id) ?? 0) + 1);
        };
        for (const [b, k] of slots) {
          const rec = await a!.getObject(b, k);
          if (rec) bump(rec.blobId);
        }
        if (live.has(mid)) bump(block!.chunks[0]!);
        for (const id of live.keys()) expect(await a!.blobReferenced(id), id).toBe(true);
        const counts = await refCounts(a!);
        if (counts) expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(live));
        // Deleting every entry frees each blob exactly once, never while another entry still holds it.
        for (const [b, k] of slots) {
          const out = await pick(stores).deleteObject(b, k, NOW);
          noteFreed(out.freedBlobs);
          if (out.freedBlobs.length > 0) expect(await a!.entriesOfBlobs(out.freedBlobs)).toEqual([]);
        }
        for (const id of everBlobs) {
          // A blob refused by insertOnly ('exists', 'identical') never had a reference: never freed.
          expect(freedOnce.get(id) ?? 0, id).toBeLessThanOrEqual(1);
          expect(await a!.blobReferenced(id), id).toBe(false);
        }
        expect(await a!.blobReferenced(mid)).toBe(false);
        expect(freedOnce.get(block!.chunks[0]!)).toBe(1);
        expect(await a!.bucketUsage('s1')).toEqual({ count: 0, bytes: 0 });
        expect(await a!.bucketUsage('s2')).toEqual({ count: 0, bytes: 0 });
        if (counts) expect((await refCounts(a!))?.size).toBe(0);
      });
    });
  });
}

/**
 * The reference count of every blob row, read with SQL where the test can reach the database (PostgreSQL: the
 * store's pool); undefined for SQLite (whose counts the storm test checks through the port only).
 */
async function refCounts(store: MetaStore): Promise<Map<string, number> | undefined> {
  const db = (store as { db?: { query?: unknown } }).db;
  if (!db || typeof db.query !== 'function' || !('pool' in db)) return undefined;
  const { rows } = await (db as { query: (sql: string) => Promise<{ rows: Array<{ id: string; refs: number }> }> }).query(
    'SELECT id, refs FROM blobs',
  );
  return new Map(rows.map((r) => [r.id, r.refs]));
}
