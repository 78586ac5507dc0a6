/**
 * The life cycle every durable queue table shares (async fetch tasks, the event outbox): rows `waiting` until
 * `next_run_ms`, claimed oldest first in an IMMEDIATE transaction (two processes sharing the data dir never take
 * the same row), then `done`/`failed`, retried at a later time, or released back (attempt not counted); every
 * state change is a compare-and-set on `running` AND on the claiming process (`owner`), so a process presumed
 * dead whose rows were queued again cannot end them afterwards. Times in ms. The table has the columns `seq`
 * (order), `id`, `state`, `attempts`, `result`, `updated_ms`, `next_run_ms`, `owner` besides its own.
 *
 * Ownership (workers/): a claim records `owner` (this store's process identity). `requeueAbandoned` puts back
 * only running rows whose owner holds no `process:<owner>` lease (table `leases`; the reaper removes the
 * leases of dead processes): a live worker's rows
 * are never taken from it; a killed worker's rows are, as soon as its lease is gone.
 */
import type Database from 'better-sqlite3';

export class SqliteQueueTable<Row extends { seq: number; attempts: number }, Rec> {
  private readonly st;
  private readonly listeners = new Set<() => void>();

  /**
   * `table` is a constant of ours (never input); `toRecord` maps a row to the port's record; `owner` is the
   * identity of this process (recorded on claims, required by every later state change).
   */
  constructor(
    private readonly db: Database.Database,
    table: string,
    private readonly toRecord: (row: Row) => Rec,
    private readonly owner: string,
  ) {
    this.st = {
      next: db.prepare(`SELECT * FROM ${table} WHERE state = 'waiting' AND next_run_ms <= ? ORDER BY next_run_ms, seq LIMIT 1`),
      take: db.prepare(`UPDATE ${table} SET state = 'running', owner = ?, attempts = attempts + 1, updated_ms = ? WHERE seq = ?`),
      nextRun: db.prepare(`SELECT MIN(next_run_ms) AS t FROM ${table} WHERE state = 'waiting'`),
      finish: db.prepare(
        `UPDATE ${table} SET state = ?, result = ?, updated_ms = ? WHERE id = ? AND state = 'running' AND owner IS ?`,
      ),
      retry: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, result = ?, updated_ms = ?
         WHERE id = ? AND state = 'running' AND owner IS ?`,
      ),
      release: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, attempts = MAX(attempts - 1, 0), next_run_ms = ?, updated_ms = ?
         WHERE id = ? AND state = 'running' AND owner IS ?`,
      ),
      requeue: db.prepare(
        `UPDATE ${table} SET state = 'waiting', owner = NULL, next_run_ms = ?, updated_ms = ?
         WHERE state = 'running' AND (owner IS NULL OR NOT EXISTS (
           SELECT 1 FROM leases l WHERE l.name = 'process:' || ${table}.owner))`,
      ),
      prune: db.prepare(`DELETE FROM ${table} WHERE state IN ('done', 'failed') AND updated_ms < ?`),
    };
  }

  /** Takes the oldest due row (state running, one more attempt), or undefined. */
  claim(nowMs: number): Rec | undefined {
    return this.db
      .transaction(() => {
        const row = this.st.next.get(nowMs) as Row | undefined;
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

  /** Ends a running row; false when it was not running. */
  finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): boolean {
    return this.st.finish.run(state, result, nowMs, id, this.owner).changes === 1;
  }

  /** Puts a running row back to waiting until `nextRunMs`; false when it was not running. */
  retryAt(id: string, nextRunMs: number, result: string, nowMs: number): boolean {
    return this.st.retry.run(nextRunMs, result, nowMs, id, this.owner).changes === 1;
  }

  /** Hands a running row back, its attempt not counted; false when it was not running. */
  release(id: string, nowMs: number): boolean {
    return this.st.release.run(nowMs, nowMs, id, this.owner).changes === 1;
  }

  /**
   * Puts back to waiting (runnable at `nowMs`) every running row whose owner holds no process lease (it died:
   * workers/recovery.ts removes a dead process's leases; or the row predates owners); how many.
   */
  requeueAbandoned(nowMs: number): number {
    return this.st.requeue.run(nowMs, nowMs).changes;
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
