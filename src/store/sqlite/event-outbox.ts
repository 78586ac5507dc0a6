/**
 * The event outbox on SQLite: the shared outbox (store/sql/event-outbox.ts) plus its write, which SqliteMetaStore
 * calls inside the (synchronous) transaction of the change an event reports; subscribers are told once that
 * transaction is over (a rolled back one only causes a wake-up that finds nothing). The same write marks the keys
 * the change replicates (OutboxRows.replicate, ports/replication.ts) in the replication outbox.
 */
import type Database from 'better-sqlite3';
import type { NewOutboxEvent, OutboxRows } from '../../ports/events.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { NEW_EVENT_COLUMNS, SqlEventOutbox } from '../sql/event-outbox.js';
import { MARK_SQL, markArgs, type SqlReplication } from '../sql/replication.js';
import type { SqliteSqlDb } from './sql-db.js';

export class SqliteEventOutbox extends SqlEventOutbox {
  private readonly insert: Database.Statement;
  private readonly mark: Database.Statement;

  /**
   * `db`: the store's connection (the write runs on it, inside the caller's transaction); `replication`: the
   * replication outbox whose subscribers hear of the marks written with a change.
   */
  constructor(
    db: Database.Database,
    sqlDb: SqliteSqlDb,
    owner: string,
    private readonly replication: SqlReplication,
  ) {
    super(sqlDb, owner);
    this.insert = db.prepare(`INSERT INTO ${NEW_EVENT_COLUMNS} VALUES (?, ?, 'waiting', 0, ?, ?, ?)`);
    this.mark = db.prepare(MARK_SQL);
  }

  /** Writes the events `rows` builds for `entry` (call inside the change's transaction, once it is sure to commit). */
  write(rows: OutboxRows | undefined, entry: ObjectRecord): void {
    if (!rows) return;
    const marks = rows.replicate?.(entry) ?? [];
    if (marks.length > 0) {
      for (const m of marks) this.mark.run(...markArgs(m));
      this.replication.scheduleNotify();
    }
    const events: NewOutboxEvent[] = rows(entry);
    for (const e of events) this.insert.run(e.id, e.payload, e.createdMs, e.createdMs, e.createdMs);
    if (events.length > 0) this.scheduleNotify();
  }
}
