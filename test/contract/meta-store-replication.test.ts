/**
 * The replication store (ports/replication.ts) on every MetaStore implementation: marks written inside entry
 * changes (the `replicate` marks of an `events` builder) only when the change commits, one row per (rule, key)
 * coalescing later changes, claims, completion that notices a change made while the row ran, FAILED kept while
 * retried, per-rule stats, rows of a dead process taken back, and targets.
 */
import { describe, expect, it } from 'vitest';
import type { OutboxRows } from '../../src/ports/events.js';
import type { MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import { replicationStatus } from '../../src/ports/replication.js';
import { metaStoreKinds, type MetaStoreKind } from '../helpers/meta-stores.js';
import { bucketRec, entry, NOW } from './meta-store.contract.js';

const kinds = metaStoreKinds();

/** A builder writing no event and one replication mark of rule `r` for the entry's key. */
const marks = (atMs: number): OutboxRows =>
  Object.assign(() => [], { replicate: (e: ObjectRecord) => [{ rule: 'r', bucket: e.bucket, key: e.key, size: e.fsize, atMs }] });

describe.each(kinds.names)('replication outbox and targets: %s', (kind: MetaStoreKind) => {
  it('marks in the change transaction, coalesces per key, claims and completes', async () => {
    const [s] = await kinds.fresh(kind);
    const store = s as MetaStore;
    const repl = store.replication;
    await store.createBucket(bucketRec('b'));
    await store.commitPut(entry('b', 'k1', { hash: 'Fone', fsize: 10 }), { insertOnly: false, nowSec: NOW, events: marks(1000) });
    await store.commitPut(entry('b', 'k1', { hash: 'Ftwo', fsize: 20 }), { insertOnly: false, nowSec: NOW, events: marks(2000) });
    let rows = await repl.statusOf('b', 'k1');
    expect(rows).toMatchObject([{ rule: 'r', state: 'waiting', gen: 2, size: 20, createdMs: 1000, failed: false }]);
    expect(replicationStatus(rows)).toBe('PENDING');

    const a = await repl.claim(3000);
    expect(a).toMatchObject({ key: 'k1', state: 'running', attempts: 1 });
    // A change while it runs: completion puts it back to waiting.
    await store.deleteObject('b', 'k1', NOW, marks(3100));
    await repl.complete(a!, 'copied', 'id etag', false, 3200);
    expect(await repl.statusOf('b', 'k1')).toMatchObject([{ state: 'waiting', gen: 3 }]);
    const again = await repl.claim(3300);
    expect(again?.key).toBe('k1');
    await repl.complete(again!, 'deleted', undefined, true, 3400);
    expect(await repl.statusOf('b', 'k1')).toEqual([]);

    await store.commitPut(entry('b', 'k2', {}), { insertOnly: false, nowSec: NOW, events: marks(3500) });
    // Refused: nothing marked (the row keeps its first change's time).
    expect((await store.commitPut(entry('b', 'k2', { hash: 'Fother' }), { insertOnly: true, nowSec: NOW, events: marks(3600) })).result).toBe('exists');
    expect(await repl.statusOf('b', 'k2')).toMatchObject([{ gen: 1, createdMs: 3500 }]);
    // k2: fails twice, FAILED, kept FAILED while claimed again, COMPLETED once copied.
    const b1 = await repl.claim(4000);
    expect(b1?.key).toBe('k2');
    await repl.retryAt(b1!, 4100, 'SignatureDoesNotMatch (HTTP 403)', false, 4000);
    expect(await repl.claim(4050)).toBeUndefined();
    expect(await repl.nextRunMs()).toBe(4100);
    const b2 = await repl.claim(4100);
    await repl.retryAt(b2!, 4200, 'SignatureDoesNotMatch (HTTP 403)', true, 4100);
    expect(replicationStatus(await repl.statusOf('b', 'k2'))).toBe('FAILED');
    const stats = await repl.stats(4150);
    expect(stats).toMatchObject([{ bucket: 'b', rule: 'r', pending: 1, failed: 1, completed: 0, lastError: 'SignatureDoesNotMatch (HTTP 403)' }]);
    const b3 = await repl.claim(4200);
    expect(b3?.attempts).toBe(3);
    expect(replicationStatus(await repl.statusOf('b', 'k2'))).toBe('FAILED');
    await repl.complete(b3!, 'copied', 'id etag', false, 4300);
    rows = await repl.statusOf('b', 'k2');
    expect(rows).toMatchObject([{ state: 'done', copied: 'id etag', failed: false }]);
    expect(replicationStatus(rows)).toBe('COMPLETED');
    expect(await repl.backlog()).toBe(0);

    // Marks outside a change (initial sync), a claim of a process without a lease taken back, rule dropped.
    await repl.mark([{ rule: 'r2', bucket: 'b', key: 'x', size: 5, atMs: 5000 }]);
    const c = await repl.claim(5000);
    expect(c?.rule).toBe('r2');
    expect(await repl.requeueAbandoned(5100)).toBe(1);
    expect(await repl.statusOf('b', 'x')).toMatchObject([{ state: 'waiting' }]);
    expect(await repl.dropRule('b', 'r2')).toBe(1);
  });

  it('keeps targets', async () => {
    const [s] = await kinds.fresh(kind);
    const repl = (s as MetaStore).replication;
    const t = {
      arn: 'arn:granary:replication::x:dst',
      sourceBucket: 'b',
      endpoint: 'https://s3.example.com',
      region: 'us-east-1',
      bucket: 'dst',
      accessKey: 'AK',
      secretKey: 'SK',
      pathStyle: true,
      bandwidth: 1024,
      createdMs: 1,
    };
    await repl.putTarget(t);
    expect(await repl.getTarget(t.arn)).toEqual(t);
    expect(await repl.listTargets('b')).toEqual([t]);
    expect(await repl.listTargets('other')).toEqual([]);
    expect(await repl.deleteTarget(t.arn)).toBe(true);
    expect(await repl.getTarget(t.arn)).toBeUndefined();
  });
});
