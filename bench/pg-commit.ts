/**
 * Micro-bench of the PostgreSQL MetaStore's entry changes (issue 14 follow-up): one PgMetaStore on a throw-away
 * PostgreSQL (test/helpers/pg-server.ts, production settings: fsync on), no HTTP. Measures
 * - `commitPut` of a 4 KiB inline object under distinct keys: `n` one after the other (latency: round trips), then
 *   `n` with 32 in flight (throughput: locks and WAL flushes shared);
 * - `getBucketAndObject` + the inline bytes of one such entry (the download read), `n` one after the other;
 * - `deleteObject` of the entries, 32 in flight.
 * Also counts the statements the server ran per commitPut (pg_stat_statements is not needed: `xact_commit` and
 * the client's query count).
 *
 * Standalone: `npx tsx bench/pg-commit.ts [--n=2000]`. Prints JSON.
 */
import { randomBytes } from 'node:crypto';
import type { ObjectRecord } from '../src/ports/meta.js';
import { newInlineBlobId } from '../src/ports/inline-blob-id.js';
import { PgMetaStore } from '../src/store/postgres/pg-meta-store.js';
import { startPgServer } from '../test/helpers/pg-server.js';

const n = Number(/--n=(\d+)/.exec(process.argv.slice(2).join(' '))?.[1] ?? 2000);
const BUCKET = 'bench';
const NOW = Math.floor(Date.now() / 1000);
const data = randomBytes(4096);

function rec(key: string): ObjectRecord {
  return {
    bucket: BUCKET,
    key,
    blobId: newInlineBlobId(),
    fsize: data.length,
    hash: `F${key}`,
    md5: 'abc',
    mimeType: 'application/octet-stream',
    putTime: BigInt(Date.now()) * 10_000n,
    type: 0,
    status: 0,
    meta: {},
  };
}

/** Runs `count` calls of `op(i)` with `inFlight` at a time; ops per second. */
async function measure(count: number, inFlight: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await op(next++);
    }),
  );
  return Math.round(count / ((performance.now() - t0) / 1000));
}

/** The number of queries the store's pool sends while `fn` runs (wrapping pg.Client#query). */
async function countQueries(store: PgMetaStore, fn: () => Promise<unknown>): Promise<number> {
  const c = await store.db.pool.connect();
  const proto = Object.getPrototypeOf(c) as { query: (...a: unknown[]) => unknown };
  c.release();
  const orig = proto.query;
  let count = 0;
  proto.query = function (this: unknown, ...a: unknown[]) {
    count++;
    return orig.apply(this, a);
  };
  try {
    await fn();
  } finally {
    proto.query = orig;
  }
  return count;
}

const pg = await startPgServer();
try {
  const store = await PgMetaStore.open(await pg.createDatabase());
  try {
    await store.createBucket({ name: BUCKET, region: 'z0', private: false, ctime: NOW, owner: 'bench', nrop: false, settings: {} });
    const put = (key: string) => store.commitPut(rec(key), { insertOnly: false, nowSec: NOW, inline: data });
    await measure(200, 8, (i) => put(`warm/${i}`));
    const queriesPerPut = await countQueries(store, () => put('count/1'));
    const queriesPerGet = await countQueries(store, async () => {
      const { object } = await store.getBucketAndObject(BUCKET, 'count/1');
      if (object && object.inline === undefined) await store.inlineBlob(object.blobId);
    });
    const sequential = await measure(n, 1, (i) => put(`seq/${i}`));
    const parallel = await measure(n, 32, (i) => put(`par/${i}`));
    const get = await measure(n, 1, async () => {
      const { object } = await store.getBucketAndObject(BUCKET, 'seq/1');
      if (object && object.inline === undefined) await store.inlineBlob(object.blobId);
    });
    const del = await measure(n, 32, (i) => store.deleteObject(BUCKET, `par/${i}`, NOW));
    console.log(
      JSON.stringify(
        {
          n,
          queriesPerPut,
          queriesPerGet,
          commitPutSequentialPerSec: sequential,
          commitPut32InFlightPerSec: parallel,
          getSequentialPerSec: get,
          delete32InFlightPerSec: del,
        },
        null,
        2,
      ),
    );
  } finally {
    await store.close();
  }
} finally {
  await pg.stop();
}
