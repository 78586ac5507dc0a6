/**
 * The async-fetch task queue on SQLite (table `fetch_tasks`, schema.ts), implementing the FetchTaskStore port.
 * Claims run in an IMMEDIATE transaction, so two processes sharing the data dir never take the same task.
 * Subscribers are told of tasks queued through this object (this process).
 */
import type Database from 'better-sqlite3';
import type { FetchTaskRecord, FetchTaskState, FetchTaskStore, NewFetchTask } from '../tasks.js';

interface TaskRow {
  seq: number;
  id: string;
  access_key: string;
  request: string;
  state: FetchTaskState;
  attempts: number;
  result: string | null;
  created_ms: number;
  updated_ms: number;
  next_run_ms: number;
}

const toRecord = (r: TaskRow): FetchTaskRecord => ({
  id: r.id,
  accessKey: r.access_key,
  request: r.request,
  state: r.state,
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  createdMs: r.created_ms,
  updatedMs: r.updated_ms,
  nextRunMs: r.next_run_ms,
});

export class SqliteFetchTasks implements FetchTaskStore {
  private readonly st;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly db: Database.Database) {
    this.st = {
      insert: db.prepare(
        `INSERT INTO fetch_tasks (id, access_key, request, state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES (?, ?, ?, 'waiting', 0, ?, ?, ?)`,
      ),
      get: db.prepare('SELECT * FROM fetch_tasks WHERE id = ?'),
      running: db.prepare("SELECT COUNT(*) AS n FROM fetch_tasks WHERE state = 'running'"),
      waitingBefore: db.prepare(
        `SELECT COUNT(*) AS n FROM fetch_tasks
         WHERE state = 'waiting' AND (next_run_ms < ? OR (next_run_ms = ? AND seq < ?))`,
      ),
      next: db.prepare(
        `SELECT * FROM fetch_tasks WHERE state = 'waiting' AND next_run_ms <= ? ORDER BY next_run_ms, seq LIMIT 1`,
      ),
      take: db.prepare(
        "UPDATE fetch_tasks SET state = 'running', attempts = attempts + 1, updated_ms = ? WHERE seq = ?",
      ),
      nextRun: db.prepare("SELECT MIN(next_run_ms) AS t FROM fetch_tasks WHERE state = 'waiting'"),
      finish: db.prepare(
        "UPDATE fetch_tasks SET state = ?, result = ?, updated_ms = ? WHERE id = ? AND state = 'running'",
      ),
      retry: db.prepare(
        `UPDATE fetch_tasks SET state = 'waiting', next_run_ms = ?, result = ?, updated_ms = ?
         WHERE id = ? AND state = 'running'`,
      ),
      release: db.prepare(
        `UPDATE fetch_tasks SET state = 'waiting', attempts = MAX(attempts - 1, 0), next_run_ms = ?, updated_ms = ?
         WHERE id = ? AND state = 'running'`,
      ),
      prune: db.prepare("DELETE FROM fetch_tasks WHERE state IN ('done', 'failed') AND updated_ms < ?"),
      requeue: db.prepare(
        "UPDATE fetch_tasks SET state = 'waiting', next_run_ms = ?, updated_ms = ? WHERE state = 'running'",
      ),
    };
  }

  /** Tasks ahead of the row: every running task plus the waiting ones claimed before it. */
  private aheadOf(row: TaskRow): number {
    const running = (this.st.running.get() as { n: number }).n;
    const waiting = (this.st.waitingBefore.get(row.next_run_ms, row.next_run_ms, row.seq) as { n: number }).n;
    return running + waiting;
  }

  async enqueue(task: NewFetchTask): Promise<{ ahead: number }> {
    const ahead = this.db.transaction(() => {
      this.st.insert.run(task.id, task.accessKey, task.request, task.createdMs, task.createdMs, task.createdMs);
      return this.aheadOf(this.st.get.get(task.id) as TaskRow);
    })();
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        // a listener's failure must not fail the submission (the task is queued durably)
      }
    }
    return { ahead };
  }

  async get(id: string): Promise<(FetchTaskRecord & { ahead: number }) | undefined> {
    return this.db.transaction(() => {
      const row = this.st.get.get(id) as TaskRow | undefined;
      return row ? { ...toRecord(row), ahead: this.aheadOf(row) } : undefined;
    })();
  }

  async claim(nowMs: number): Promise<FetchTaskRecord | undefined> {
    return this.db
      .transaction(() => {
        const row = this.st.next.get(nowMs) as TaskRow | undefined;
        if (!row) return undefined;
        this.st.take.run(nowMs, row.seq);
        return toRecord({ ...row, state: 'running', attempts: row.attempts + 1, updated_ms: nowMs });
      })
      .immediate();
  }

  async nextRunMs(): Promise<number | undefined> {
    return (this.st.nextRun.get() as { t: number | null }).t ?? undefined;
  }

  async finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean> {
    return this.st.finish.run(state, result, nowMs, id).changes === 1;
  }

  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return this.st.retry.run(nextRunMs, result, nowMs, id).changes === 1;
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.st.release.run(nowMs, nowMs, id).changes === 1;
  }

  async prune(beforeMs: number): Promise<number> {
    return this.st.prune.run(beforeMs).changes;
  }

  async requeueRunning(nowMs: number): Promise<number> {
    return this.st.requeue.run(nowMs, nowMs).changes;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
