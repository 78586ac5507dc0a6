/**
 * The EventOutbox port: the durable outbox of bucket event notifications (docs/development/kodo-protocol.md §8.6 `events/add`).
 * An event is written by the MetaStore in the SAME transaction as the change it reports (the optional `events`
 * argument of commitPut, deleteObject, copyObject, moveObject and updateObject), so a commit never loses its event
 * and a change that does not commit never emits one. The store knows nothing of Kodo: the payload is opaque JSON
 * text owned by events/outbox.ts.
 *
 * Life of an event: `waiting` → (claim) `running` → `done` (delivered) | `failed` (given up), or back to `waiting`
 * with a later `nextRunMs` for a retry. An event left `running` by a process that died is put back to `waiting`
 * (`requeueAbandoned`: at start and by the reaper of workers/, once the process's lease is gone): delivery is at
 * least once. A claim records the claiming process; later state changes require it.
 *
 * The embedded implementation is SQLite (store/sqlite/event-outbox.ts).
 */
import type { ObjectRecord } from './meta.js';

/** `waiting` (new or waiting for a retry), `running` (being delivered), `done` (delivered), `failed` (given up). */
export type OutboxState = 'waiting' | 'running' | 'done' | 'failed';

/** An event to write with a change: runnable at once. Times are Unix milliseconds. */
export interface NewOutboxEvent {
  id: string;
  /** What to deliver, JSON text (opaque to the store). */
  payload: string;
  createdMs: number;
}

/** One event of the outbox. Times are Unix milliseconds. */
export interface OutboxEvent {
  id: string;
  payload: string;
  state: OutboxState;
  /** Delivery attempts started so far (a claim counts one). */
  attempts: number;
  /** The last failure (while waiting for a retry or once failed) or where it was delivered, text. */
  result?: string;
  createdMs: number;
  updatedMs: number;
  /** A waiting event is not claimed before this time. */
  nextRunMs: number;
}

/**
 * Builds the events of a change inside its transaction: called only when the change commits, with the entry it
 * concerns (the new or replaced entry of a put, the deleted entry, the copy or moved entry at its target, the
 * updated entry). Returns the events to write in that transaction (none = nothing written).
 */
export type OutboxRows = (entry: ObjectRecord) => NewOutboxEvent[];

export interface EventOutbox {
  /**
   * Atomically takes the next waiting event whose `nextRunMs` ≤ `nowMs` (earliest `nextRunMs`, then the order
   * of writing): it becomes `running` with one more attempt. Undefined when none is runnable.
   */
  claim(nowMs: number): Promise<OutboxEvent | undefined>;
  /** The earliest `nextRunMs` of the waiting events (to arm a retry timer), or undefined when none waits. */
  nextRunMs(): Promise<number | undefined>;
  /** A running event ends (`done` or `failed`) with its result; false when it was not running any more. */
  finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean>;
  /** A running event waits again until `nextRunMs` (a retry), keeping `result` (the failure); false when not running. */
  retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean>;
  /** A running event this process gives up on while stopping goes back to `waiting`, its attempt not counted. */
  release(id: string, nowMs: number): Promise<boolean>;
  /**
   * Recovery: every `running` event whose owner holds no process lease (it died: workers/recovery.ts removes a
   * dead process's leases) goes back to
   * `waiting`; returns how many. A live process's events are never touched.
   */
  requeueAbandoned(nowMs: number): Promise<number>;
  /** Deletes `done`/`failed` events last updated before `beforeMs`; returns how many. */
  prune(beforeMs: number): Promise<number>;
  get(id: string): Promise<OutboxEvent | undefined>;
  /** The latest events, newest first, at most `limit` (diagnostics and tests). */
  recent(limit: number): Promise<OutboxEvent[]>;
  /** Calls `listener` after a transaction of this process wrote events; returns a function that unsubscribes. */
  subscribe(listener: () => void): () => void;
}
