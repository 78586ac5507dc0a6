/**
 * The one task queue on SQLite (table `tasks`, schema.ts), implementing the TaskQueue port (ports/tasks.ts): what
 * concerns every kind at once — recovery of a dead process's tasks in one statement, and the depth by kind. The
 * kind-specific views are jobs.ts (JobQueue) and fetch-tasks.ts (FetchTaskStore); all three share the life cycle
 * of queue-table.ts. Old data dirs: tasks-migration.ts moves the rows of the earlier `jobs` and `fetch_tasks`.
 */
import type Database from 'better-sqlite3';
import { countKinds, emptyDepth, type TaskDepth, type TaskKind, type TaskQueue } from '../../ports/tasks.js';
import { SqliteQueueTable } from './queue-table.js';

export class SqliteTasks implements TaskQueue {
  private readonly all: SqliteQueueTable<{ seq: number; attempts: number }, unknown>;
  private readonly depthQuery;

  /** `owner`: the identity of this process (queue-table.ts). */
  constructor(db: Database.Database, owner: string) {
    this.all = new SqliteQueueTable(db, { table: 'tasks', toRecord: (r) => r, owner });
    this.depthQuery = db.prepare(
      "SELECT kind, state, COUNT(*) AS n FROM tasks WHERE state IN ('waiting', 'running', 'notifying') GROUP BY kind, state",
    );
  }

  async requeueAbandoned(nowMs: number): Promise<Record<TaskKind, number>> {
    return countKinds(this.all.requeueAbandonedKinds(nowMs));
  }

  async depth(): Promise<Record<TaskKind, TaskDepth>> {
    const out = emptyDepth();
    for (const r of this.depthQuery.all() as { kind: TaskKind; state: keyof TaskDepth; n: number }[]) {
      if (out[r.kind]) out[r.kind][r.state] = r.n;
    }
    return out;
  }
}
