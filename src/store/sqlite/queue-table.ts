/**
 * The one life cycle of the durable queues on SQLite (ports/tasks.ts): the task table `tasks` (kinds `job` and
 * `fetch`, one instance per kind, or all kinds for recovery) and the event outbox `event_outbox`. Rows are
 * `waiting` until `next_run_ms`, claimed in an IMMEDIATE transaction (two processes sharing the data dir never
 * take the same row), then `done`/`failed` (or `notifying` then `done`: jobs), retried at a later time, or
 * released back (attempt not counted); every state change is a compare-and-set on the state AND on the claiming
 * process (`owner`), so a process presumed dead whose rows were queued again cannot end them afterwards. Times in
 * Unix ms.
 *
 * Claim order: due rows by earliest `next_run_ms`, then `seq` (fetch tasks, events); or a job lane — the waiting
 * jobs of one pipeline, type 0 before type 1, then `seq` (jobs never wait for a retry, so their lane does not look
 * at `next_run_ms`: nodes whose clocks differ a little still run them in submission order at once).
 *
 * Ownership (workers/): a claim records `owner` (this store's process identity). `requeueAbandoned` puts back
 * only running rows whose owner holds no `process:<owner>` lease (table `leases`; the reaper removes the leases
 * of dead processes), and takes the owner off such `notifying` rows; a live worker's rows are never touched.
 *
 * Columns: `seq` (order), `id`, `state`, `attempts`, `owner`, `result`, `updated_ms`, `next_run_ms` on both
 * tables; `tasks` adds `kind`, `code` (a done job's final code), `pipeline` and `type` (jobs).
 */
import type Database from 'better-sqlite3';
import type { TaskKind } from '../../ports/tasks.js';

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

export class SqliteQueueTable<Row extends { seq: number; attempts: number }, Rec> {
  private readonly st;
  private readonly listeners = new Set<() => void>();
  private readonly toRecord: (row: Row) => Rec;
  private readonly owner: string;

  constructor(
    private readonly db: Database.Database,
    scope: QueueTableScope<Row, Rec>,
  ) {
    const { table, kind } = scope;
    this.toRecord = scope.toRecord;
    this.owner = scope.owner;
    const tasks = table === 'tasks';
    // Constants of ours (never input): the table and the kind filter.
    const mine = kind ? `kind = '${kind}' AND ` : '';
    const mineRunning = `${mine}id = ? AND state = 'running' AND owner IS ?`;
    const abandoned = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || ${table}.owner))`;
    this.st = {
      nextDue: db.prepare(`SELECT * FROM ${table} WHERE ${mine}state = 'waiting' AND next_run_ms <= ? ORDER BY next_run_ms, seq LIMIT 1`),
      nextInLane: tasks
        ? db.prepare(`SELECT * FROM ${table} WHERE ${mine}state = 'waiting' AND pipeline = ? ORDER BY type, seq LIMIT 1`)
        : undefined,
      take: db.prepare(`UPDATE ${table} SET state = 'running', owner = ?, attempts = attempts + 1, updated_ms = ? WHERE seq = ?`),
      nextRun: db.prepare(`SELECT MIN(next_run_ms) AS t FROM ${table} WHERE ${mine}state = 'waiting'`),
      saveResult: db.prepare(`UPDATE ${table} SET result = ?, updated_ms = ? WHERE ${mineRunning}`),
      finish: db.prepare(
        `UPDATE ${table} SET state = ?, result = ?, updated_ms = ?${tasks ? ', code = ?' : ''} WHERE ${mineRunning}`,
      ),
      endNotifying: tasks
        ? db.prepare(`UPDATE ${table} SET state = 'done', code = ?, updated_ms = ?
                      WHERE ${mine}id = ? AND state = 'notifying' AND owner IS ?`)
        : undefined,
      anyUnownedNotifying: db.prepare(`SELECT 1 FROM ${table} WHERE ${mine}state = 'notifying' AND owner IS NULL LIMIT 1`),
      claimNotifying: db.prepare(
        `UPDATE ${table} SET owner = ?, updated_ms = ? WHERE seq = (
           SELECT seq FROM ${table} WHERE ${mine}state = 'notifying' AND owner IS NULL ORDER BY seq LIMIT 1)
         AND state = 'notifying' AND owner IS NULL RETURNING *`,
      ),
      retry: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, result = ?, updated_ms = ? WHERE ${mineRunning}`,
      ),
      release: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, attempts = MAX(attempts - 1, 0), next_run_ms = ?, updated_ms = ?
         WHERE ${mineRunning}`,
      ),
      requeue: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, updated_ms = ?
         WHERE ${mine}state = 'running' AND ${abandoned} RETURNING ${tasks ? 'kind' : "'' AS kind"}`,
      ),
      orphanNotifying: db.prepare(`UPDATE ${table} SET owner = NULL WHERE ${mine}state = 'notifying' AND owner IS NOT NULL AND ${abandoned}`),
      prune: db.prepare(`DELETE FROM ${table} WHERE ${mine}state IN ('done', 'failed') AND updated_ms < ?`),
    };
  }

  /**
   * Takes the next row (state running, one more attempt) in one IMMEDIATE transaction, or undefined: the oldest
   * due one (`next_run_ms` ≤ `nowMs`), or with `pipeline` the next job of that lane (see the module comment).
   */
  claim(nowMs: number, pipeline?: string): Rec | undefined {
    return this.db
      .transaction(() => {
        const row = (pipeline === undefined ? this.st.nextDue.get(nowMs) : this.st.nextInLane?.get(pipeline)) as Row | undefined;
        if (!row) return undefined;
        this.st.take.run(this.owner, nowMs, row.seq);
        return this.toRecord({ ...row, state: 'running', owner: this.owner, attempts: row.attempts + 1, updated_ms: nowMs });
      })
      .immediate();
  }

  /** When the earliest waiting row is due (ms), or undefined. */
  nextRunMs(): number | undefined {
    return (this.st.nextRun.get() as { t: number | null }).t ?? undefined;
  }

  /** Saves the result so far of a running row of this process (jobs' item outcomes); false when not running. */
  saveResult(id: string, result: string, nowMs: number): boolean {
    return this.st.saveResult.run(result, nowMs, id, this.owner).changes === 1;
  }

  /**
   * Ends a running row of this process: `done`/`failed`, or `notifying` (a job whose notify URL is to be
   * called); `code` is a job's final code (tasks only). False when it was not running.
   */
  finish(id: string, state: 'done' | 'failed' | 'notifying', result: string, nowMs: number, code?: number): boolean {
    const args = this.st.endNotifying ? [state, result, nowMs, code ?? null] : [state, result, nowMs];
    return this.st.finish.run(...args, id, this.owner).changes === 1;
  }

  /** A `notifying` row of this process is `done` with `code`; false when it was not notifying (tasks only). */
  endNotifying(id: string, code: number, nowMs: number): boolean {
    return this.st.endNotifying?.run(code, nowMs, id, this.owner).changes === 1;
  }

  /** Takes the oldest `notifying` row without an owner (its process died) for this process, or undefined. */
  claimNotifying(nowMs: number): Rec | undefined {
    if (this.st.anyUnownedNotifying.get() === undefined) return undefined; // a read: no write lock for nothing
    const row = this.st.claimNotifying.get(this.owner, nowMs) as Row | undefined;
    return row ? this.toRecord(row) : undefined;
  }

  /** Puts a running row back to waiting until `nextRunMs`; false when it was not running. */
  retryAt(id: string, nextRunMs: number, result: string, nowMs: number): boolean {
    return this.st.retry.run(nextRunMs, result, nowMs, id, this.owner).changes === 1;
  }

  /** Hands a running row back, runnable at `nowMs`, its attempt not counted; false when it was not running. */
  release(id: string, nowMs: number): boolean {
    return this.st.release.run(nowMs, nowMs, id, this.owner).changes === 1;
  }

  /**
   * Puts back to waiting (runnable at `nowMs`) every running row whose owner holds no process lease (it died:
   * workers/recovery.ts removes a dead process's leases; or the row predates owners), and takes the owner off
   * such notifying rows, in one transaction; the kinds of the rows put back (`''` on the outbox).
   */
  requeueAbandonedKinds(nowMs: number): string[] {
    return this.db
      .transaction(() => {
        this.st.orphanNotifying.run();
        return (this.st.requeue.all(nowMs, nowMs) as { kind: string }[]).map((r) => r.kind);
      })
      .immediate();
  }

  /** `requeueAbandonedKinds`, counted. */
  requeueAbandoned(nowMs: number): number {
    return this.requeueAbandonedKinds(nowMs).length;
  }

  /** Deletes done and failed rows that ended before `beforeMs`; how many. */
  prune(beforeMs: number): number {
    return this.st.prune.run(beforeMs).changes;
  }

  /** Adds a listener told of new rows (this process); returns its removal. */
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
