/**
 * The one life cycle of the durable queues on PostgreSQL (ports/tasks.ts): the task table `tasks` (kinds `job` and
 * `fetch`, one instance per kind, or all kinds for recovery) and the event outbox `event_outbox`. The port of
 * store/sqlite/queue-table.ts with the same semantics: rows `waiting` until `next_run_ms`, claimed (earliest
 * `next_run_ms`, then `seq`; or a job lane: one pipeline's waiting jobs, type 0 before type 1, then `seq`,
 * without looking at `next_run_ms`), then `done`/`failed` (or `notifying` then `done`: jobs), retried at a later
 * time, or released back (attempt not counted). Every state change is a compare-and-set on the state AND `owner`
 * = this process, so a process presumed dead whose rows were queued again cannot end them afterwards. Times in ms.
 *
 * Claims across nodes: one statement `SELECT … FOR UPDATE SKIP LOCKED LIMIT 1` feeding an `UPDATE … RETURNING`
 * (one implicit transaction, one round trip): a row being claimed by another node is locked and skipped, so two
 * nodes never take the same row and never wait on each other. A row that another claim changed between the
 * snapshot and the lock is re-checked by PostgreSQL and skipped when no longer waiting.
 *
 * Ownership (workers/): `requeueAbandoned` puts back only running rows whose owner holds no `process:<owner>`
 * lease (table `leases`), and takes the owner off such notifying rows, so a live node's rows are never taken.
 *
 * Columns: `seq` (bigserial, order), `id`, `state`, `attempts`, `result`, `owner`, `updated_ms`, `next_run_ms`
 * (bigint ms) on both tables; `tasks` adds `kind`, `code`, `pipeline`, `type`. `toRecord` gets rows with int8
 * columns as bigint.
 */
import type { TaskKind } from '../../ports/tasks.js';
import type { PgDb } from './db.js';

/** What every queue row has (int8 columns are bigint, db.ts). */
export interface PgQueueRow {
  seq: bigint;
  id: string;
  attempts: number;
}

/** Which table and which of its rows an instance works on. */
export interface PgQueueTableScope<Row, Rec> {
  /** `tasks` (with kinds) or `event_outbox`. */
  table: 'tasks' | 'event_outbox';
  /** Rows of this kind only (tasks); every row when absent. */
  kind?: TaskKind;
  /** Maps a row to the port's record. */
  toRecord: (row: Row) => Rec;
  /** The identity of this process (recorded on claims, required by every later state change). */
  owner: string;
}

export class PgQueueTable<Row extends PgQueueRow, Rec> {
  private readonly sql;
  private readonly listeners = new Set<() => void>();
  private readonly toRecord: (row: Row) => Rec;
  private readonly owner: string;
  private readonly tasks: boolean;

  constructor(
    private readonly db: PgDb,
    scope: PgQueueTableScope<Row, Rec>,
  ) {
    const { table, kind } = scope;
    this.toRecord = scope.toRecord;
    this.owner = scope.owner;
    this.tasks = table === 'tasks';
    // Constants of ours (never input): the table and the kind filter.
    const mine = kind ? `kind = '${kind}' AND ` : '';
    const abandoned = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || ${table}.owner))`;
    const take = (pick: string, params: string): string =>
      `WITH next AS (${pick} FOR UPDATE SKIP LOCKED)
       UPDATE ${table} t SET state = 'running', owner = ${params}, attempts = t.attempts + 1, updated_ms = $1
       FROM next WHERE t.seq = next.seq RETURNING t.*`;
    this.sql = {
      claimDue: take(
        `SELECT seq FROM ${table} WHERE ${mine}state = 'waiting' AND next_run_ms <= $1 ORDER BY next_run_ms, seq LIMIT 1`,
        '$2',
      ),
      claimLane: take(`SELECT seq FROM ${table} WHERE ${mine}state = 'waiting' AND pipeline = $3 ORDER BY type, seq LIMIT 1`, '$2'),
      nextRun: `SELECT MIN(next_run_ms) AS t FROM ${table} WHERE ${mine}state = 'waiting'`,
      saveResult: `UPDATE ${table} SET result = $1, updated_ms = $2 WHERE ${mine}id = $3 AND state = 'running' AND owner = $4`,
      finish: `UPDATE ${table} SET state = $1, result = $2, updated_ms = $3${this.tasks ? ', code = $6' : ''}
               WHERE ${mine}id = $4 AND state = 'running' AND owner = $5`,
      endNotifying: `UPDATE ${table} SET state = 'done', code = $1, updated_ms = $2
                     WHERE ${mine}id = $3 AND state = 'notifying' AND owner = $4`,
      claimNotifying: `WITH next AS (
                         SELECT seq FROM ${table} WHERE ${mine}state = 'notifying' AND owner IS NULL ORDER BY seq LIMIT 1
                         FOR UPDATE SKIP LOCKED)
                       UPDATE ${table} t SET owner = $1, updated_ms = $2 FROM next WHERE t.seq = next.seq RETURNING t.*`,
      retry: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = $1, result = $2, updated_ms = $3
              WHERE ${mine}id = $4 AND state = 'running' AND owner = $5`,
      release: `UPDATE ${table} SET state = 'waiting', owner = NULL, attempts = GREATEST(attempts - 1, 0),
                next_run_ms = $1, updated_ms = $1 WHERE ${mine}id = $2 AND state = 'running' AND owner = $3`,
      requeue: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = $1, updated_ms = $1
                WHERE ${mine}state = 'running' AND ${abandoned} RETURNING ${this.tasks ? 'kind' : "'' AS kind"}`,
      orphanNotifying: `UPDATE ${table} SET owner = NULL WHERE ${mine}state = 'notifying' AND owner IS NOT NULL AND ${abandoned}`,
      prune: `DELETE FROM ${table} WHERE ${mine}state IN ('done', 'failed') AND updated_ms < $1`,
    };
  }

  /**
   * Takes the next row (state running, one more attempt), or undefined: the oldest due one (`next_run_ms` ≤
   * `nowMs`, Unix ms), or with `pipeline` the next job of that lane (see the module comment).
   */
  async claim(nowMs: number, pipeline?: string): Promise<Rec | undefined> {
    const { rows } =
      pipeline === undefined
        ? await this.db.query<Row>(this.sql.claimDue, [nowMs, this.owner])
        : await this.db.query<Row>(this.sql.claimLane, [nowMs, this.owner, pipeline]);
    return rows[0] ? this.toRecord(rows[0]) : undefined;
  }

  /** When the earliest waiting row is due (Unix ms), or undefined. */
  async nextRunMs(): Promise<number | undefined> {
    const { rows } = await this.db.query<{ t: bigint | null }>(this.sql.nextRun);
    const t = rows[0]?.t;
    return t === null || t === undefined ? undefined : Number(t);
  }

  /** Saves the result so far of a running row of this process (jobs' item outcomes); false when not running. */
  async saveResult(id: string, result: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(this.sql.saveResult, [result, nowMs, id, this.owner])).rowCount === 1;
  }

  /**
   * Ends a running row of this process: `done`/`failed`, or `notifying` (a job whose notify URL is to be called);
   * `code` is a job's final code (tasks only). False when it was not running (or not this process's).
   */
  async finish(id: string, state: 'done' | 'failed' | 'notifying', result: string, nowMs: number, code?: number): Promise<boolean> {
    const args: Array<string | number | null> = [state, result, nowMs, id, this.owner];
    if (this.tasks) args.push(code ?? null);
    return (await this.db.query(this.sql.finish, args)).rowCount === 1;
  }

  /** A `notifying` row of this process is `done` with `code`; false when it was not notifying (tasks only). */
  async endNotifying(id: string, code: number, nowMs: number): Promise<boolean> {
    return (await this.db.query(this.sql.endNotifying, [code, nowMs, id, this.owner])).rowCount === 1;
  }

  /** Takes the oldest `notifying` row without an owner (its process died) for this process, or undefined. */
  async claimNotifying(nowMs: number): Promise<Rec | undefined> {
    const { rows } = await this.db.query<Row>(this.sql.claimNotifying, [this.owner, nowMs]);
    return rows[0] ? this.toRecord(rows[0]) : undefined;
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
   * workers/recovery.ts removes a dead process's leases), and takes the owner off such notifying rows, in one
   * transaction; the kinds of the rows put back (`''` on the outbox).
   */
  async requeueAbandonedKinds(nowMs: number): Promise<string[]> {
    return this.db.tx(async (c) => {
      await c.query(this.sql.orphanNotifying);
      return (await c.query<{ kind: string }>(this.sql.requeue, [nowMs])).rows.map((r) => r.kind);
    });
  }

  /** `requeueAbandonedKinds`, counted. */
  async requeueAbandoned(nowMs: number): Promise<number> {
    return (await this.requeueAbandonedKinds(nowMs)).length;
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
