/**
 * The one task queue on PostgreSQL (table `tasks`, schema.ts), implementing the TaskQueue port (ports/tasks.ts)
 * with the semantics of store/sqlite/tasks.ts: recovery of a dead process's tasks of every kind in one
 * transaction, and the depth by kind. The kind-specific views are jobs.ts (JobQueue) and fetch-tasks.ts
 * (FetchTaskStore); all three share the life cycle of queue-table.ts.
 */
import { countKinds, emptyDepth, type TaskDepth, type TaskKind, type TaskQueue } from '../../ports/tasks.js';
import type { PgDb } from './db.js';
import { PgQueueTable, type PgQueueRow } from './queue-table.js';

export class PgTasks implements TaskQueue {
  private readonly all: PgQueueTable<PgQueueRow, unknown>;

  /** `owner`: the identity of this process (queue-table.ts). */
  constructor(
    private readonly db: PgDb,
    owner: string,
  ) {
    this.all = new PgQueueTable(db, { table: 'tasks', toRecord: (r) => r, owner });
  }

  async requeueAbandoned(nowMs: number): Promise<Record<TaskKind, number>> {
    return countKinds(await this.all.requeueAbandonedKinds(nowMs));
  }

  async depth(): Promise<Record<TaskKind, TaskDepth>> {
    const out = emptyDepth();
    const { rows } = await this.db.query<{ kind: TaskKind; state: keyof TaskDepth; n: bigint }>(
      "SELECT kind, state, COUNT(*) AS n FROM tasks WHERE state IN ('waiting', 'running', 'notifying') GROUP BY kind, state",
    );
    for (const r of rows) if (out[r.kind]) out[r.kind][r.state] = Number(r.n);
    return out;
  }
}
