/**
 * Fixtures of the queue contract tests (test/unit/events.test.ts, test/contract/queue-*.test.ts, pg-wake.test.ts):
 * writing outbox events with a committed change on either MetaStore kind, and a bounded poll for effects that no
 * event announces to the test (another process's wake-up counter).
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { OutboxRows } from '../../src/ports/events.js';
import type { MetaStore, ObjectRecord } from '../../src/ports/meta.js';
import type { PgMetaStore } from '../../src/store/postgres/pg-meta-store.js';
import type { MetaStoreKind } from './meta-stores.js';

/** An entry of bucket `b` (the bucket `commitEvents` needs on SQLite). */
export function outboxEntry(key: string): ObjectRecord {
  return {
    bucket: 'b',
    key,
    blobId: `blob-${key}`,
    fsize: 1,
    hash: 'Fto5o-5ea0sNMlW_75VgGJCv2AcJ',
    md5: '',
    mimeType: 'text/plain',
    putTime: 17000000000000000n,
    type: 0,
    status: 0,
    meta: {},
  };
}

/**
 * Writes the events `rows` builds for `e` with a change that commits: a put on SQLite (bucket `e.bucket` must
 * exist); on PostgreSQL, until its entry store lands (wip/pg-core), a transaction calling `events.write` on its
 * client, as the entry changes will. Throws when the put does not create the entry.
 */
export async function commitEvents(kind: MetaStoreKind, meta: MetaStore, e: ObjectRecord, rows: OutboxRows): Promise<void> {
  if (kind === 'sqlite') {
    const { result } = await meta.commitPut(e, { insertOnly: false, nowSec: 1, events: rows });
    if (result !== 'created') throw new Error(`commitPut: ${result}`);
    return;
  }
  const pgm = meta as unknown as PgMetaStore;
  await pgm.db.tx((c) => pgm.events.write(c, rows, e));
}

/** Polls `cond` every 5 ms until it holds; fails after `timeoutMs` naming `what`. */
export async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await delay(5);
  }
}
