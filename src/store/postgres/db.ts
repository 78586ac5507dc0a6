/**
 * The PostgreSQL connection of the cluster MetaStore (GRANARY_METADATA=postgres://…): one `pg` Pool, transactions
 * with retries, the advisory locks that give entry changes the same outcomes as SQLite's one writer, and the
 * LISTEN connection of wake-ups.
 *
 * Isolation: READ COMMITTED, with explicit locks (never SERIALIZABLE: every commit of a bucket would conflict on
 * its usage counters and retry). What SQLite gets from its single writer, PostgreSQL gets from advisory locks
 * taken at the start of a transaction, always in the same order (bucket locks, then entry locks sorted by
 * (bucket, key) in byte order), so two transactions never wait on each other in a cycle:
 * - `lockBuckets(c, names, 'shared')` by every change of entries in a bucket; `'exclusive'` by dropBucket,
 *   settings changes, and entry changes of a bucket with a quota (the quota check must see every other change).
 * - `lockEntries(c, [[bucket, key], …])` by every change of entries: two changes of one key run one after the
 *   other; changes of different keys run in parallel (PostgreSQL then shares one WAL flush among their commits).
 * A hash collision between two locks only makes two transactions wait for each other, never a wrong outcome.
 * Serialization failures and deadlocks (SQLSTATE 40001, 40P01) are retried by `tx` with a short random back-off.
 *
 * Failures: nothing waits forever (GRANARY_PG_TIMEOUT, `timeoutSeconds`): a connection is given up after
 * min(10 s, the timeout); the server cancels a statement (lock waits included) after the timeout and ends a session
 * left idle inside a transaction (a frozen node must not hold its locks) after it; a statement without any answer
 * (the server frozen) is abandoned 2 s after that and its connection dropped. Errors meaning the database failed or
 * is unreachable are thrown as `PgUnavailable` (pg-errors.ts: 599 `metadataRemote` for the client).
 *
 * Numbers: `int8` columns are parsed to `bigint` (put_time is 100-ns units and exceeds 2^53); callers convert
 * sizes with Number(). `bytea` is a Buffer.
 */
import pg from 'pg';
import { fromPg, unavailableReason } from './pg-errors.js';

/** A connection inside a transaction (or the pool itself for single statements). */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/** Parsers of this pool: int8 → bigint, numeric → number (sums of int8 columns). */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20) return (v: string) => BigInt(v);
    if (oid === 1700) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

/** SQLSTATEs of a transaction that may succeed when run again. */
const RETRYABLE = new Set(['40001', '40P01']);

/** Attempts of a transaction that keeps failing with a retryable error. */
const MAX_ATTEMPTS = 20;

export interface PgDbOptions {
  /** Connections of this process's pool (GRANARY_PG_POOL, default 16). */
  max?: number;
  /** Name shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * GRANARY_PG_TIMEOUT, seconds (default 30): statement and idle-in-transaction timeout; connecting times out after
   * min(10, this) seconds; a statement with no answer at all is abandoned 2 s after it.
   */
  timeoutSeconds?: number;
}

/** Defaults of PgDbOptions. */
export const PG_DEFAULTS = { max: 16, timeoutSeconds: 30 } as const;

/** Longest connection attempt, ms (shorter when the timeout is). */
const MAX_CONNECT_MS = 10_000;

/** How long after the server's statement_timeout a statement without any answer is abandoned, ms. */
const NO_ANSWER_GRACE_MS = 2_000;

/** A client-side timeout longer than any statement (migrations): setTimeout's largest delay, ms. */
export const NO_QUERY_TIMEOUT = 2 ** 31 - 1;

export class PgDb {
  readonly pool: pg.Pool;
  /** Callbacks to run once the transaction open on a connection (by `tx`) has committed. */
  private readonly commitHooks = new WeakMap<object, Array<() => void>>();

  constructor(
    readonly url: string,
    opts: PgDbOptions = {},
  ) {
    const timeoutMs = (opts.timeoutSeconds ?? PG_DEFAULTS.timeoutSeconds) * 1000;
    this.pool = new pg.Pool({
      connectionString: url,
      max: opts.max ?? PG_DEFAULTS.max,
      application_name: opts.applicationName ?? 'granary',
      types,
      keepAlive: true,
      connectionTimeoutMillis: Math.min(MAX_CONNECT_MS, timeoutMs),
      statement_timeout: timeoutMs,
      idle_in_transaction_session_timeout: timeoutMs,
      query_timeout: timeoutMs + NO_ANSWER_GRACE_MS,
    });
    // An idle client's error (the server went away) must not crash the process; the next query reports it.
    this.pool.on('error', () => undefined);
  }

  /**
   * One statement outside any transaction (autocommit). Throws PgUnavailable when the database failed. `name`: run
   * it as a named prepared statement (parsed and planned once per connection; for hot reads).
   */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[], name?: string): Promise<pg.QueryResult<R>> {
    try {
      return await (name !== undefined ? this.pool.query<R>({ name, text, values }) : this.pool.query<R>(text, values));
    } catch (err) {
      throw fromPg(err);
    }
  }

  /** The pool as a Queryable whose failures are mapped like `query`'s (for helpers shared with transactions). */
  readonly autocommit: Queryable = {
    query: ((text: string, values?: unknown[]) => this.query(text, values)) as Queryable['query'],
  };

  /**
   * Runs `fn` in a READ COMMITTED transaction on one connection and commits; rolls back when it throws (the error
   * propagates). Retried from the start on a serialization failure or a deadlock, so `fn` must not have effects
   * outside the transaction (build results from its return value).
   */
  async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let c: pg.PoolClient;
      try {
        c = await this.pool.connect();
      } catch (err) {
        throw fromPg(err);
      }
      // A checked-out client has no listener of its own (pg-pool's is for idle ones): the connection dropping
      // between two statements must not crash the process; the next statement fails instead.
      const onError = (): void => undefined;
      c.on('error', onError);
      let broken = false;
      const hooks: Array<() => void> = [];
      this.commitHooks.set(c, hooks);
      try {
        await c.query('BEGIN');
        const out = await fn(c);
        await c.query('COMMIT');
        this.commitHooks.delete(c);
        for (const hook of hooks) runHook(hook);
        return out;
      } catch (err) {
        this.commitHooks.delete(c);
        // A lost connection (or one without an answer: the driver's errors carry no code) cannot roll back:
        // dropping it ends the transaction.
        broken = (err as { code?: unknown }).code === undefined && unavailableReason(err) !== undefined;
        if (!broken) {
          try {
            await c.query('ROLLBACK');
          } catch {
            broken = true;
          }
        }
        const code = (err as { code?: string }).code;
        if (code !== undefined && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
          continue;
        }
        throw fromPg(err);
      } finally {
        // A broken client is discarded: it keeps the listener for whatever its socket still reports.
        if (!broken) c.removeListener('error', onError);
        c.release(broken);
      }
    }
  }

  /**
   * Runs `hook` once the transaction `tx` opened on `c` has committed (never when it rolls back; a retried attempt
   * registers its own). On a connection outside `tx` (autocommit: already committed) it runs on the next turn of
   * the event loop. A hook's exception is ignored (the transaction is committed whatever it does).
   */
  afterCommit(c: Queryable, hook: () => void): void {
    const hooks = this.commitHooks.get(c);
    if (hooks) hooks.push(hook);
    else setImmediate(() => runHook(hook));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Runs a commit hook; its failure never reaches the committed transaction's caller. */
function runHook(hook: () => void): void {
  try {
    hook();
  } catch {
    // ignored: see afterCommit
  }
}

/** An advisory lock to take: its name (hashed to PostgreSQL's 64-bit key) and mode. */
export interface AdvisoryLock {
  name: string;
  mode: 'shared' | 'exclusive';
}

/**
 * Takes transaction-scoped advisory locks (held until the transaction ends) in ONE statement, in the order of
 * `locks` (callers sort them: bucket locks, then entry locks, see the module comment). The key of a lock is
 * PostgreSQL's own hash of its name (`hashtextextended(name, 0)`), so every node computes the same key.
 * Order: `unnest` yields the array in order and the scan evaluates each row's lock call before reading the next row
 * (no ORDER BY, no sort: the calls run as the rows stream), so a statement waiting on its n-th lock holds the ones
 * before it and none after it (test/contract/pg-locks.test.ts checks this in pg_locks). A named (prepared)
 * statement, like the other statements of every entry change: parsed and planned once per connection.
 */
export async function takeLocks(c: Queryable, locks: AdvisoryLock[]): Promise<void> {
  if (locks.length === 0) return;
  await c.query({
    name: 'granary_take_locks',
    text: `SELECT CASE WHEN t.shared THEN pg_advisory_xact_lock_shared(hashtextextended(t.name, 0))
                 ELSE pg_advisory_xact_lock(hashtextextended(t.name, 0)) END
     FROM unnest($1::text[], $2::boolean[]) AS t(name, shared)`,
    values: [locks.map((l) => l.name), locks.map((l) => l.mode === 'shared')],
  });
}

/** The lock name of a bucket. */
export function bucketLockName(bucket: string): string {
  return `bucket/${bucket}`;
}

/** The lock names of entries ([bucket, key]), deduplicated, in (bucket, key) byte order. */
export function entryLockNames(entries: Array<[bucket: string, key: string]>): string[] {
  return [...new Set(entries.map(([b, k]) => `entry/${b}/${k}`))].sort(compareBytes);
}

/**
 * Takes the transaction-scoped advisory locks of `buckets` (`shared` or `exclusive`), in name order (byte order),
 * held until the transaction ends.
 */
export async function lockBuckets(c: Queryable, buckets: string[], mode: 'shared' | 'exclusive'): Promise<void> {
  await takeLocks(c, [...new Set(buckets)].sort(compareBytes).map((name) => ({ name: bucketLockName(name), mode })));
}

/** Takes the exclusive transaction-scoped advisory locks of entries, in (bucket, key) byte order. */
export async function lockEntries(c: Queryable, entries: Array<[bucket: string, key: string]>): Promise<void> {
  await takeLocks(c, entryLockNames(entries).map((name) => ({ name, mode: 'exclusive' as const })));
}

/** Byte-wise (UTF-8) comparison of two strings, the order of `COLLATE "C"`. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
