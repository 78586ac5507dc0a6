/**
 * Bucket event notifications, the pure parts and the store: rule matching (events/match.ts), the body in Kodo's
 * shape (events/body.ts), and the outbox on SQLite and PostgreSQL — written only by a change that commits, in its
 * transaction, then claimed, retried, finished, released, requeued after a crash and pruned. The entry changes
 * that write events (commitPut, copy, move, update, delete) are checked on SQLite; on PostgreSQL the write on the
 * caller's transaction is checked directly until its entry store lands (wip/pg-core).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { beijingTime, eventBody, eventMessage, EVENT_SUBJECT, type EventFacts } from '../../src/events/body.js';
import { matchingRules, ruleMatches } from '../../src/events/match.js';
import { EMITTED_EVENTS, EVENT_NAMES, isEventName } from '../../src/events/names.js';
import type { OutboxRows } from '../../src/ports/events.js';
import type { EventRule, MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import type { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';
import { commitEvents } from '../helpers/queue-fixtures.js';

const kinds = metaStoreKinds();

const rule = (name: string, events: string[], prefix = '', suffix = ''): EventRule => ({
  name,
  prefix,
  suffix,
  events,
  callbackUrls: ['http://app.example/events'],
  ctime: 0,
});

const entry = (over: Partial<ObjectRecord> = {}): ObjectRecord => ({
  bucket: 'b',
  key: 'photos/cat.jpg',
  blobId: 'blob1',
  fsize: 6,
  hash: 'FhWqsP2Lk36zuwGEFpPzXct12i-v',
  md5: '',
  mimeType: 'image/jpeg',
  putTime: 17000000000000001n,
  type: 0,
  status: 0,
  meta: {},
  ...over,
});

describe('event names', () => {
  it("accepts Kodo's names and the SDK's, emits a subset", () => {
    for (const n of ['put', 'mkfile', 'delete', 'copy', 'move', 'append', 'disable', 'enable', 'deleteMarkerCreate', 'predelete', 'restore:completed']) {
      expect(isEventName(n), n).toBe(true);
    }
    for (const n of ['Put', 'upload', 'fetch', '', 'chtype']) expect(isEventName(n), n).toBe(false);
    for (const n of EMITTED_EVENTS) expect(EVENT_NAMES).toContain(n);
    expect(EMITTED_EVENTS.has('append')).toBe(false);
  });
});

describe('rule matching', () => {
  it('needs the event named and the key within prefix and suffix', () => {
    const r = rule('jpg', ['put', 'delete'], 'photos/', '.jpg');
    expect(ruleMatches(r, 'put', 'photos/cat.jpg')).toBe(true);
    expect(ruleMatches(r, 'delete', 'photos/cat.jpg')).toBe(true);
    expect(ruleMatches(r, 'copy', 'photos/cat.jpg')).toBe(false);
    expect(ruleMatches(r, 'put', 'photos/cat.png')).toBe(false);
    expect(ruleMatches(r, 'put', 'video/cat.jpg')).toBe(false);
    expect(ruleMatches(r, 'put', 'photos/.jpg')).toBe(true);
  });

  it('empty prefix and suffix match every key; keys compare byte for byte', () => {
    const all = rule('all', ['move']);
    expect(ruleMatches(all, 'move', '')).toBe(true);
    expect(ruleMatches(all, 'move', '任何/键')).toBe(true);
    expect(ruleMatches(rule('c', ['put'], 'Photos/'), 'put', 'photos/x')).toBe(false);
  });

  it('returns the firing rules in order; none without rules', () => {
    const rules = [rule('a', ['put'], 'x'), rule('b', ['put']), rule('c', ['delete'])];
    expect(matchingRules(rules, 'put', 'xy').map((r) => r.name)).toEqual(['a', 'b']);
    expect(matchingRules(rules, 'put', 'y').map((r) => r.name)).toEqual(['b']);
    expect(matchingRules(undefined, 'put', 'y')).toEqual([]);
  });
});

describe('event body', () => {
  const facts: EventFacts = {
    id: 'ev1',
    event: 'put',
    timeMs: 1547551207786,
    rule: 'jpg',
    bucket: 'b',
    key: 'photos/cat.jpg',
    entry: entry(),
    actor: { accessKey: 'ak1', reqId: 'req1' },
  };

  it("is Kodo's envelope around a JSON message", () => {
    const outer = JSON.parse(eventBody(facts)) as Record<string, unknown>;
    expect(Object.keys(outer)).toEqual(['Message', 'Subject', 'Timestamp']);
    expect(outer.Subject).toBe(EVENT_SUBJECT);
    expect(outer.Subject).toBe('Qiniu KODO Notification');
    expect(outer.Timestamp).toBe('2019-01-15T19:20:07+08:00');
    expect(typeof outer.Message).toBe('string');
    const message = JSON.parse(outer.Message as string) as Record<string, unknown>;
    expect(Object.keys(message)).toEqual([
      'event', 'time', 'reqid', 'access_key', 'bucket', 'key', 'fsize', 'hash', 'ftype', 'mimetype', 'putTime', 'rule', 'id',
    ]);
    expect(message).toMatchObject({
      event: 'put',
      reqid: 'req1',
      access_key: 'ak1',
      bucket: 'b',
      key: 'photos/cat.jpg',
      fsize: 6,
      hash: 'FhWqsP2Lk36zuwGEFpPzXct12i-v',
      ftype: 0,
      mimetype: 'image/jpeg',
      rule: 'jpg',
      id: 'ev1',
    });
  });

  it('writes time (ns) and putTime (100 ns) as exact integers', () => {
    const text = (JSON.parse(eventBody(facts)) as { Message: string }).Message;
    expect(text).toContain('"time":1547551207786000000,');
    expect(text).toContain('"putTime":17000000000000001,');
  });

  it('names the target of a copy or move, the restore expiry, and leaves out an unknown actor', () => {
    const m = eventMessage({ ...facts, event: 'move', dest: { bucket: 'c', key: 'k2' }, actor: undefined } as EventFacts);
    expect(m).toMatchObject({ bucket: 'b', key: 'photos/cat.jpg', dest_bucket: 'c', dest_key: 'k2' });
    expect(m).not.toHaveProperty('access_key');
    expect(m).not.toHaveProperty('reqid');
    const r = eventMessage({ ...facts, event: 'restore:completed', entry: entry({ type: 2, restoreUntil: 1548000000 }) });
    expect(r).toMatchObject({ ftype: 2, restore_expiration: beijingTime(1548000000 * 1000) });
    expect(beijingTime(0)).toBe('1970-01-01T08:00:00+08:00');
  });

  it('reports the storage class the lifecycle reached', () => {
    const m = eventMessage({ ...facts, entry: entry({ transitions: { toIA: 1 } }) });
    expect(m.ftype).toBe(1);
  });
});

describe('the outbox on SQLite', () => {
  let dir = '';
  let meta: SqliteMetaStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-events-'));
    meta = new SqliteMetaStore(join(dir, 'meta.db'));
    await meta.createBucket({ name: 'b', region: 'z0', private: false, ctime: 0, owner: 'ak', settings: {} });
  });
  afterEach(async () => {
    await meta.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A builder recording the entries it was called with; one event per call. */
  function builder(seen: ObjectRecord[], prefix = 'e'): OutboxRows {
    return (e) => {
      seen.push(e);
      return [{ id: `${prefix}${seen.length}`, payload: JSON.stringify({ key: e.key, hash: e.hash }), createdMs: 1000 }];
    };
  }
  const opts = { insertOnly: false, nowSec: 1 };

  it('writes the events of a committed put with the committed entry, and none when nothing commits', async () => {
    const seen: ObjectRecord[] = [];
    expect((await meta.commitPut(entry(), { ...opts, events: builder(seen) })).result).toBe('created');
    expect(seen.map((e) => e.key)).toEqual(['photos/cat.jpg']);
    // Not committed: a missing bucket, insertOnly on another hash, insertOnly on the same hash.
    expect((await meta.commitPut(entry({ bucket: 'nope' }), { ...opts, events: builder(seen) })).result).toBe('no-bucket');
    expect((await meta.commitPut(entry({ hash: 'other', blobId: 'b2' }), { ...opts, insertOnly: true, events: builder(seen) })).result).toBe('exists');
    expect((await meta.commitPut(entry({ blobId: 'b3' }), { ...opts, insertOnly: true, events: builder(seen) })).result).toBe('identical');
    expect(seen).toHaveLength(1);
    const ev = await meta.events.get('e1');
    expect(ev).toMatchObject({ state: 'waiting', attempts: 0, createdMs: 1000, nextRunMs: 1000 });
    expect(JSON.parse(ev?.payload ?? '')).toEqual({ key: 'photos/cat.jpg', hash: 'FhWqsP2Lk36zuwGEFpPzXct12i-v' });
    expect((await meta.events.recent(10)).map((e) => e.id)).toEqual(['e1']);
  });

  it('writes delete, copy, move and update events only when they commit, each with the entry concerned', async () => {
    await meta.commitPut(entry(), opts);
    const seen: ObjectRecord[] = [];
    const e = builder(seen);
    expect((await meta.copyObject({ bucket: 'b', key: 'photos/cat.jpg' }, { bucket: 'b', key: 'copy' }, { force: false, nowSec: 1, putTime: 5n, events: e })).result).toBe('copied');
    expect((await meta.copyObject({ bucket: 'b', key: 'photos/cat.jpg' }, { bucket: 'b', key: 'copy' }, { force: false, nowSec: 1, putTime: 5n, events: e })).result).toBe('exists');
    expect((await meta.moveObject({ bucket: 'b', key: 'copy' }, { bucket: 'b', key: 'moved' }, { force: false, nowSec: 1, events: e })).result).toBe('moved');
    expect((await meta.moveObject({ bucket: 'b', key: 'gone' }, { bucket: 'b', key: 'x' }, { force: false, nowSec: 1, events: e })).result).toBe('no-source');
    expect((await meta.updateObject('b', 'moved', 1, (r) => ({ ...r, status: 1 }), e)).result).toBe('updated');
    await expect(
      meta.updateObject('b', 'moved', 1, () => {
        throw new Error('abort');
      }, e),
    ).rejects.toThrow('abort');
    expect((await meta.deleteObject('b', 'moved', 1, e)).result).toBe('deleted');
    expect((await meta.deleteObject('b', 'moved', 1, e)).result).toBe('missing');
    expect(seen.map((r) => [r.key, r.putTime, r.status])).toEqual([
      ['copy', 5n, 0],
      ['moved', 5n, 0],
      ['moved', 5n, 1],
      ['moved', 5n, 1],
    ]);
    expect((await meta.events.recent(10)).map((r) => r.id)).toEqual(['e4', 'e3', 'e2', 'e1']);
  });

  it('rolls the events back with a change that fails inside its transaction', async () => {
    await meta.commitPut(entry(), opts);
    const failing: OutboxRows = () => [
      { id: 'dup', payload: '{}', createdMs: 1 },
      { id: 'dup', payload: '{}', createdMs: 1 }, // UNIQUE violation after the entry was written
    ];
    await expect(meta.deleteObject('b', 'photos/cat.jpg', 1, failing)).rejects.toThrow();
    expect(await meta.getObject('b', 'photos/cat.jpg')).toBeDefined(); // the deletion rolled back too
    expect(await meta.events.recent(10)).toEqual([]);
  });

  it('tells subscribers after the transaction, once per burst', async () => {
    let told = 0;
    const off = meta.events.subscribe(() => told++);
    const burst = Promise.all([
      meta.commitPut(entry(), { ...opts, events: builder([]) }),
      meta.commitPut(entry({ key: 'k2' }), { ...opts, events: builder([], 'f') }),
    ]);
    expect(told).toBe(0); // not inside the (synchronous) transactions
    await burst;
    await new Promise((r) => setImmediate(r));
    expect(told).toBe(1);
    off();
    await meta.commitPut(entry({ key: 'k3' }), { ...opts, events: builder([], 'g') });
    await new Promise((r) => setImmediate(r));
    expect(told).toBe(1);
  });
});

describe.each(kinds.names)('the outbox on %s', (kind) => {
  let meta: MetaStore;
  beforeEach(async () => {
    [meta] = (await kinds.fresh(kind)) as [MetaStore];
    if (kind === 'sqlite') await meta.createBucket({ name: 'b', region: 'z0', private: false, ctime: 0, owner: 'ak', settings: {} });
  });

  it('claims due events oldest first, retries later, finishes, releases, requeues and prunes', async () => {
    const ids = ['a', 'b', 'c'];
    for (const [i, id] of ids.entries()) {
      await commitEvents(kind, meta, entry({ key: id }), () => [{ id, payload: '{}', createdMs: 1000 + i }]);
    }
    const o = meta.events;
    expect(await o.claim(999)).toBeUndefined();
    expect(await o.claim(1000)).toMatchObject({ id: 'a', state: 'running', attempts: 1 });
    expect(await o.retryAt('a', 5000, 'HTTP 500', 1100)).toBe(true);
    expect(await o.retryAt('a', 6000, 'again', 1100)).toBe(false); // not running any more
    expect(await o.nextRunMs()).toBe(1001);
    expect((await o.claim(2000))?.id).toBe('b');
    expect((await o.claim(2000))?.id).toBe('c');
    expect(await o.claim(2000)).toBeUndefined();
    expect(await o.nextRunMs()).toBe(5000);
    expect(await o.finish('b', 'done', 'delivered', 2100)).toBe(true);
    expect(await o.release('c', 2100)).toBe(true);
    expect(await o.get('c')).toMatchObject({ state: 'waiting', attempts: 0, nextRunMs: 2100 });
    expect(await o.claim(5000)).toMatchObject({ id: 'c', attempts: 1 });
    expect(await o.claim(5000)).toMatchObject({ id: 'a', attempts: 2, result: 'HTTP 500' });
    // A crash: both stay running until the next start puts them back.
    expect(await o.requeueAbandoned(6000)).toBe(2);
    expect(await o.get('a')).toMatchObject({ state: 'waiting', attempts: 2, nextRunMs: 6000 });
    expect((await o.claim(6000))?.id).toBe('a');
    expect((await o.claim(6000))?.id).toBe('c');
    expect(await o.finish('c', 'failed', 'given up', 6100)).toBe(true);
    expect(await o.finish('c', 'done', 'late', 6100)).toBe(false);
    expect(await o.prune(2100)).toBe(0);
    expect(await o.prune(2101)).toBe(1); // b, done at 2100; c failed later; a running
    expect(await o.prune(10_000)).toBe(1);
    expect((await o.recent(10)).map((e) => e.id)).toEqual(['a']);
  });
});

describe('the outbox on PostgreSQL: the write on the caller\'s transaction', () => {
  let pgm: PgMetaStore;
  beforeEach(async () => {
    pgm = (await kinds.fresh('postgres'))[0] as unknown as PgMetaStore;
  });
  const turn = () => new Promise((r) => setImmediate(r));

  it('commits with the transaction; subscribers are told once, after the commit', async () => {
    let told = 0;
    const off = pgm.events.subscribe(() => told++);
    await pgm.db.tx(async (c) => {
      await pgm.events.write(c, () => [{ id: 'e1', payload: '{"n":1}', createdMs: 7 }, { id: 'e2', payload: '{}', createdMs: 7 }], entry());
      await turn();
      await turn();
      expect(told).toBe(0); // not before the commit
      expect(await pgm.events.get('e1')).toBeUndefined(); // other connections do not see it yet
    });
    expect(told).toBe(0); // told on the next turn, once for every commit until then
    await turn();
    expect(told).toBe(1);
    expect(await pgm.events.get('e1')).toMatchObject({ id: 'e1', payload: '{"n":1}', state: 'waiting', attempts: 0, createdMs: 7, nextRunMs: 7 });
    expect((await pgm.events.recent(10)).map((e) => e.id)).toEqual(['e2', 'e1']);
    off();
  });

  it('rolls back with the transaction (nobody told); a duplicate id fails the transaction; no rows, no write', async () => {
    let told = 0;
    pgm.events.subscribe(() => told++);
    await expect(
      pgm.db.tx(async (c) => {
        await pgm.events.write(c, () => [{ id: 'x', payload: '{}', createdMs: 1 }], entry());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await expect(
      pgm.db.tx((c) => pgm.events.write(c, () => [{ id: 'dup', payload: '{}', createdMs: 1 }, { id: 'dup', payload: '{}', createdMs: 1 }], entry())),
    ).rejects.toThrow();
    await pgm.db.tx(async (c) => {
      await pgm.events.write(c, undefined, entry());
      await pgm.events.write(c, () => [], entry());
    });
    await turn();
    expect(told).toBe(0);
    expect(await pgm.events.recent(10)).toEqual([]);
  });
});
