/**
 * The one task queue (ports/tasks.ts) on SQLite and PostgreSQL: pfop jobs and async-fetch tasks are two kinds of
 * one table with one life cycle — a dead owner's running job, notifying job and fetch task are all taken back by
 * ONE requeueAbandoned call (a live owner's never), the depth is counted by kind, and each kind-specific view
 * (JobQueue, FetchTaskStore) sees, claims, ends, lists and prunes only its own kind.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { processLease } from '../../src/ports/leases.js';
import type { NewJob } from '../../src/ports/job-queue.js';
import type { MetaStore } from '../../src/ports/meta.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();

const job = (id: string): NewJob => ({
  id,
  accessKey: 'ak',
  bucket: 'b',
  key: 'k',
  fops: 'imageInfo',
  notifyUrl: 'http://n/',
  pipeline: 'p',
  type: 0,
  force: false,
  reqId: 'r',
  taskFrom: 'pfop',
  createdMs: 1,
});
const fetchTask = (id: string) => ({ id, accessKey: 'ak', request: '{}', createdMs: 1 });

describe.each(kinds.names)('one task queue on %s', (kind) => {
  let a: MetaStore;
  let b: MetaStore;
  beforeEach(async () => {
    [a, b] = (await kinds.fresh(kind, 2, ['host:1:node-a', 'host:2:node-b'])) as [MetaStore, MetaStore];
    await a.leases.acquire(processLease(a.owner), a.owner, 60_000, 0);
    await b.leases.acquire(processLease(b.owner), b.owner, 60_000, 0);
  });

  it("one requeueAbandoned call takes back a dead owner's running job, notifying job and fetch task", async () => {
    await a.jobs.enqueue(job('j-run'));
    await a.jobs.enqueue(job('j-notify'));
    await a.fetchTasks.enqueue(fetchTask('t-run'));
    await b.fetchTasks.enqueue(fetchTask('t-live'));
    expect((await a.jobs.claim('p', 2))?.id).toBe('j-run');
    expect((await a.jobs.claim('p', 2))?.id).toBe('j-notify');
    expect(await a.jobs.endItems('j-notify', '[]', 0, true, 3)).toBe(true);
    expect((await a.fetchTasks.claim(2))?.id).toBe('t-run');
    expect((await b.fetchTasks.claim(2))?.id).toBe('t-live');
    expect(await b.tasks.depth()).toEqual({
      job: { waiting: 0, running: 1, notifying: 1 },
      fetch: { waiting: 0, running: 2, notifying: 0 },
    });
    expect(await b.tasks.requeueAbandoned(4)).toEqual({ job: 0, fetch: 0 }); // both alive

    // A dies (workers/recovery.ts drops its leases): B takes back A's tasks of both kinds at once, not its own.
    await b.leases.releaseAll(a.owner);
    expect(await b.tasks.requeueAbandoned(5)).toEqual({ job: 1, fetch: 1 });
    expect(await b.tasks.requeueAbandoned(6)).toEqual({ job: 0, fetch: 0 });
    expect(await b.tasks.depth()).toEqual({
      job: { waiting: 1, running: 0, notifying: 1 },
      fetch: { waiting: 1, running: 1, notifying: 0 },
    });
    expect(await b.jobs.get('j-run')).toMatchObject({ state: 'waiting', code: 1, attempts: 1 });
    expect(await b.fetchTasks.get('t-run')).toMatchObject({ state: 'waiting', attempts: 1, nextRunMs: 5 });
    expect(await b.fetchTasks.get('t-live')).toMatchObject({ state: 'running', attempts: 1 });
    // B runs them again; the notifying job (owner gone) is B's to notify; A's late changes are refused.
    expect(await b.jobs.claim('p', 7)).toMatchObject({ id: 'j-run', attempts: 2 });
    expect(await b.fetchTasks.claim(7)).toMatchObject({ id: 't-run', attempts: 2 });
    expect(await b.jobs.claimNotifying(7)).toMatchObject({ id: 'j-notify', state: 'notifying' });
    expect(await a.jobs.finish('j-notify', 0, 8)).toBe(false);
    expect(await a.fetchTasks.finish('t-run', 'done', '{}', 8)).toBe(false);
    expect(await b.jobs.finish('j-notify', 4, 8)).toBe(true);
    expect(await b.jobs.get('j-notify')).toMatchObject({ state: 'done', code: 4 });
  });

  it('each view sees, claims, ends, lists and prunes only its own kind', async () => {
    await a.jobs.enqueue(job('j1'));
    await a.fetchTasks.enqueue(fetchTask('t1'));
    expect(await a.jobs.get('t1')).toBeUndefined();
    expect(await a.fetchTasks.get('j1')).toBeUndefined();
    expect((await a.jobs.list({}, undefined, 10)).jobs.map((j) => j.id)).toEqual(['j1']);
    expect((await a.fetchTasks.list(undefined, undefined, 10)).tasks.map((t) => t.id)).toEqual(['t1']);
    expect(await a.jobs.pipelinesWithWaitingJobs()).toEqual(['p']);
    // A fetch claim takes the fetch task only, a job claim the job only; neither view ends the other's rows.
    expect((await a.fetchTasks.claim(10))?.id).toBe('t1');
    expect(await a.fetchTasks.claim(10)).toBeUndefined();
    expect((await a.jobs.claim('p', 10))?.id).toBe('j1');
    expect(await a.fetchTasks.finish('j1', 'done', '{}', 11)).toBe(false);
    expect(await a.fetchTasks.release('j1', 11)).toBe(false);
    expect(await a.jobs.saveItems('t1', '[]', 11)).toBe(false);
    expect(await a.jobs.release('t1', 11)).toBe(false);
    expect(await a.jobs.endItems('j1', '[]', 3, false, 12)).toBe(true);
    expect(await a.fetchTasks.finish('t1', 'failed', '{}', 12)).toBe(true);
    expect(await a.jobs.get('j1')).toMatchObject({ state: 'done', code: 3 });
    expect((await a.jobs.list({ code: 3 }, undefined, 10)).jobs.map((j) => j.id)).toEqual(['j1']);
    expect((await a.jobs.list({ code: 0 }, undefined, 10)).jobs).toEqual([]);
    // Pruning finished fetch tasks keeps finished jobs (the console lists them).
    expect(await a.fetchTasks.prune(100)).toBe(1);
    expect(await a.jobs.get('j1')).toMatchObject({ state: 'done' });
    expect(await a.tasks.depth()).toEqual({
      job: { waiting: 0, running: 0, notifying: 0 },
      fetch: { waiting: 0, running: 0, notifying: 0 },
    });
  });
});
