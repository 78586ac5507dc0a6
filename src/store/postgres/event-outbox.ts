/**
 * The event outbox on PostgreSQL (table `event_outbox`, schema.ts), implementing the EventOutbox port
 * (ports/events.ts) with the semantics of store/sqlite/event-outbox.ts. `write(c, rows, entry)` is called by the
 * MetaStore's entry changes inside their transaction, on that transaction's client `c`: the events commit or roll
 * back with the change. Subscribers (this process) are told once that transaction has committed (PgDb.afterCommit;
 * a burst of commits in one turn of the event loop tells them once), never for one rolled back. Other nodes learn
 * of new events through the wake-up counter (wake.ts). Claims and state changes: queue-table.ts (the life cycle of
 * the task queue, on its own table because events are written inside the entry transactions). Times in Unix ms.
 */
import type { EventOutbox, NewOutboxEvent, OutboxEvent, OutboxRows, OutboxState } from '../../ports/events.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { PgDb, Queryable } from './db.js';
import { PgQueueTable } from './queue-table.js';

interface EventRow {
  seq: bigint;
  id: string;
  payload: string;
  state: OutboxState;
  attempts: number;
  result: string | null;
  created_ms: bigint;
  updated_ms: bigint;
  next_run_ms: bigint;
}

const toEvent = (r: EventRow): OutboxEvent => ({
  id: r.id,
  payload: r.payload,
  state: r.state,
  attempts: r.attempts,
  ...(r.result !== null ? { result: r.result } : {}),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
  nextRunMs: Number(r.next_run_ms),
});

export class PgEventOutboxStore implements EventOutbox {
  private readonly queue: PgQueueTable<EventRow, OutboxEvent>;
  private notifyScheduled = false;

  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(
    private readonly db: PgDb,
    owner: string,
  ) {
    this.queue = new PgQueueTable(db, { table: 'event_outbox', toRecord: toEvent, owner });
  }

  /**
   * Inserts the events `rows` builds for `entry` on `c` (a client inside the change's transaction, called once
   * the change is sure to commit; one INSERT for all of them). Nothing when `rows` is undefined or builds none.
   * Throws what PostgreSQL throws (e.g. a duplicate id: the caller's transaction rolls back).
   */
  async write(c: Queryable, rows: OutboxRows | undefined, entry: ObjectRecord): Promise<void> {
    if (!rows) return;
    const events: NewOutboxEvent[] = rows(entry);
    if (events.length === 0) return;
    const args: Array<string | number> = [];
    const values = events.map((e) => {
      args.push(e.id, e.payload, e.createdMs);
      const n = args.length;
      return `($${n - 2}, $${n - 1}, 'waiting', 0, $${n}, $${n}, $${n})`;
    });
    await c.query(
      `INSERT INTO event_outbox (id, payload, state, attempts, created_ms, updated_ms, next_run_ms)
       VALUES ${values.join(', ')}`,
      args,
    );
    this.db.afterCommit(c, () => this.scheduleNotify());
  }

  /** Tells the subscribers on the next turn of the event loop (once for every commit until then). */
  private scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      this.queue.notify();
    });
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
    const { rows } = await this.db.query<EventRow>('SELECT * FROM event_outbox WHERE id = $1', [id]);
    return rows[0] ? toEvent(rows[0]) : undefined;
  }

  async recent(limit: number): Promise<OutboxEvent[]> {
    const { rows } = await this.db.query<EventRow>('SELECT * FROM event_outbox ORDER BY seq DESC LIMIT $1', [limit]);
    return rows.map(toEvent);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
