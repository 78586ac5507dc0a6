/**
 * The FetchTaskStore port: the async-fetch tasks (docs/development/kodo-protocol.md §8.5 `POST /sisyphus/fetch`), the view of kind
 * `fetch` of the one durable task queue (ports/tasks.ts; the other kind is the pfop jobs of ports/job-queue.ts,
 * with the same life cycle in the same table). The store knows nothing of Kodo: the request and the result are
 * opaque JSON texts owned by objects/fetch/async-fetch.ts.
 *
 * Life of a task: `waiting` → (claim) `running` → `done` | `failed`, or back to `waiting` with a later
 * `nextRunMs` for a retry. A task left `running` by a process that died is put back to `waiting`
 * (`requeueAbandoned`: at start and by the reaper of workers/, once the process's lease is gone), so it runs
 * again: storing is atomic, a retry cannot leave a partial object. A claim records the claiming process; later
 * state changes require it (store/sql/queue-table.ts). A retry's `nextRunMs` is counted on the Clock.
 *
 * Implementation: store/sql/fetch-tasks.ts (SQLite and PostgreSQL).
 */
import type { DurableQueue } from './durable-queue.js';

/** `waiting` (queued or waiting for a retry), `running`, `done` (stored or skipped), `failed` (final). */
export type FetchTaskState = 'waiting' | 'running' | 'done' | 'failed';

/** One task. Times are Unix milliseconds. */
export interface FetchTaskRecord {
  id: string;
  /** AccessKey of the submitter (the task runs with its rights and signs its callback with its pair). */
  accessKey: string;
  /** The submitted request, JSON text. */
  request: string;
  state: FetchTaskState;
  /** Attempts started so far (a claim counts one). */
  attempts: number;
  /** The outcome (or, while waiting for a retry, the last error), JSON text. */
  result?: string;
  createdMs: number;
  updatedMs: number;
  /** A waiting task is not claimed before this time. */
  nextRunMs: number;
}

/** A task to queue: runnable at once. */
export interface NewFetchTask {
  id: string;
  accessKey: string;
  request: string;
  createdMs: number;
}

/** The tasks: the life cycle of every durable queue (ports/durable-queue.ts), plus queueing and reads. */
export interface FetchTaskStore extends DurableQueue<FetchTaskRecord> {
  /**
   * Queues a new waiting task, durably, then tells the subscribers. Returns how many tasks are ahead of it:
   * the running ones plus the waiting ones that will be claimed before it.
   */
  enqueue(task: NewFetchTask): Promise<{ ahead: number }>;
  /**
   * A page of tasks, newest first (the console's Processing screen): `accessKey`'s (every account's when undefined),
   * queued before the task of sequence `before` (absent = the newest), at most `limit`; `next` is the `before` of the
   * following page, absent on the last one. Finished tasks are pruned after a while, so old ones are not listed.
   */
  list(accessKey: string | undefined, before: number | undefined, limit: number): Promise<{ tasks: FetchTaskRecord[]; next?: number }>;
  /** The task, with `ahead` as in `enqueue` (meaningful while it waits); undefined when unknown. */
  get(id: string): Promise<(FetchTaskRecord & { ahead: number }) | undefined>;
}
