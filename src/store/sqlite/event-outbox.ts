/**
 * The event outbox on SQLite (table `event_outbox`, schema.ts), implementing the EventOutbox port. `write` is
 * called by SqliteMetaStore inside the transaction of the change an event reports; subscribers are told once that
 * (synchronous) transaction is over. Claims run in an IMMEDIATE transaction, so two processes sharing the data dir
 * never take the same event; every state change is a compare-and-set on `running`. The life cycle is the one of the
 * task queue (queue-table.ts), on its own table because events are written inside the entry transactions.
 */
import type Database from 'better-sqlite3';
import type { EventOutbox, NewOutboxEvent, OutboxEvent, OutboxRows, OutboxState } from '../../ports/events.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { SqliteQueueTable } from './queue-table.js';

interface EventRow {
  seq: number;
  id: string;
  payload: string;
  state: OutboxState;
  attempts: number;
  result: string | null;
  created_ms: number;
  updated_ms: number;
  next_run_ms: number;
}

const toEvent = (r: EventRow): OutboxEvent => ({
  id: r.id,
  payload: r.payload,
  state: r.state,
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  createdMs: r.created_ms,
  updatedMs: r.updated_ms,
  nextRunMs: r.next_run_ms,
});

export class SqliteEventOutbox implements EventOutbox {
  private readonly st;
  private readonly queue: SqliteQueueTable<EventRow, OutboxEvent>;
  private notifyScheduled = false;

  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(db: Database.Database, owner: string) {
    this.queue = new SqliteQueueTable(db, { table: 'event_outbox', toRecord: toEvent, owner });
    this.st = {
      insert: db.prepare(
        `INSERT INTO event_outbox (id, payload, state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES (?, ?, 'waiting', 0, ?, ?, ?)`,
      ),
      get: db.prepare('SELECT * FROM event_outbox WHERE id = ?'),
      recent: db.prepare('SELECT * FROM event_outbox ORDER BY seq DESC LIMIT ?'),
    };
  }

  /**
   * Writes the events `rows` builds for `entry` (call inside the change's transaction, once it is sure to
   * commit). Subscribers are told after the transaction (better-sqlite3 transactions are synchronous; a rolled
   * back one only causes a wake-up that finds nothing).
   */
  write(rows: OutboxRows | undefined, entry: ObjectRecord): void {
    if (!rows) return;
    const events: NewOutboxEvent[] = rows(entry);
    for (const e of events) this.st.insert.run(e.id, e.payload, e.createdMs, e.createdMs, e.createdMs);
    if (events.length > 0 && !this.notifyScheduled) {
      this.notifyScheduled = true;
      setImmediate(() => {
        this.notifyScheduled = false;
        this.queue.notify();
      });
    }
  }

  async claim(nowMs: number): Promise<OutboxEvent | undefined> {
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

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.queue.requeueAbandoned(nowMs);
  }

  async prune(beforeMs: number): Promise<number> {
    return this.queue.prune(beforeMs);
  }

  async get(id: string): Promise<OutboxEvent | undefined> {
    const row = this.st.get.get(id) as EventRow | undefined;
    return row ? toEvent(row) : undefined;
  }

  async recent(limit: number): Promise<OutboxEvent[]> {
    return (this.st.recent.all(limit) as EventRow[]).map(toEvent);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
