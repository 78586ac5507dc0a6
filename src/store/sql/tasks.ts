/**
 * The one task queue (table `tasks`), implementing the TaskQueue port (ports/tasks.ts) on SQLite and PostgreSQL
 * (db.ts): what concerns every kind at once — recovery of a dead process's tasks of every kind in one transaction,
 * and the depth by kind. The kind-specific views are jobs.ts (JobQueue) and fetch-tasks.ts (FetchTaskStore); all
 * three share the life cycle of queue-table.ts.
 */
import { countKinds, emptyDepth, type TaskDepth, type TaskKind, type TaskQueue } from '../../ports/tasks.js';
import type { SqlDb } from './db.js';
import { QueueTable } from './queue-table.js';

const DEPTH = "SELECT kind, state, COUNT(*) AS n FROM tasks WHERE state IN ('waiting', 'running', 'notifying') GROUP BY kind, state";

export class SqlTasks implements TaskQueue {
  private readonly all: QueueTable<unknown, unknown>;

  /** `owner`: the identity of this process (queue-table.ts). */
  constructor(
    private readonly db: SqlDb,
    owner: string,
  ) {
    this.all = new QueueTable(db, { table: 'tasks', toRecord: (r) => r, owner });
  }

  async requeueAbandoned(nowMs: number): Promise<Record<TaskKind, number>> {
    return countKinds(await this.all.requeueAbandonedKinds(nowMs));
  }

  async depth(): Promise<Record<TaskKind, TaskDepth>> {
    const out = emptyDepth();
    for (const r of await this.db.all<{ kind: TaskKind; state: keyof TaskDepth; n: number | bigint }>(DEPTH)) {
      if (out[r.kind]) out[r.kind][r.state] = Number(r.n);
    }
    return out;
  }
}
