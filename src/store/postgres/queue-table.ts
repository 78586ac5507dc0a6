/**
 * The life cycle every durable queue table shares on PostgreSQL (async fetch tasks, the event outbox), the port of
 * store/sqlite/queue-table.ts with the same semantics: rows `waiting` until `next_run_ms`, claimed oldest first
 * (earliest `next_run_ms`, then `seq`), then `done`/`failed`, retried at a later time, or released back (attempt
 * not counted). Every state change is a compare-and-set on `state = 'running'` AND `owner` = this process, so a
 * process presumed dead whose rows were queued again cannot end them afterwards. Times in ms.
 *
 * Claims across nodes: one statement `SELECT … FOR UPDATE SKIP LOCKED LIMIT 1` feeding an `UPDATE … RETURNING`
 * (one implicit transaction, one round trip): a row being claimed by another node is locked and skipped, so two
 * nodes never take the same row and never wait on each other. A row that another claim changed between the
 * snapshot and the lock is re-checked by PostgreSQL and skipped when no longer waiting.
 *
 * Ownership (workers/): `requeueAbandoned` puts back only running rows whose owner holds no `process:<owner>`
 * lease (table `leases`), so a live node's rows are never taken from it.
 *
 * The table has the columns `seq` (bigserial, order), `id`, `state`, `attempts`, `result`, `owner`,
 * `updated_ms`, `next_run_ms` (bigint ms) besides its own; `toRecord` gets rows with int8 columns as bigint.
 */
import type { PgDb } from './db.js';

/** What every queue row has (int8 columns are bigint, db.ts). */
export interface PgQueueRow {
  seq: bigint;
  id: string;
  attempts: number;
}

export class PgQueueTable<Row extends PgQueueRow, Rec> {
  private readonly sql;
  private readonly listeners = new Set<() => void>();

  /**
   * `table` is a constant of ours (never input); `toRecord` maps a row to the port's record; `owner` is the
   * identity of this process (recorded on claims, required by every later state change).
   */
  constructor(
    private readonly db: PgDb,
    table: string,
    private readonly toRecord: (row: Row) => Rec,
    private readonly owner: string,
  ) {
    this.sql = {
      claim: `WITH next AS (
                SELECT seq FROM ${table} WHERE state = 'waiting' AND next_run_ms <= $1
                ORDER BY next_run_ms, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
              UPDATE ${table} t SET state = 'running', owner = $2, attempts = t.attempts + 1, updated_ms = $1
              FROM next WHERE t.seq = next.seq RETURNING t.*`,
      nextRun: `SELECT MIN(next_run_ms) AS t FROM ${table} WHERE state = 'waiting'`,
      finish: `UPDATE ${table} SET state = $1, result = $2, updated_ms = $3 WHERE id = $4 AND state = 'running' AND owner = $5`,
      retry: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = $1, result = $2, updated_ms = $3
              WHERE id = $4 AND state = 'running' AND owner = $5`,
      release: `UPDATE ${table} SET state = 'waiting', owner = NULL, attempts = GREATEST(attempts - 1, 0),
                next_run_ms = $1, updated_ms = $1 WHERE id = $2 AND state = 'running' AND owner = $3`,
      requeue: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = $1, updated_ms = $1
                WHERE state = 'running' AND (owner IS NULL OR NOT EXISTS (
                  SELECT 1 FROM leases l WHERE l.name = 'process:' || ${table}.owner))`,
      prune: `DELETE FROM ${table} WHERE state IN ('done', 'failed') AND updated_ms < $1`,
    };
  }

  /** Takes the oldest due row (state running, one more attempt), or undefined. `nowMs` Unix ms. */
  async claim(nowMs: number): Promise<Rec | undefined> {
    const { rows } = await this.db.query<Row>(this.sql.claim, [nowMs, this.owner]);
    return rows[0] ? this.toRecord(rows[0]) : undefined;
  }

  /** When the earliest waiting row is due (Unix ms), or undefined. */
  async nextRunMs(): Promise<number | undefined> {
    const { rows } = await this.db.query<{ t: bigint | null }>(this.sql.nextRun);
    const t = rows[0]?.t;
    return t === null || t === undefined ? undefined : Number(t);
  }

  /** Ends a running row of this process; false when it was not running (or not this process's). */
  async finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(this.sql.finish, [state, result, nowMs, id, this.owner])).rowCount === 1;
  }

  /** Puts a running row back to waiting until `nextRunMs` (ms); false when it was not running. */
  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(this.sql.retry, [nextRunMs, result, nowMs, id, this.owner])).rowCount === 1;
  }

  /** Hands a running row back, runnable at `nowMs`, its attempt not counted; false when it was not running. */
  async release(id: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(this.sql.release, [nowMs, id, this.owner])).rowCount === 1;
  }

  /**
   * Puts back to waiting (runnable at `nowMs`) every running row whose owner holds no process lease (it died:
   * workers/recovery.ts removes a dead process's leases); how many. One statement: atomic against claims.
   */
  async requeueAbandoned(nowMs: number): Promise<number> {
    return (await this.db.query(this.sql.requeue, [nowMs])).rowCount ?? 0;
  }

  /** Deletes done and failed rows that ended before `beforeMs` (ms); how many. */
  async prune(beforeMs: number): Promise<number> {
    return (await this.db.query(this.sql.prune, [beforeMs])).rowCount ?? 0;
  }

  /** Adds a listener told of new rows written by this process (after their commit); returns its removal. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Tells the listeners; a listener's failure never reaches the caller (the rows are stored durably). */
  notify(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        // ignored: see above
      }
    }
  }
}
