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
 * Implementation: store/sql/event-outbox.ts, with the write of each backend in store/sqlite/event-outbox.ts and
 * store/postgres/event-outbox.ts.
 */
import type { DurableQueue } from './durable-queue.js';
import type { ObjectRecord } from './object-record.js';
import type { ReplicationMark } from './replication.js';

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
export type OutboxRows = ((entry: ObjectRecord) => NewOutboxEvent[]) & {
  /**
   * Bucket replication (ports/replication.ts): the keys this change marks for replication, written in the same
   * transaction into the replication outbox (called with the same entry). Absent: none.
   */
  replicate?: (entry: ObjectRecord) => ReplicationMark[];
};

/** The outbox: the life cycle of every durable queue (ports/durable-queue.ts), plus reads for diagnostics. */
export interface EventOutbox extends DurableQueue<OutboxEvent> {
  get(id: string): Promise<OutboxEvent | undefined>;
  /** The latest events, newest first, at most `limit` (diagnostics and tests). */
  recent(limit: number): Promise<OutboxEvent[]>;
}
