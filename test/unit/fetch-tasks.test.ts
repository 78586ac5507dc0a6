/**
 * The FetchTaskStore port (store/sql/fetch-tasks.ts) on SQLite and PostgreSQL:
 * queue order, `ahead`, claims, retries, release, crash recovery, conditional state changes, list pages and
 * subscriptions.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { FetchTaskStore } from '../../src/ports/fetch-tasks.js';
import type { MetaStore } from '../../src/ports/meta.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();

const task = (id: string, createdMs = 1000, accessKey = 'ak') => ({ id, accessKey, request: `{"n":"${id}"}`, createdMs });

describe.each(kinds.names)('FetchTaskStore on %s', (kind) => {
  /** Two processes sharing the database; neither holds a process lease (both count as dead for recovery). */
  let other: MetaStore;
  let store: FetchTaskStore;
  beforeEach(async () => {
    const [a, b] = await kinds.fresh(kind, 2);
    store = a!.fetchTasks;
    other = b!;
  });

  it('queues in order; ahead counts running tasks and the waiting ones before', async () => {
    expect(await store.enqueue(task('a'))).toEqual({ ahead: 0 });
    expect(await store.enqueue(task('b'))).toEqual({ ahead: 1 });
    expect((await store.claim(1000))?.id).toBe('a');
    expect(await store.enqueue(task('c'))).toEqual({ ahead: 2 }); // a running + b waiting
    expect(await store.get('c')).toMatchObject({ state: 'waiting', attempts: 0, ahead: 2, request: '{"n":"c"}' });
    expect(await store.get('a')).toMatchObject({ state: 'running', attempts: 1 });
    expect(await store.get('zzz')).toBeUndefined();
  });

  it('claims only runnable tasks, earliest nextRunMs first; retryAt postpones and keeps the result', async () => {
    await store.enqueue(task('a'));
    await store.enqueue(task('b'));
    expect(await store.claim(999)).toBeUndefined(); // not runnable before its creation time
    await store.claim(1000);
    expect(await store.retryAt('a', 5000, '{"error":"busy"}', 1100)).toBe(true);
    expect(await store.nextRunMs()).toBe(1000); // b
    expect((await store.claim(1200))?.id).toBe('b');
    expect(await store.claim(1200)).toBeUndefined();
    expect(await store.nextRunMs()).toBe(5000);
    const again = await store.claim(5000);
    expect(again).toMatchObject({ id: 'a', attempts: 2, state: 'running', result: '{"error":"busy"}' });
  });

  it('finish, retryAt and release change running tasks only; release refunds the attempt', async () => {
    await store.enqueue(task('a'));
    expect(await store.finish('a', 'done', '{}', 1)).toBe(false); // still waiting
    await store.claim(1000);
    expect(await store.release('a', 1500)).toBe(true);
    expect(await store.get('a')).toMatchObject({ state: 'waiting', attempts: 0, nextRunMs: 1500 });
    await store.claim(2000);
    expect(await store.finish('a', 'failed', '{"code":404}', 2100)).toBe(true);
    expect(await store.retryAt('a', 3000, '{}', 2200)).toBe(false);
    expect(await store.release('a', 2200)).toBe(false);
    expect(await store.get('a')).toMatchObject({ state: 'failed', result: '{"code":404}', updatedMs: 2100 });
  });

  it('requeueAbandoned puts the tasks of a dead process back (their attempt counted)', async () => {
    await store.enqueue(task('a'));
    await store.enqueue(task('b'));
    await store.claim(1000);
    await store.claim(1000);
    // The claiming process died (it holds no process lease): the other one takes its tasks back.
    store = other.fetchTasks;
    expect(await store.requeueAbandoned(3000)).toBe(2);
    expect(await store.get('a')).toMatchObject({ state: 'waiting', attempts: 1, nextRunMs: 3000 });
    expect((await store.claim(3000))?.id).toBe('a');
  });

  it('prune deletes finished tasks last updated before the cut-off, never waiting or running ones', async () => {
    await store.enqueue(task('old-done'));
    await store.enqueue(task('old-failed'));
    await store.enqueue(task('new-done'));
    await store.enqueue(task('running'));
    await store.enqueue(task('waiting'));
    for (const id of ['old-done', 'old-failed', 'new-done', 'running']) expect((await store.claim(1000))?.id).toBe(id);
    await store.finish('old-done', 'done', '{}', 2000);
    await store.finish('old-failed', 'failed', '{}', 2000);
    await store.finish('new-done', 'done', '{}', 9000);
    expect(await store.prune(5000)).toBe(2);
    expect(await store.get('old-done')).toBeUndefined();
    expect(await store.get('old-failed')).toBeUndefined();
    for (const id of ['new-done', 'running', 'waiting']) expect(await store.get(id)).toBeDefined();
  });

  it('tells subscribers about new tasks until they unsubscribe', async () => {
    let calls = 0;
    const off = store.subscribe(() => calls++);
    await store.enqueue(task('a'));
    off();
    await store.enqueue(task('b'));
    expect(calls).toBe(1);
  });

  it('lists newest first, by account, in pages', async () => {
    for (let i = 0; i < 5; i++) await store.enqueue(task(`t${i}`, 1000 + i, i < 3 ? 'ak1' : 'ak2'));
    const first = await store.list(undefined, undefined, 3);
    expect(first.tasks.map((t) => t.id)).toEqual(['t4', 't3', 't2']);
    const rest = await store.list(undefined, first.next, 3);
    expect(rest.tasks.map((t) => t.id)).toEqual(['t1', 't0']);
    expect(rest.next).toBeUndefined();
    expect((await store.list('ak1', undefined, 10)).tasks.map((t) => t.id)).toEqual(['t2', 't1', 't0']);
    expect((await store.list('ak2', undefined, 1)).tasks[0]).toMatchObject({ id: 't4', createdMs: 1004, nextRunMs: 1004 });
  });
});
