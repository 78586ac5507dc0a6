/**
 * The async-fetch tasks on PostgreSQL, implementing the FetchTaskStore port (ports/fetch-tasks.ts) with the
 * semantics of store/sqlite/fetch-tasks.ts: the rows of kind `fetch` of the one task table `tasks` (schema.ts,
 * ports/tasks.ts), the request in `payload`. Claims and state changes: the shared life cycle of
 * queue-table.ts (SKIP LOCKED, compare-and-set on the owner). `seq` (bigserial) orders submissions and is the
 * list cursor. Subscribers are told of tasks queued through this object (this process) once committed; other
 * nodes' submissions reach this one through the wake-up counter (wake.ts). Times in Unix ms.
 */
import type { FetchTaskRecord, FetchTaskState, FetchTaskStore, NewFetchTask } from '../../ports/fetch-tasks.js';
import type { PgDb } from './db.js';
import { PgQueueTable } from './queue-table.js';

interface TaskRow {
  seq: bigint;
  id: string;
  access_key: string;
  payload: string;
  state: FetchTaskState;
  attempts: number;
  result: string | null;
  created_ms: bigint;
  updated_ms: bigint;
  next_run_ms: bigint;
}

const toRecord = (r: TaskRow): FetchTaskRecord => ({
  id: r.id,
  accessKey: r.access_key,
  request: r.payload,
  state: r.state,
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
  nextRunMs: Number(r.next_run_ms),
});

/** Tasks ahead of the row `f`: every running task plus the waiting ones claimed before it (one snapshot). */
const AHEAD = `(SELECT COUNT(*) FROM tasks WHERE kind = 'fetch' AND state = 'running')
  + (SELECT COUNT(*) FROM tasks w WHERE w.kind = 'fetch' AND w.state = 'waiting'
       AND (w.next_run_ms < f.next_run_ms OR (w.next_run_ms = f.next_run_ms AND w.seq < f.seq)))`;

export class PgFetchTasks implements FetchTaskStore {
  private readonly queue: PgQueueTable<TaskRow, FetchTaskRecord>;

  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(
    private readonly db: PgDb,
    owner: string,
  ) {
    this.queue = new PgQueueTable(db, { table: 'tasks', kind: 'fetch', toRecord, owner });
  }

  async enqueue(task: NewFetchTask): Promise<{ ahead: number }> {
    // One statement: the insert, then `ahead` counted on the snapshot before it (the new row is not ahead of itself).
    const { rows } = await this.db.query<{ ahead: bigint }>(
      `WITH f AS (
         INSERT INTO tasks (id, kind, access_key, payload, state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES ($1, 'fetch', $2, $3, 'waiting', 0, $4, $4, $4) RETURNING seq, next_run_ms)
       SELECT ${AHEAD} AS ahead FROM f`,
      [task.id, task.accessKey, task.request, task.createdMs],
    );
    this.queue.notify();
    return { ahead: Number(rows[0]?.ahead ?? 0) };
  }

  async get(id: string): Promise<(FetchTaskRecord & { ahead: number }) | undefined> {
    const { rows } = await this.db.query<TaskRow & { ahead: bigint }>(
      `SELECT f.*, ${AHEAD} AS ahead FROM tasks f WHERE f.id = $1 AND f.kind = 'fetch'`,
      [id],
    );
    const row = rows[0];
    return row ? { ...toRecord(row), ahead: Number(row.ahead) } : undefined;
  }

  async list(accessKey: string | undefined, before: number | undefined, limit: number): Promise<{ tasks: FetchTaskRecord[]; next?: number }> {
    const where: string[] = ["kind = 'fetch'"];
    const args: Array<string | number> = [];
    if (accessKey !== undefined) {
      args.push(accessKey);
      where.push(`access_key = $${args.length}`);
    }
    if (before !== undefined) {
      args.push(before);
      where.push(`seq < $${args.length}`);
    }
    args.push(limit + 1);
    const sql = `SELECT * FROM tasks WHERE ${where.join(' AND ')}
                 ORDER BY seq DESC LIMIT $${args.length}`;
    const { rows } = await this.db.query<TaskRow>(sql, args);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { tasks: page.map(toRecord), ...(rows.length > limit && last ? { next: Number(last.seq) } : {}) };
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
