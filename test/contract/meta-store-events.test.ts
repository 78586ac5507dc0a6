/**
 * Event notifications written inside entry changes (ports/meta.ts `events` builders, ports/events.ts), on every
 * MetaStore implementation: each change that commits writes its events in its own transaction (put, replace,
 * copy, move, update, delete), with the entry it concerns; a change that does not commit (exists, over quota,
 * missing source, a mutate that throws) writes none.
 */
import { describe, expect, it } from 'vitest';
import type { NewOutboxEvent, OutboxRows } from '../../src/ports/events.js';
import type { MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import { metaStoreKinds, type MetaStoreKind } from '../helpers/meta-stores.js';
import { bucketRec, entry, NOW } from './meta-store.contract.js';

const kinds = metaStoreKinds();

let seq = 0;
/** A builder writing one event whose payload names the change and the entry it got. */
const rows =
  (what: string): OutboxRows =>
  (e: ObjectRecord): NewOutboxEvent[] => [{ id: `ev-${what}-${++seq}`, payload: JSON.stringify({ what, bucket: e.bucket, key: e.key, hash: e.hash }), createdMs: 1 }];

/** The payloads in the outbox, oldest first. */
async function payloads(s: MetaStore): Promise<Array<{ what: string; bucket: string; key: string; hash: string }>> {
  return (await s.events.recent(100)).reverse().map((e) => JSON.parse(e.payload) as { what: string; bucket: string; key: string; hash: string });
}

describe.each(kinds.names)('events written by entry changes: %s', (kind: MetaStoreKind) => {
  it('every committed change writes its events with its entry; refused changes write none', async () => {
    const [s] = await kinds.fresh(kind);
    const store = s as MetaStore;
    await store.createBucket(bucketRec('b'));
    await store.createBucket(bucketRec('q'));
    await store.updateBucketSettings('q', (cur) => ({ ...cur, quota: { size: -1, count: 0 } }));
    const opts = (what: string) => ({ insertOnly: false, nowSec: NOW, events: rows(what) });

    expect((await store.commitPut(entry('b', 'k1', { hash: 'Fone' }), opts('put'))).result).toBe('created');
    expect((await store.commitPut(entry('b', 'k1', { hash: 'Ftwo' }), opts('replace'))).result).toBe('replaced');
    expect((await store.commitPut(entry('b', 'k1', { hash: 'Fthree' }), { ...opts('exists'), insertOnly: true })).result).toBe('exists');
    expect((await store.commitPut(entry('q', 'k', {}), opts('over-quota'))).result).toBe('over-quota');
    const copy = await store.copyObject({ bucket: 'b', key: 'k1' }, { bucket: 'b', key: 'k2' }, { force: false, nowSec: NOW, putTime: 1n, events: rows('copy') });
    expect(copy.result).toBe('copied');
    const noSource = await store.copyObject({ bucket: 'b', key: 'nope' }, { bucket: 'b', key: 'k3' }, { force: false, nowSec: NOW, putTime: 1n, events: rows('copy-missing') });
    expect(noSource.result).toBe('no-source');
    expect((await store.moveObject({ bucket: 'b', key: 'k2' }, { bucket: 'b', key: 'k3' }, { force: false, nowSec: NOW, events: rows('move') })).result).toBe('moved');
    const updated = await store.updateObject('b', 'k3', NOW, (rec) => ({ ...rec, mimeType: 'image/png' }), rows('update'));
    expect(updated.result).toBe('updated');
    await expect(
      store.updateObject('b', 'k3', NOW, () => {
        throw new Error('abort');
      }, rows('update-aborted')),
    ).rejects.toThrow('abort');
    expect((await store.deleteObject('b', 'k1', NOW, rows('delete'))).result).toBe('deleted');
    expect((await store.deleteObject('b', 'k1', NOW, rows('delete-missing'))).result).toBe('missing');

    expect(await payloads(store)).toEqual([
      { what: 'put', bucket: 'b', key: 'k1', hash: 'Fone' },
      { what: 'replace', bucket: 'b', key: 'k1', hash: 'Ftwo' },
      { what: 'copy', bucket: 'b', key: 'k2', hash: 'Ftwo' },
      { what: 'move', bucket: 'b', key: 'k3', hash: 'Ftwo' },
      { what: 'update', bucket: 'b', key: 'k3', hash: 'Ftwo' },
      { what: 'delete', bucket: 'b', key: 'k1', hash: 'Ftwo' },
    ]);
    // Written waiting, claimable by the delivery worker.
    const claimed = await store.events.claim(Date.now());
    expect(claimed?.state).toBe('running');
  });
});
