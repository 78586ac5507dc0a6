/**
 * The SQLite dialect of the shared SQL layer (store/sql/db.ts) on the MetaStore's one better-sqlite3 connection.
 *
 * - Statements are prepared once per text and kept (the texts are constants of store/sql/, a few list filters).
 * - Each call runs its statement synchronously when it is called; a call that changed rows (the connection's
 *   `total_changes()` moved) resolves only after `wal.sync()`: the group commit of group-commit.ts (a shared WAL
 *   fdatasync), so a change is acknowledged once durable, as the `withGroupCommit` wrapper does for the other
 *   stores. Reads (read-only statements) pay nothing.
 * - `batch` is one `BEGIN IMMEDIATE` transaction (better-sqlite3's `.immediate()`); a statement that throws rolls
 *   the whole of it back. It never interleaves with the upload commit batches (commit-batch.ts): both run
 *   synchronously on the one connection.
 */
import type Database from 'better-sqlite3';
import type { SqlDb, SqlStep, SqlStepResult } from '../sql/db.js';
import type { WalSync } from './group-commit.js';

export class SqliteSqlDb implements SqlDb {
  readonly skipLocked = '';
  readonly upsertInserted = undefined;
  readonly writableCte = false;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly totalChanges: Database.Statement;

  /** `wal`: the store's shared fdatasync; every call that changed rows waits for it. */
  constructor(
    private readonly db: Database.Database,
    private readonly wal: WalSync,
  ) {
    this.totalChanges = db.prepare('SELECT total_changes()').pluck();
  }

  async all<R>(sql: string, args: readonly unknown[] = []): Promise<R[]> {
    const st = this.prepare(sql);
    if (st.readonly) return st.all(...args) as R[];
    const before = this.changes();
    const rows = st.all(...args) as R[];
    await this.synced(before);
    return rows;
  }

  async get<R>(sql: string, args: readonly unknown[] = []): Promise<R | undefined> {
    const st = this.prepare(sql);
    if (st.readonly) return st.get(...args) as R | undefined;
    const before = this.changes();
    const row = st.get(...args) as R | undefined;
    await this.synced(before);
    return row;
  }

  async run(sql: string, args: readonly unknown[] = []): Promise<number> {
    const changes = this.prepare(sql).run(...args).changes;
    if (changes > 0) await this.wal.sync();
    return changes;
  }

  async batch(steps: readonly SqlStep[]): Promise<SqlStepResult[]> {
    const prepared = steps.map((s) => [this.prepare(s.sql), s.args ?? []] as const);
    const before = this.changes();
    const out = this.db
      .transaction(() =>
        prepared.map(([st, args]): SqlStepResult => {
          if (!st.reader) return { rows: [], changes: st.run(...args).changes };
          const start = this.changes();
          const rows = st.all(...args);
          return { rows, changes: this.changes() - start };
        }),
      )
      .immediate();
    await this.synced(before);
    return out;
  }

  private prepare(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  private changes(): number {
    return Number(this.totalChanges.get());
  }

  /** Waits for the WAL fdatasync when rows changed since `before`. */
  private async synced(before: number): Promise<void> {
    if (this.changes() !== before) await this.wal.sync();
  }
}
