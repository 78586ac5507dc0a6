/**
 * The LeaseStore port (store/sql/leases.ts) on SQLite and PostgreSQL, and queue
 * ownership (workers/): a lease is taken when free, expired or already the caller's, never from a live holder;
 * renew fails once another owner took it. Queue rows record their claiming process: another process's state
 * changes of them fail, and `requeueAbandoned` takes back only rows whose owner holds no process lease. Two stores
 * on one database stand for two worker processes (or two cluster nodes).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { processLease } from '../../src/ports/leases.js';
import type { MetaStore } from '../../src/ports/meta.js';
import { processGone, type ProcessIdentity } from '../../src/workers/identity.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();

describe('process identity', () => {
  it('a process on this host is gone when its pid is; one of another host when its lease lapsed', () => {
    const self: ProcessIdentity = { owner: 'here:1:aa', tag: '1-aa', host: 'here', pid: process.pid };
    const lease = (owner: string, expiresMs: number) => ({ name: processLease(owner), owner, expiresMs, acquiredMs: 0 });
    // A pid that cannot exist (above pid_max) on this host: gone although its lease runs.
    expect(processGone(lease('here:99999999:cc', 10_000), 0, 1000, self)).toBe(true);
    // This test process's parent exists: alive until its lease lapsed, plus the grace.
    expect(processGone(lease(`here:${process.ppid}:dd`, 10_000), 10_500, 1000, self)).toBe(false);
    expect(processGone(lease(`here:${process.ppid}:dd`, 10_000), 11_000, 1000, self)).toBe(true);
    expect(processGone(lease('there:5:ee', 10_000), 9_999, 1000, self)).toBe(false);
    expect(processGone(lease('there:5:ee', 10_000), 10_000, 1000, self)).toBe(true);
  });
});

describe.each(kinds.names)('on %s', (kind) => {
  let a: MetaStore;
  let b: MetaStore;
  beforeEach(async () => {
    [a, b] = (await kinds.fresh(kind, 2, ['host:1:aa', 'host:2:bb'])) as [MetaStore, MetaStore];
  });

  it('leases: one holder at a time; taken over only after it expires; renew and release only by the holder', async () => {
    expect(await a.leases.acquire('scrubber', 'A', 1000, 0)).toBe(true);
    expect(await b.leases.acquire('scrubber', 'B', 1000, 500)).toBe(false);
    expect(await a.leases.acquire('scrubber', 'A', 1000, 600)).toBe(true); // renewed: now until 1600
    expect(await b.leases.acquire('scrubber', 'B', 1000, 1500)).toBe(false);
    expect(await b.leases.acquire('scrubber', 'B', 1000, 1600)).toBe(true);
    expect(await a.leases.renew('scrubber', 'A', 1000, 1700)).toBe(false);
    await a.leases.release('scrubber', 'A'); // not A's: nothing happens
    expect(await b.leases.renew('scrubber', 'B', 1000, 1700)).toBe(true);
    expect(await a.leases.list('scrub')).toEqual([{ name: 'scrubber', owner: 'B', expiresMs: 2700, acquiredMs: 1600 }]);
    await b.leases.acquire(processLease('B'), 'B', 1000, 1700);
    expect(await b.leases.releaseAll('B')).toBe(2);
    expect(await a.leases.list('')).toEqual([]);
  });

  const job = { accessKey: 'ak', bucket: 'b', key: 'k', fops: 'imageInfo', pipeline: 'p', type: 0, force: false, reqId: 'r', taskFrom: 'pfop', createdMs: 1 };

  it('queue ownership: only the claiming process changes a running job; requeueAbandoned spares a live owner', async () => {
    await a.leases.acquire(processLease(a.owner), a.owner, 60_000, 0);
    await b.leases.acquire(processLease(b.owner), b.owner, 60_000, 0);
    await a.jobs.enqueue({ ...job, id: 'j1' });
    expect((await a.jobs.claim('p', 2))?.id).toBe('j1');
    expect(await b.jobs.saveItems('j1', '[]', 3)).toBe(false);
    expect(await b.jobs.release('j1', 3)).toBe(false);
    expect(await b.jobs.requeueAbandoned(4)).toBe(0); // A is alive
    expect(await a.jobs.saveItems('j1', '["one"]', 5)).toBe(true);
    // A dies: its process lease is dropped (workers/recovery.ts); B takes its job back and runs it.
    await b.leases.releaseAll(a.owner);
    expect(await b.jobs.requeueAbandoned(6)).toBe(1);
    expect(await b.jobs.claim('p', 7)).toMatchObject({ id: 'j1', attempts: 2, items: '["one"]' });
    expect(await a.jobs.endItems('j1', '[]', 0, false, 8)).toBe(false); // A's late write is refused
    expect(await b.jobs.endItems('j1', '["one","two"]', 0, true, 8)).toBe(true);
    // B dies while notifying: the job loses its owner and A (registered again) notifies it.
    await a.leases.releaseAll(b.owner);
    expect(await a.jobs.claimNotifying(9)).toBeUndefined(); // still B's until the reaper runs
    await a.jobs.requeueAbandoned(9);
    expect(await a.jobs.claimNotifying(10)).toMatchObject({ id: 'j1', state: 'notifying' });
    expect(await b.jobs.finish('j1', 0, 11)).toBe(false);
    expect(await a.jobs.finish('j1', 0, 11)).toBe(true);
  });

  it('queue ownership: fetch tasks and events, the same rule', async () => {
    await a.leases.acquire(processLease(a.owner), a.owner, 60_000, 0);
    await a.fetchTasks.enqueue({ id: 't1', accessKey: 'ak', request: '{}', createdMs: 1 });
    expect((await a.fetchTasks.claim(2))?.id).toBe('t1');
    expect(await b.fetchTasks.finish('t1', 'done', '{}', 3)).toBe(false);
    expect(await b.fetchTasks.requeueAbandoned(4)).toBe(0);
    await b.leases.releaseAll(a.owner);
    expect(await b.fetchTasks.requeueAbandoned(5)).toBe(1);
    expect((await b.fetchTasks.claim(6))?.id).toBe('t1');
    expect(await a.fetchTasks.finish('t1', 'done', '{}', 7)).toBe(false);
    expect(await b.fetchTasks.finish('t1', 'done', '{}', 7)).toBe(true);
    expect(await b.events.requeueAbandoned(8)).toBe(0);
  });
});
