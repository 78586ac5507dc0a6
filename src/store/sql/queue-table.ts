/**
 * The one life cycle of the durable queues (ports/tasks.ts, ports/durable-queue.ts), on SQLite and PostgreSQL
 * alike (the dialect: db.ts): the task table `tasks` (kinds `job` and `fetch`, one instance per kind, or all kinds
 * for recovery) and the event outbox `event_outbox`. Rows are `waiting` until `next_run_ms`, claimed, then
 * `done`/`failed` (or `notifying` then `done`: jobs), retried at a later time, or released back (attempt not
 * counted). Every state change is a compare-and-set on the state AND on the claiming process (`owner`), so a
 * process presumed dead whose rows were queued again cannot end them afterwards. Times in Unix ms.
 *
 * Claim order: due rows by earliest `next_run_ms`, then `seq` (fetch tasks, events); or a job lane — the waiting
 * jobs of one pipeline, type 0 before type 1, then `seq` (jobs never wait for a retry, so their lane does not look
 * at `next_run_ms`: nodes whose clocks differ a little still run them in submission order at once).
 *
 * A claim is ONE statement, `UPDATE … WHERE seq = (SELECT seq … LIMIT 1<skipLocked>) … RETURNING *`: on SQLite
 * the UPDATE takes the single write lock before it reads (two processes sharing the data dir never take the same
 * row); on PostgreSQL the picking SELECT locks its row `FOR UPDATE SKIP LOCKED` (a row being claimed by another
 * node is skipped, never waited for; one changed since the snapshot is re-checked by PostgreSQL).
 *
 * Ownership (workers/): a claim records `owner` (this store's process identity). `requeueAbandoned` puts back
 * only running rows whose owner holds no `process:<owner>` lease (table `leases`; the reaper removes the leases
 * of dead processes), and takes the owner off such `notifying` rows, in one transaction; a live worker's rows are
 * never touched.
 *
 * Columns: `seq` (order), `id`, `state`, `attempts`, `owner`, `result`, `updated_ms`, `next_run_ms` on both
 * tables; `tasks` adds `kind`, `code` (a done job's final code), `pipeline` and `type` (jobs). Rows come to
 * `toRecord` as the driver reads them (int8 bigint on PostgreSQL, number on SQLite).
 */
import type { TaskKind } from '../../ports/tasks.js';
import type { SqlDb } from './db.js';

/** Which table and which of its rows an instance works on. */
export interface QueueTableScope<Row, Rec> {
  /** `tasks` (with kinds) or `event_outbox`. */
  table: 'tasks' | 'event_outbox';
  /** Rows of this kind only (tasks); every row when absent. */
  kind?: TaskKind;
  /** Maps a row to the port's record. */
  toRecord: (row: Row) => Rec;
  /** The identity of this process (recorded on claims, required by every later state change). */
  owner: string;
}

export class QueueTable<Row, Rec> {
  private readonly sql;
  private readonly listeners = new Set<() => void>();
  private readonly toRecord: (row: Row) => Rec;
  private readonly owner: string;
  private readonly tasks: boolean;

  constructor(
    private readonly db: SqlDb,
    scope: QueueTableScope<Row, Rec>,
  ) {
    const { table, kind } = scope;
    this.toRecord = scope.toRecord;
    this.owner = scope.owner;
    this.tasks = table === 'tasks';
    // Constants of ours (never input): the table and the kind filter.
    const mine = kind ? `kind = '${kind}' AND ` : '';
    const mineRunning = `${mine}id = ? AND state = 'running' AND owner = ?`;
    const abandoned = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || ${table}.owner))`;
    const take = (pick: string): string =>
      `UPDATE ${table} SET state = 'running', owner = ?, attempts = attempts + 1, updated_ms = ?
       WHERE seq = (${pick} LIMIT 1${db.skipLocked}) RETURNING *`;
    this.sql = {
      claimDue: take(`SELECT seq FROM ${table} WHERE ${mine}state = 'waiting' AND next_run_ms <= ? ORDER BY next_run_ms, seq`),
      claimLane: take(`SELECT seq FROM ${table} WHERE ${mine}state = 'waiting' AND pipeline = ? ORDER BY type, seq`),
      nextRun: `SELECT MIN(next_run_ms) AS t FROM ${table} WHERE ${mine}state = 'waiting'`,
      saveResult: `UPDATE ${table} SET result = ?, updated_ms = ? WHERE ${mineRunning}`,
      finish: `UPDATE ${table} SET state = ?, result = ?, updated_ms = ?${this.tasks ? ', code = ?' : ''} WHERE ${mineRunning}`,
      endNotifying: `UPDATE ${table} SET state = 'done', code = ?, updated_ms = ?
                     WHERE ${mine}id = ? AND state = 'notifying' AND owner = ?`,
      anyUnownedNotifying: `SELECT 1 AS one FROM ${table} WHERE ${mine}state = 'notifying' AND owner IS NULL LIMIT 1`,
      claimNotifying: `UPDATE ${table} SET owner = ?, updated_ms = ? WHERE seq = (
                         SELECT seq FROM ${table} WHERE ${mine}state = 'notifying' AND owner IS NULL ORDER BY seq
                         LIMIT 1${db.skipLocked})
                       AND state = 'notifying' AND owner IS NULL RETURNING *`,
      retry: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, result = ?, updated_ms = ? WHERE ${mineRunning}`,
      release: `UPDATE ${table} SET state = 'waiting', owner = NULL,
                attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, next_run_ms = ?, updated_ms = ?
                WHERE ${mineRunning}`,
      requeue: `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, updated_ms = ?
                WHERE ${mine}state = 'running' AND ${abandoned} RETURNING ${this.tasks ? 'kind' : "'' AS kind"}`,
      orphanNotifying: `UPDATE ${table} SET owner = NULL WHERE ${mine}state = 'notifying' AND owner IS NOT NULL AND ${abandoned}`,
      prune: `DELETE FROM ${table} WHERE ${mine}state IN ('done', 'failed') AND updated_ms < ?`,
    };
  }

  /**
   * Takes the next row (state running, one more attempt), or undefined: the oldest due one (`next_run_ms` ≤
   * `nowMs`), or with `pipeline` the next job of that lane (see the module comment).
   */
  async claim(nowMs: number, pipeline?: string): Promise<Rec | undefined> {
    const row =
      pipeline === undefined
        ? await this.db.get<Row>(this.sql.claimDue, [this.owner, nowMs, nowMs])
        : await this.db.get<Row>(this.sql.claimLane, [this.owner, nowMs, pipeline]);
    return row ? this.toRecord(row) : undefined;
  }

  /** When the earliest waiting row is due (ms), or undefined. */
  async nextRunMs(): Promise<number | undefined> {
    const t = (await this.db.get<{ t: number | bigint | null }>(this.sql.nextRun))?.t;
    return t === null || t === undefined ? undefined : Number(t);
  }

  /** Saves the result so far of a running row of this process (jobs' item outcomes); false when not running. */
  async saveResult(id: string, result: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(this.sql.saveResult, [result, nowMs, id, this.owner])) === 1;
  }

  /**
   * Ends a running row of this process: `done`/`failed`, or `notifying` (a job whose notify URL is to be
   * called); `code` is a job's final code (tasks only). False when it was not running.
   */
  async finish(id: string, state: 'done' | 'failed' | 'notifying', result: string, nowMs: number, code?: number): Promise<boolean> {
    const args = this.tasks ? [state, result, nowMs, code ?? null] : [state, result, nowMs];
    return (await this.db.run(this.sql.finish, [...args, id, this.owner])) === 1;
  }

  /** A `notifying` row of this process is `done` with `code`; false when it was not notifying (tasks only). */
  async endNotifying(id: string, code: number, nowMs: number): Promise<boolean> {
    return (await this.db.run(this.sql.endNotifying, [code, nowMs, id, this.owner])) === 1;
  }

  /**
   * Takes the oldest `notifying` row without an owner (its process died) for this process, or undefined. A read
   * first: no write (nor write lock) when there is none, the usual case.
   */
  async claimNotifying(nowMs: number): Promise<Rec | undefined> {
    if ((await this.db.get(this.sql.anyUnownedNotifying)) === undefined) return undefined;
    const row = await this.db.get<Row>(this.sql.claimNotifying, [this.owner, nowMs]);
    return row ? this.toRecord(row) : undefined;
  }

  /** Puts a running row back to waiting until `nextRunMs` (ms); false when it was not running. */
  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(this.sql.retry, [nextRunMs, result, nowMs, id, this.owner])) === 1;
  }

  /** Hands a running row back, runnable at `nowMs`, its attempt not counted; false when it was not running. */
  async release(id: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(this.sql.release, [nowMs, nowMs, id, this.owner])) === 1;
  }

  /**
   * Puts back to waiting (runnable at `nowMs`) every running row whose owner holds no process lease (it died:
   * workers/recovery.ts removes a dead process's leases; or the row predates owners), and takes the owner off
   * such notifying rows, in one transaction; the kinds of the rows put back (`''` on the outbox).
   */
  async requeueAbandonedKinds(nowMs: number): Promise<string[]> {
    const [, requeued] = await this.db.batch([{ sql: this.sql.orphanNotifying }, { sql: this.sql.requeue, args: [nowMs, nowMs] }]);
    return (requeued!.rows as { kind: string }[]).map((r) => r.kind);
  }

  /** `requeueAbandonedKinds`, counted. */
  async requeueAbandoned(nowMs: number): Promise<number> {
    return (await this.requeueAbandonedKinds(nowMs)).length;
  }

  /** Deletes done and failed rows that ended before `beforeMs` (ms); how many. */
  async prune(beforeMs: number): Promise<number> {
    return this.db.run(this.sql.prune, [beforeMs]);
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
