/**
 * The event outbox on SQLite (table `event_outbox`, schema.ts), implementing the EventOutbox port. `write` is
 * called by SqliteMetaStore inside the transaction of the change an event reports; subscribers are told once that
 * (synchronous) transaction is over. Claims run in an IMMEDIATE transaction, so two processes sharing the data dir
 * never take the same event; every state change is a compare-and-set on `running`.
 */
import type Database from 'better-sqlite3';
import type { EventOutbox, NewOutboxEvent, OutboxEvent, OutboxRows, OutboxState } from '../events.js';
import type { ObjectRecord } from '../meta.js';

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
  private readonly listeners = new Set<() => void>();
  private notifyScheduled = false;

  constructor(private readonly db: Database.Database) {
    this.st = {
      insert: db.prepare(
        `INSERT INTO event_outbox (id, payload, state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES (?, ?, 'waiting', 0, ?, ?, ?)`,
      ),
      get: db.prepare('SELECT * FROM event_outbox WHERE id = ?'),
      recent: db.prepare('SELECT * FROM event_outbox ORDER BY seq DESC LIMIT ?'),
      next: db.prepare(
        "SELECT * FROM event_outbox WHERE state = 'waiting' AND next_run_ms <= ? ORDER BY next_run_ms, seq LIMIT 1",
      ),
      take: db.prepare("UPDATE event_outbox SET state = 'running', attempts = attempts + 1, updated_ms = ? WHERE seq = ?"),
      nextRun: db.prepare("SELECT MIN(next_run_ms) AS t FROM event_outbox WHERE state = 'waiting'"),
      finish: db.prepare("UPDATE event_outbox SET state = ?, result = ?, updated_ms = ? WHERE id = ? AND state = 'running'"),
      retry: db.prepare(
        `UPDATE event_outbox SET state = 'waiting', next_run_ms = ?, result = ?, updated_ms = ?
         WHERE id = ? AND state = 'running'`,
      ),
      release: db.prepare(
        `UPDATE event_outbox SET state = 'waiting', attempts = MAX(attempts - 1, 0), next_run_ms = ?, updated_ms = ?
         WHERE id = ? AND state = 'running'`,
      ),
      requeue: db.prepare("UPDATE event_outbox SET state = 'waiting', next_run_ms = ?, updated_ms = ? WHERE state = 'running'"),
      prune: db.prepare("DELETE FROM event_outbox WHERE state IN ('done', 'failed') AND updated_ms < ?"),
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
        for (const listener of this.listeners) {
          try {
            listener();
          } catch {
            // a listener's failure must not reach the committed change
          }
        }
      });
    }
  }

  async claim(nowMs: number): Promise<OutboxEvent | undefined> {
    return this.db
      .transaction(() => {
        const row = this.st.next.get(nowMs) as EventRow | undefined;
        if (!row) return undefined;
        this.st.take.run(nowMs, row.seq);
        return toEvent({ ...row, state: 'running', attempts: row.attempts + 1, updated_ms: nowMs });
      })
      .immediate();
  }

  async nextRunMs(): Promise<number | undefined> {
    return (this.st.nextRun.get() as { t: number | null }).t ?? undefined;
  }

  async finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean> {
    return this.st.finish.run(state, result, nowMs, id).changes === 1;
  }

  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return this.st.retry.run(nextRunMs, result, nowMs, id).changes === 1;
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.st.release.run(nowMs, nowMs, id).changes === 1;
  }

  async requeueRunning(nowMs: number): Promise<number> {
    return this.st.requeue.run(nowMs, nowMs).changes;
  }

  async prune(beforeMs: number): Promise<number> {
    return this.st.prune.run(beforeMs).changes;
  }

  async get(id: string): Promise<OutboxEvent | undefined> {
    const row = this.st.get.get(id) as EventRow | undefined;
    return row ? toEvent(row) : undefined;
  }

  async recent(limit: number): Promise<OutboxEvent[]> {
    return (this.st.recent.all(limit) as EventRow[]).map(toEvent);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
