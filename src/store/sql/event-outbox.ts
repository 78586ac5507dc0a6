/**
 * The event outbox (table `event_outbox`), implementing the EventOutbox port (ports/events.ts) on SQLite and
 * PostgreSQL (db.ts): the life cycle of every durable queue (queue-view.ts, queue-table.ts) on its own table
 * because events are written inside the entry transactions, plus the reads. The write itself is each backend's,
 * because it runs inside that backend's entry transaction: store/sqlite/event-outbox.ts (synchronous, in the
 * better-sqlite3 transaction) and store/postgres/event-outbox.ts (on the transaction's client). Subscribers are
 * told once the writing transaction is over (`scheduleNotify`). Times in Unix ms.
 */
import type { OutboxEvent, OutboxState } from '../../ports/events.js';
import type { EventOutbox } from '../../ports/events.js';
import type { SqlDb } from './db.js';
import { QueueTable } from './queue-table.js';
import { QueueView } from './queue-view.js';

interface EventRow {
  seq: number | bigint;
  id: string;
  payload: string;
  state: OutboxState;
  attempts: number;
  result: string | null;
  created_ms: number | bigint;
  updated_ms: number | bigint;
  next_run_ms: number | bigint;
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

/** The columns of a new event's row; each event binds (id, payload, createdMs) to `NEW_EVENT_VALUES`. */
export const NEW_EVENT_COLUMNS = 'event_outbox (id, payload, state, attempts, created_ms, updated_ms, next_run_ms)';

export class SqlEventOutbox extends QueueView<EventRow, OutboxEvent> implements EventOutbox {
  private notifyScheduled = false;

  /** `owner`: the identity of this process (recorded on claims; queue-table.ts). */
  constructor(
    protected readonly sqlDb: SqlDb,
    owner: string,
  ) {
    super(new QueueTable(sqlDb, { table: 'event_outbox', toRecord: toEvent, owner }));
  }

  /** Tells the subscribers on the next turn of the event loop (once for every write until then). */
  protected scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      this.queue.notify();
    });
  }

  async get(id: string): Promise<OutboxEvent | undefined> {
    const row = await this.sqlDb.get<EventRow>('SELECT * FROM event_outbox WHERE id = ?', [id]);
    return row ? toEvent(row) : undefined;
  }

  async recent(limit: number): Promise<OutboxEvent[]> {
    return (await this.sqlDb.all<EventRow>('SELECT * FROM event_outbox ORDER BY seq DESC LIMIT ?', [limit])).map(toEvent);
  }
}
