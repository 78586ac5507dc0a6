/**
 * The PostgreSQL dialect of the shared SQL layer (store/sql/db.ts) on the MetaStore's pool (db.ts).
 *
 * - `?` placeholders become `$1`, `$2`, … (once per statement text, then kept).
 * - Single statements run in autocommit on the pool (`PgDb.query`: failures mapped to PgUnavailable); `batch` runs
 *   in one READ COMMITTED transaction on one connection (`PgDb.tx`, retried from the start on a serialization
 *   failure or a deadlock).
 * - Claims pick their row with `FOR UPDATE SKIP LOCKED`: a row another node is claiming is locked and skipped,
 *   and one changed since the statement's snapshot is re-checked by PostgreSQL, so two nodes never take one row.
 * - An upsert tells whether it inserted with `xmax = 0` (true only for a row the statement inserted), and a
 *   data-modifying CTE lets an insert and a count over the same snapshot be one statement.
 * int8 columns come back as bigint (db.ts), booleans as booleans.
 */
import type { SqlDb, SqlStep, SqlStepResult } from '../sql/db.js';
import type { PgDb } from './db.js';

export class PgSqlDb implements SqlDb {
  readonly skipLocked = ' FOR UPDATE SKIP LOCKED';
  readonly upsertInserted = '(xmax = 0)';
  readonly writableCte = true;
  private readonly texts = new Map<string, string>();

  constructor(private readonly db: PgDb) {}

  async all<R>(sql: string, args: readonly unknown[] = []): Promise<R[]> {
    return (await this.db.query(this.numbered(sql), [...args])).rows as R[];
  }

  async get<R>(sql: string, args: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.all<R>(sql, args))[0];
  }

  async run(sql: string, args: readonly unknown[] = []): Promise<number> {
    return (await this.db.query(this.numbered(sql), [...args])).rowCount ?? 0;
  }

  async batch(steps: readonly SqlStep[]): Promise<SqlStepResult[]> {
    const texts = steps.map((s) => this.numbered(s.sql));
    return this.db.tx(async (c) => {
      const out: SqlStepResult[] = [];
      for (const [i, s] of steps.entries()) {
        const r = await c.query(texts[i]!, [...(s.args ?? [])]);
        out.push({ rows: r.rows, changes: r.rowCount ?? 0 });
      }
      return out;
    });
  }

  /** The statement with its `?` placeholders numbered `$1`, `$2`, … */
  private numbered(sql: string): string {
    let text = this.texts.get(sql);
    if (text === undefined) {
      let n = 0;
      text = sql.replace(/\?/g, () => `$${++n}`);
      this.texts.set(sql, text);
    }
    return text;
  }
}
