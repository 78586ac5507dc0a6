/**
 * The event outbox on PostgreSQL: the shared outbox (store/sql/event-outbox.ts) plus its write, which the
 * MetaStore's entry changes call inside their transaction, on that transaction's client `c`: the events commit or
 * roll back with the change. Subscribers (this process) are told once that transaction has committed
 * (PgDb.afterCommit; a burst of commits in one turn of the event loop tells them once), never for one rolled back.
 * Other nodes learn of new events through the wake-up counter (wake.ts). The same write marks the keys the change
 * replicates (OutboxRows.replicate, ports/replication.ts) in the replication outbox.
 */
import type { NewOutboxEvent, OutboxRows } from '../../ports/events.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { NEW_EVENT_COLUMNS, SqlEventOutbox } from '../sql/event-outbox.js';
import type { PgDb, Queryable } from './db.js';
import { MARK_SQL, markArgs, type SqlReplication } from '../sql/replication.js';
import type { PgSqlDb } from './sql-db.js';

export class PgEventOutboxStore extends SqlEventOutbox {
  /** `db`: the pool whose transactions the writes join. */
  constructor(
    private readonly db: PgDb,
    sqlDb: PgSqlDb,
    owner: string,
    private readonly replication: SqlReplication,
  ) {
    super(sqlDb, owner);
  }

  /**
   * Inserts the events `rows` builds for `entry` on `c` (a client inside the change's transaction, called once
   * the change is sure to commit; one INSERT for all of them). Nothing when `rows` is undefined or builds none.
   * Throws what PostgreSQL throws (e.g. a duplicate id: the caller's transaction rolls back).
   */
  async write(c: Queryable, rows: OutboxRows | undefined, entry: ObjectRecord): Promise<void> {
    if (!rows) return;
    const marks = rows.replicate?.(entry) ?? [];
    if (marks.length > 0) {
      const numbered = MARK_SQL.replace(/\?/g, (() => {
        let n = 0;
        return () => `$${++n}`;
      })());
      for (const m of marks) await c.query(numbered, markArgs(m));
      this.db.afterCommit(c, () => this.replication.scheduleNotify());
    }
    const events: NewOutboxEvent[] = rows(entry);
    if (events.length === 0) return;
    const args: Array<string | number> = [];
    const values = events.map((e) => {
      args.push(e.id, e.payload, e.createdMs);
      const n = args.length;
      return `($${n - 2}, $${n - 1}, 'waiting', 0, $${n}, $${n}, $${n})`;
    });
    await c.query(`INSERT INTO ${NEW_EVENT_COLUMNS} VALUES ${values.join(', ')}`, args);
    this.db.afterCommit(c, () => this.scheduleNotify());
  }
}
