/**
 * The durable queues shared by two processes on one database — two cluster nodes on PostgreSQL, two worker
 * processes on one SQLite file: concurrent claims take every row exactly once (jobs, async-fetch tasks, outbox
 * events), a dead owner's running rows (no process lease) are taken back by the other and only those, a lease
 * raced for by 10 callers has exactly one holder, and a write through one store moves the other's wake-up
 * counter (MetaStore.dataVersion).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { processLease } from '../../src/ports/leases.js';
import type { MetaStore } from '../../src/ports/meta.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';
import { commitEvents, outboxEntry, until } from '../helpers/queue-fixtures.js';

const kinds = metaStoreKinds();

const ROWS = 200;
/** Claim loops per store running at once. */
const CLAIMERS = 6;

const ids = (prefix: string, n = ROWS) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);

const newJob = (id: string, pipeline = 'p') => ({
  id,
  accessKey: 'ak',
  bucket: 'b',
  key: id,
  fops: 'imageInfo',
  pipeline,
  type: 0,
  force: false,
  reqId: 'r',
  taskFrom: 'pfop',
  createdMs: 1,
});

/** Runs `claim` until it finds nothing; the ids it got. */
async function drain(claim: () => Promise<{ id: string } | undefined>): Promise<string[]> {
  const got: string[] = [];
  for (let row = await claim(); row; row = await claim()) got.push(row.id);
  return got;
}

/** CLAIMERS claim loops on each store at once; every id claimed, in order. */
async function claimAll(stores: MetaStore[], claim: (s: MetaStore) => Promise<{ id: string } | undefined>): Promise<string[]> {
  const loops = stores.flatMap((s) => Array.from({ length: CLAIMERS }, () => drain(() => claim(s))));
  return (await Promise.all(loops)).flat().sort();
}

describe.each(kinds.names)('two processes on one %s database', (kind) => {
  let a: MetaStore;
  let b: MetaStore;
  beforeEach(async () => {
    [a, b] = (await kinds.fresh(kind, 2, ['host:1:node-a', 'host:2:node-b'])) as [MetaStore, MetaStore];
    if (kind === 'sqlite') await a.createBucket({ name: 'b', region: 'z0', private: false, ctime: 0, owner: 'ak', settings: {} });
  });

  it(`claim ${ROWS} async-fetch tasks concurrently: each exactly once`, async () => {
    const all = ids('t');
    await Promise.all(all.map((id) => a.fetchTasks.enqueue({ id, accessKey: 'ak', request: '{}', createdMs: 1 })));
    expect(await claimAll([a, b], (s) => s.fetchTasks.claim(10))).toEqual(all);
    for (const id of [all[0]!, all[ROWS - 1]!]) expect(await b.fetchTasks.get(id)).toMatchObject({ state: 'running', attempts: 1 });
    expect(await a.fetchTasks.nextRunMs()).toBeUndefined();
  });

  it(`claim ${ROWS} jobs of two pipelines concurrently: each exactly once`, async () => {
    const all = ids('j');
    await Promise.all(all.map((id, i) => a.jobs.enqueue(newJob(id, i % 2 === 0 ? 'p' : 'q'))));
    const claimed = await claimAll([a, b], async (s) => (await s.jobs.claim('p', 10)) ?? s.jobs.claim('q', 10));
    expect(claimed).toEqual(all);
    expect(await a.jobs.depth()).toEqual({ waiting: 0, running: ROWS, notifying: 0 });
    expect((await b.jobs.list({}, undefined, ROWS)).jobs.every((j) => j.attempts === 1 && j.code === 2)).toBe(true);
  });

  it(`claim ${ROWS} outbox events concurrently: each exactly once`, async () => {
    const all = ids('e');
    await Promise.all(all.map((id) => commitEvents(kind, a, outboxEntry(id), () => [{ id, payload: '{}', createdMs: 1 }])));
    expect(await claimAll([a, b], (s) => s.events.claim(10))).toEqual(all);
    expect((await a.events.recent(ROWS)).every((e) => e.state === 'running' && e.attempts === 1)).toBe(true);
  });

  it("a dead owner's running rows are taken back by the other process, never a live one's", async () => {
    await a.leases.acquire(processLease(a.owner), a.owner, 60_000, 0);
    await b.leases.acquire(processLease(b.owner), b.owner, 60_000, 0);
    for (const id of ids('t', 10)) await a.fetchTasks.enqueue({ id, accessKey: 'ak', request: '{}', createdMs: 1 });
    for (const id of ids('j', 10)) await a.jobs.enqueue(newJob(id));
    for (const id of ids('e', 10)) await commitEvents(kind, a, outboxEntry(id), () => [{ id, payload: '{}', createdMs: 1 }]);
    // Each claims half of everything, concurrently.
    const half = (s: MetaStore) =>
      Promise.all([
        Promise.all(Array.from({ length: 5 }, () => s.fetchTasks.claim(10))),
        Promise.all(Array.from({ length: 5 }, () => s.jobs.claim('p', 10))),
        Promise.all(Array.from({ length: 5 }, () => s.events.claim(10))),
      ]);
    const [ofA, ofB] = await Promise.all([half(a), half(b)]);
    const idsOf = (rows: Array<{ id: string } | undefined>) => rows.map((r) => r?.id ?? 'none').sort();
    expect(await a.fetchTasks.requeueAbandoned(20)).toBe(0); // both alive
    expect(await b.jobs.requeueAbandoned(20)).toBe(0);

    // A dies: its process lease is dropped (workers/recovery.ts); B takes back exactly A's rows.
    await b.leases.releaseAll(a.owner);
    expect(await b.fetchTasks.requeueAbandoned(30)).toBe(5);
    expect(await b.jobs.requeueAbandoned(30)).toBe(5);
    expect(await b.events.requeueAbandoned(30)).toBe(5);
    expect(await claimAll([b], (s) => s.fetchTasks.claim(30))).toEqual(idsOf(ofA[0]));
    expect(await claimAll([b], (s) => s.jobs.claim('p', 30))).toEqual(idsOf(ofA[1]));
    expect(await claimAll([b], (s) => s.events.claim(30))).toEqual(idsOf(ofA[2]));
    // A's late state changes are refused; B's own rows were never touched and end normally.
    const [taskOfA, jobOfA, eventOfA] = [ofA[0][0]!.id, ofA[1][0]!.id, ofA[2][0]!.id];
    expect(await a.fetchTasks.finish(taskOfA, 'done', '{}', 40)).toBe(false);
    expect(await a.jobs.endItems(jobOfA, '[]', 0, false, 40)).toBe(false);
    expect(await a.events.finish(eventOfA, 'done', 'x', 40)).toBe(false);
    expect(await b.fetchTasks.finish(taskOfA, 'done', '{}', 40)).toBe(true);
    expect(await b.fetchTasks.get(taskOfA)).toMatchObject({ attempts: 2, state: 'done' });
    expect(await b.fetchTasks.finish(ofB[0][0]!.id, 'done', '{}', 40)).toBe(true);
    expect(await b.jobs.get(ofB[1][0]!.id)).toMatchObject({ state: 'running', attempts: 1 });
    expect(await b.events.get(ofB[2][0]!.id)).toMatchObject({ state: 'running', attempts: 1 });
  });

  it('a lease raced for by 10 callers has exactly one holder, and so does its takeover once it lapsed', async () => {
    const owners = Array.from({ length: 10 }, (_, i) => `owner-${i}`);
    const race = (nowMs: number) => Promise.all(owners.map((o, i) => (i % 2 === 0 ? a : b).leases.acquire('sweeper', o, 1000, nowMs)));
    const first = await race(0);
    expect(first.filter(Boolean)).toHaveLength(1);
    expect(await b.leases.list('sweeper')).toEqual([
      { name: 'sweeper', owner: owners[first.indexOf(true)], expiresMs: 1000, acquiredMs: 0 },
    ]);
    const second = await race(1000);
    expect(second.filter(Boolean)).toHaveLength(1);
    const [held] = await a.leases.list('sweeper');
    expect(held).toMatchObject({ owner: owners[second.indexOf(true)], expiresMs: 2000 });
  });

  it("a write through one store moves the other's dataVersion (jobs, fetch tasks, events, pipelines)", async () => {
    const writes: Array<[string, () => Promise<unknown>]> = [
      ['a job', () => a.jobs.enqueue(newJob('j1'))],
      ['a fetch task', () => a.fetchTasks.enqueue({ id: 't1', accessKey: 'ak', request: '{}', createdMs: 1 })],
      ['an event', () => commitEvents(kind, a, outboxEntry('k1'), () => [{ id: 'e1', payload: '{}', createdMs: 1 }])],
      ['a pipeline', () => a.jobs.putPipeline('p2', 3, 1)],
    ];
    for (const [what, write] of writes) {
      const before = b.dataVersion();
      await write();
      await until(() => b.dataVersion() !== before, `B sees ${what} queued through A`);
    }
  });
});
