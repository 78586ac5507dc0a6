/**
 * The async-fetch tasks on SQLite, implementing the FetchTaskStore port: the rows of kind `fetch` of the one task
 * table `tasks` (schema.ts, ports/tasks.ts), the submitted request in `payload`. Claims and state changes are the
 * shared life cycle (queue-table.ts: IMMEDIATE transactions, so two processes sharing the data dir never take the
 * same task). Subscribers are told of tasks queued through this object (this process).
 */
import type Database from 'better-sqlite3';
import type { FetchTaskRecord, FetchTaskState, FetchTaskStore, NewFetchTask } from '../../ports/fetch-tasks.js';
import { SqliteQueueTable } from './queue-table.js';

interface TaskRow {
  seq: number;
  id: string;
  access_key: string;
  payload: string;
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
  request: r.payload,
  state: r.state,
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  createdMs: r.created_ms,
  updatedMs: r.updated_ms,
  nextRunMs: r.next_run_ms,
});

export class SqliteFetchTasks implements FetchTaskStore {
  private readonly st;
  private readonly queue: SqliteQueueTable<TaskRow, FetchTaskRecord>;

  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(
    private readonly db: Database.Database,
    owner: string,
  ) {
    this.queue = new SqliteQueueTable(db, { table: 'tasks', kind: 'fetch', toRecord, owner });
    this.st = {
      insert: db.prepare(
        `INSERT INTO tasks (id, kind, access_key, payload, state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES (?, 'fetch', ?, ?, 'waiting', 0, ?, ?, ?)`,
      ),
      get: db.prepare("SELECT * FROM tasks WHERE id = ? AND kind = 'fetch'"),
      running: db.prepare("SELECT COUNT(*) AS n FROM tasks WHERE kind = 'fetch' AND state = 'running'"),
      waitingBefore: db.prepare(
        `SELECT COUNT(*) AS n FROM tasks
         WHERE kind = 'fetch' AND state = 'waiting' AND (next_run_ms < ? OR (next_run_ms = ? AND seq < ?))`,
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
    }).immediate();
    this.queue.notify();
    return { ahead };
  }

  async get(id: string): Promise<(FetchTaskRecord & { ahead: number }) | undefined> {
    return this.db.transaction(() => {
      const row = this.st.get.get(id) as TaskRow | undefined;
      return row ? { ...toRecord(row), ahead: this.aheadOf(row) } : undefined;
    })();
  }

  async list(accessKey: string | undefined, before: number | undefined, limit: number): Promise<{ tasks: FetchTaskRecord[]; next?: number }> {
    const where: string[] = ["kind = 'fetch'"];
    const args: Array<string | number> = [];
    if (accessKey !== undefined) {
      where.push('access_key = ?');
      args.push(accessKey);
    }
    if (before !== undefined) {
      where.push('seq < ?');
      args.push(before);
    }
    const sql = `SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(...args, limit + 1) as TaskRow[];
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { tasks: page.map(toRecord), ...(rows.length > limit && last ? { next: last.seq } : {}) };
  }

  async claim(nowMs: number): Promise<FetchTaskRecord | undefined> {
    return this.queue.claim(nowMs);
  }

  async nextRunMs(): Promise<number | undefined> {
    return this.queue.nextRunMs();
  }

  async finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean> {
    return this.queue.finish(id, state, result, nowMs);
  }

  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return this.queue.retryAt(id, nextRunMs, result, nowMs);
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.queue.release(id, nowMs);
  }

  async prune(beforeMs: number): Promise<number> {
    return this.queue.prune(beforeMs);
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.queue.requeueAbandoned(nowMs);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
