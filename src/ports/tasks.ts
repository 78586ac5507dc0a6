/**
 * The TaskQueue port: the ONE durable queue of background work, with two task kinds — `job` (persistent
 * processing, docs/development/kodo-protocol.md §9: pfop and persistentOps) and `fetch` (async fetch, docs/development/kodo-protocol.md §8.5
 * `POST /sisyphus/fetch`). Both kinds live in one table `tasks` (store/sql/tasks.ts, the same code on SQLite and
 * PostgreSQL) and share one life cycle, written once (store/sql/queue-table.ts):
 *
 *   waiting ──claim──▶ running ──▶ done | failed                 (the final result kept in `result`)
 *      ▲                 │  └──▶ notifying ──▶ done               (jobs: items final, notify URL being called)
 *      └──retryAt/release/requeueAbandoned──┘
 *
 * - a claim takes a due row (`next_run_ms` ≤ now; fetch tasks: earliest `next_run_ms`, then submission order;
 *   jobs: per pipeline, type 0 before type 1, then submission order) and records the claiming process (`owner`);
 *   every later state change is a compare-and-set on the state AND that owner;
 * - `retryAt` puts a running row back with a later `next_run_ms` (the back-off, computed from the Clock port by
 *   the worker: tests move the clock instead of waiting); `release` hands it back at shutdown, its attempt not
 *   counted; `requeueAbandoned` takes back the running rows of processes whose `process:` lease is gone.
 *
 * The kind-specific views the routes and workers use are the JobQueue (ports/job-queue.ts: adds pipelines, item
 * outcomes and the notifying phase) and the FetchTaskStore (ports/fetch-tasks.ts: adds `ahead`). This port holds
 * what concerns every kind at once: recovery (workers/recovery.ts) and the queue depth.
 */

/** The kinds of task in the one queue. */
export type TaskKind = 'job' | 'fetch';

/** Every kind, in a fixed order. */
export const TASK_KINDS: readonly TaskKind[] = ['job', 'fetch'];

/** Unfinished tasks of one kind by state (metrics and the console's queue depth). */
export interface TaskDepth {
  waiting: number;
  running: number;
  /** Jobs whose notify URL is being called (always 0 for fetch tasks). */
  notifying: number;
}

export interface TaskQueue {
  /**
   * Recovery, every kind in one statement: every `running` task whose owner holds no process lease (it died:
   * workers/recovery.ts removes a dead process's leases) goes back to `waiting` (runnable at `nowMs`, Unix ms;
   * its attempt counted), and such `notifying` jobs lose their owner (JobQueue.claimNotifying takes them).
   * Returns how many went back to waiting, by kind. A live process's tasks are never touched.
   */
  requeueAbandoned(nowMs: number): Promise<Record<TaskKind, number>>;
  /** Unfinished tasks by kind and state. */
  depth(): Promise<Record<TaskKind, TaskDepth>>;
}

/** Zero of every kind, then one per element of `kinds` (unknown kinds ignored). */
export function countKinds(kinds: readonly string[]): Record<TaskKind, number> {
  const out = Object.fromEntries(TASK_KINDS.map((k) => [k, 0])) as Record<TaskKind, number>;
  for (const k of kinds) if (k in out) out[k as TaskKind]++;
  return out;
}

/** A depth of zero for every kind. */
export function emptyDepth(): Record<TaskKind, TaskDepth> {
  return Object.fromEntries(TASK_KINDS.map((k) => [k, { waiting: 0, running: 0, notifying: 0 }])) as Record<TaskKind, TaskDepth>;
}
