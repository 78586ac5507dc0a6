/**
 * The event outbox on SQLite: the shared outbox (store/sql/event-outbox.ts) plus its write, which SqliteMetaStore
 * calls inside the (synchronous) transaction of the change an event reports; subscribers are told once that
 * transaction is over (a rolled back one only causes a wake-up that finds nothing).
 */
import type Database from 'better-sqlite3';
import type { NewOutboxEvent, OutboxRows } from '../../ports/events.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { NEW_EVENT_COLUMNS, SqlEventOutbox } from '../sql/event-outbox.js';
import type { SqliteSqlDb } from './sql-db.js';

export class SqliteEventOutbox extends SqlEventOutbox {
  private readonly insert: Database.Statement;

  /** `db`: the store's connection (the write runs on it, inside the caller's transaction). */
  constructor(db: Database.Database, sqlDb: SqliteSqlDb, owner: string) {
    super(sqlDb, owner);
    this.insert = db.prepare(`INSERT INTO ${NEW_EVENT_COLUMNS} VALUES (?, ?, 'waiting', 0, ?, ?, ?)`);
  }

  /** Writes the events `rows` builds for `entry` (call inside the change's transaction, once it is sure to commit). */
  write(rows: OutboxRows | undefined, entry: ObjectRecord): void {
    if (!rows) return;
    const events: NewOutboxEvent[] = rows(entry);
    for (const e of events) this.insert.run(e.id, e.payload, e.createdMs, e.createdMs, e.createdMs);
    if (events.length > 0) this.scheduleNotify();
  }
}
