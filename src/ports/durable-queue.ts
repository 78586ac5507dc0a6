/**
 * The DurableQueue port: what every durable queue of items retried on a timer has — the async-fetch tasks
 * (ports/fetch-tasks.ts, kind `fetch` of the task table of ports/tasks.ts) and the event outbox (ports/events.ts,
 * its own table because events are written inside the entry transactions). Both are claimed by the claim pump of
 * ports/claim-pump.ts. The pfop jobs (ports/job-queue.ts) share the life cycle in the store but are claimed per
 * pipeline and have a notifying phase, so their port is their own.
 *
 * Life of an item: `waiting` → (claim) `running` → `done` | `failed`, or back to `waiting` with a later
 * `nextRunMs` for a retry (the back-off, computed on the Clock port by the worker: tests move the clock instead of
 * waiting). A claim records the claiming process; every later state change is a compare-and-set on the state and
 * on that process. Implementation: store/sql/queue-view.ts over store/sql/queue-table.ts, on SQLite and PostgreSQL.
 * Times are Unix milliseconds.
 */

/** `waiting` (new or waiting for a retry), `running`, `done`, `failed` (given up). */
export type DurableQueueState = 'waiting' | 'running' | 'done' | 'failed';

export interface DurableQueue<T> {
  /**
   * Atomically takes the next waiting item whose `nextRunMs` ≤ `nowMs` (earliest `nextRunMs`, then the order of
   * queueing): it becomes `running` with one more attempt. Undefined when none is runnable.
   */
  claim(nowMs: number): Promise<T | undefined>;
  /** The earliest `nextRunMs` of the waiting items (to arm a retry timer), or undefined when none waits. */
  nextRunMs(): Promise<number | undefined>;
  /** A running item ends (`done` or `failed`) with its result; false when it was not running any more. */
  finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean>;
  /** A running item waits again until `nextRunMs` (a retry), keeping `result` (the last failure); false when not running. */
  retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean>;
  /**
   * A running item this process gives up on while stopping goes back to `waiting`, runnable at once, and its
   * attempt is not counted; false when it was not running any more.
   */
  release(id: string, nowMs: number): Promise<boolean>;
  /**
   * Recovery: every `running` item whose owner holds no process lease (it died: workers/recovery.ts removes a
   * dead process's leases) goes back to `waiting`; returns how many. A live process's items are never touched.
   */
  requeueAbandoned(nowMs: number): Promise<number>;
  /** Deletes `done`/`failed` items last updated before `beforeMs`; returns how many. */
  prune(beforeMs: number): Promise<number>;
  /** Calls `listener` when this process queued items (after their commit); returns a function that unsubscribes. */
  subscribe(listener: () => void): () => void;
}
