/**
 * The one SQL layer under both MetaStore backends' queue-like stores (the durable queue `tasks` and its views,
 * the event outbox, workflow templates, leases, console sessions): each is written once in store/sql/ against
 * this small interface, and each database gives one implementation of it, its dialect —
 * store/sqlite/sql-db.ts (better-sqlite3, one process-wide writer) and store/postgres/sql-db.ts (`pg`, a pool).
 * What differs between the two lives here and nowhere else:
 *
 * - placeholders: shared statements are written with `?`; PostgreSQL's dialect numbers them (`$1`, `$2`, …) once
 *   per statement text (no statement of ours has a `?` inside a string literal);
 * - calls: better-sqlite3 is synchronous, `pg` asynchronous; both are used through promises here. The SQLite
 *   dialect runs a statement at the moment it is called (before any await), so a method's statements never
 *   interleave with another method's on the one connection, and it resolves a call that changed rows only once
 *   the WAL holds them durably (the group-commit fdatasync, store/sqlite/group-commit.ts);
 * - transactions: `batch` runs a list of statements in one write transaction — SQLite `BEGIN IMMEDIATE` (the
 *   write lock first: two processes sharing a data dir never interleave), PostgreSQL a READ COMMITTED transaction
 *   on one connection (retried on a serialization failure, store/postgres/db.ts);
 * - locking of claims: `skipLocked` is appended to the `SELECT … LIMIT 1` that picks a row to claim —
 *   `FOR UPDATE SKIP LOCKED` on PostgreSQL (two nodes never take one row, nor wait on each other), nothing on
 *   SQLite (an UPDATE takes the single write lock before it reads);
 * - RETURNING/UPSERT: both databases take `INSERT … ON CONFLICT … DO NOTHING | DO UPDATE … WHERE` and
 *   `… RETURNING`; whether an upsert inserted is told by `upsertInserted` where the database can say it in the
 *   same statement (PostgreSQL `xmax = 0`), else the caller uses `batch` (insert-or-nothing, then update);
 * - data-modifying CTEs (`WITH f AS (INSERT … RETURNING …) SELECT …`): `writableCte`, PostgreSQL only;
 * - value types: int8 columns come back as bigint on PostgreSQL and number on SQLite (read them with `Number()`),
 *   flags as boolean or 0/1 (`flag()`); flags are bound as 0/1 (PostgreSQL reads `'1'`/`'0'` as booleans).
 *   Times are Unix ms numbers given by the caller (the Clock port), never the database's clock.
 */

/** One statement of a `batch`: its text (with `?` placeholders) and its values. */
export interface SqlStep {
  sql: string;
  args?: readonly unknown[];
}

/** What a statement of a `batch` gave: its rows (statements with RETURNING or SELECT) and rows changed. */
export interface SqlStepResult {
  rows: unknown[];
  changes: number;
}

/** A database the shared stores run on (see the module comment). Errors are the backend's (PgUnavailable, SqliteError). */
export interface SqlDb {
  /** Every row of the statement. */
  all<R>(sql: string, args?: readonly unknown[]): Promise<R[]>;
  /** The first row of the statement, or undefined. */
  get<R>(sql: string, args?: readonly unknown[]): Promise<R | undefined>;
  /** Runs a statement; how many rows it inserted, updated or deleted. */
  run(sql: string, args?: readonly unknown[]): Promise<number>;
  /** Runs the statements in order in one write transaction (all or nothing); each one's outcome. */
  batch(steps: readonly SqlStep[]): Promise<SqlStepResult[]>;
  /** Appended to a claim's picking `SELECT … LIMIT 1`: row locks skipped (PostgreSQL) or nothing (SQLite). */
  readonly skipLocked: string;
  /** An expression true in `RETURNING` for a row the upsert inserted (not updated), when the database has one. */
  readonly upsertInserted: string | undefined;
  /** Whether `WITH x AS (INSERT … RETURNING …) SELECT …` is allowed. */
  readonly writableCte: boolean;
}

/** A flag column as read (SQLite 0/1, PostgreSQL boolean) → boolean. */
export function flag(v: number | bigint | boolean | null | undefined): boolean {
  return v === true || v === 1 || v === 1n;
}
