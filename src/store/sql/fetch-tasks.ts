/**
 * The async-fetch tasks, implementing the FetchTaskStore port (ports/fetch-tasks.ts) on SQLite and PostgreSQL
 * (db.ts): the rows of kind `fetch` of the one task table `tasks` (ports/tasks.ts), the submitted request in
 * `payload`. Claims and state changes are the shared life cycle (queue-view.ts, queue-table.ts). `seq` orders
 * submissions and is the list cursor. Subscribers are told of tasks queued through this object (this process)
 * once committed; other processes learn of them by the coordinator's wake-ups (workers/coordinator.ts). Times in
 * Unix ms.
 */
import type { FetchTaskRecord, FetchTaskState, FetchTaskStore, NewFetchTask } from '../../ports/fetch-tasks.js';
import type { SqlDb } from './db.js';
import { QueueTable } from './queue-table.js';
import { QueueView } from './queue-view.js';

interface TaskRow {
  seq: number | bigint;
  id: string;
  access_key: string;
  payload: string;
  state: FetchTaskState;
  attempts: number;
  result: string | null;
  created_ms: number | bigint;
  updated_ms: number | bigint;
  next_run_ms: number | bigint;
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

const INSERT = `INSERT INTO tasks (id, kind, access_key, payload, state, attempts, created_ms, updated_ms, next_run_ms)
  VALUES (?, 'fetch', ?, ?, 'waiting', 0, ?, ?, ?)`;

export class SqlFetchTasks extends QueueView<TaskRow, FetchTaskRecord> implements FetchTaskStore {
  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(
    private readonly db: SqlDb,
    owner: string,
  ) {
    super(new QueueTable(db, { table: 'tasks', kind: 'fetch', toRecord, owner }));
  }

  async enqueue(task: NewFetchTask): Promise<{ ahead: number }> {
    const args = [task.id, task.accessKey, task.request, task.createdMs, task.createdMs, task.createdMs];
    let ahead: number | bigint | undefined;
    if (this.db.writableCte) {
      // One statement: the insert, then `ahead` counted on the snapshot before it (the new row is not ahead of itself).
      ahead = (await this.db.get<{ ahead: bigint }>(`WITH f AS (${INSERT} RETURNING seq, next_run_ms) SELECT ${AHEAD} AS ahead FROM f`, args))
        ?.ahead;
    } else {
      // One transaction: the insert, then `ahead` counted with it (not ahead of itself: `seq <`).
      const [, counted] = await this.db.batch([
        { sql: INSERT, args },
        { sql: `SELECT ${AHEAD} AS ahead FROM tasks f WHERE f.id = ? AND f.kind = 'fetch'`, args: [task.id] },
      ]);
      ahead = (counted!.rows[0] as { ahead: number } | undefined)?.ahead;
    }
    this.queue.notify();
    return { ahead: Number(ahead ?? 0) };
  }

  async get(id: string): Promise<(FetchTaskRecord & { ahead: number }) | undefined> {
    const row = await this.db.get<TaskRow & { ahead: number | bigint }>(
      `SELECT f.*, ${AHEAD} AS ahead FROM tasks f WHERE f.id = ? AND f.kind = 'fetch'`,
      [id],
    );
    return row ? { ...toRecord(row), ahead: Number(row.ahead) } : undefined;
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
    const rows = await this.db.all<TaskRow>(`SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, [
      ...args,
      limit + 1,
    ]);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { tasks: page.map(toRecord), ...(rows.length > limit && last ? { next: Number(last.seq) } : {}) };
  }
}
