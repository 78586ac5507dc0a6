/**
 * Versioned schema migrations of the PostgreSQL MetaStore (schema.ts): at start, every node applies the
 * migrations it has and the database lacks, in version order, each in its own transaction with its row in
 * `granary_migrations`. A session advisory lock makes nodes starting together take turns (the second finds the
 * work done). A database migrated by a newer Granary (a version this one does not know) is refused: running old
 * code on a newer schema could corrupt it.
 */
import type pg from 'pg';
import { NO_QUERY_TIMEOUT, type PgDb } from './db.js';
import { MIGRATIONS, type Migration } from './schema.js';

/** The advisory lock key of migrations (any constant no other lock uses). */
const MIGRATION_LOCK = 0x6772616e; // 'gran'

/** Applies the missing migrations; returns the versions applied. Throws when the database is newer than this code. */
export async function migrate(db: PgDb, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const c = await db.pool.connect();
  try {
    // A migration (or the wait for another node's) may take longer than GRANARY_PG_TIMEOUT: no timeouts here.
    await c.query('SET statement_timeout = 0');
    const slow = (text: string, values?: unknown[]) => c.query({ text, values, query_timeout: NO_QUERY_TIMEOUT } as pg.QueryConfig);
    await slow('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await c.query(
        `CREATE TABLE IF NOT EXISTS granary_migrations (
           version    integer PRIMARY KEY,
           name       text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const done = new Set(
        (await c.query<{ version: number }>('SELECT version FROM granary_migrations')).rows.map((r) => r.version),
      );
      const known = new Set(migrations.map((m) => m.version));
      const unknown = [...done].filter((v) => !known.has(v));
      if (unknown.length > 0) {
        throw new Error(
          `the PostgreSQL schema has migration(s) ${unknown.join(', ')} that this Granary does not know: upgrade Granary`,
        );
      }
      const applied: number[] = [];
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await c.query('BEGIN');
        try {
          await slow(m.sql);
          await c.query('INSERT INTO granary_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await c.query('COMMIT');
        } catch (err) {
          await c.query('ROLLBACK');
          throw new Error(`migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(m.version);
      }
      return applied;
    } finally {
      await c.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    // Back to the pool with the pool's timeout, or not at all.
    const reset = await c.query('RESET statement_timeout').then(
      () => true,
      () => false,
    );
    c.release(!reset);
  }
}
