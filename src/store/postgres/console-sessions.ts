/**
 * The ConsoleSessionStore port (ports/console-sessions.ts) on PostgreSQL: tables `console_sessions` and
 * `console_sign_in_failures` (schema.ts, migration 2), the semantics of store/sqlite/console-sessions.ts, shared by
 * every node of a cluster. `countSignInAttempt` is one `INSERT … ON CONFLICT DO UPDATE … RETURNING`: concurrent
 * attempts on one key wait for each other's row lock and each sees the count the previous one left, so failures
 * are counted once across nodes. Times in Unix ms given by the caller (bigint columns, read back as numbers).
 */
import type { ConsoleSessionRecord, ConsoleSessionStore } from '../../ports/console-sessions.js';
import type { PgDb } from './db.js';

interface SessionRow {
  id_hash: string;
  access_key: string;
  root: boolean;
  csrf: string;
  created_ms: string | number | bigint;
  last_used_ms: string | number | bigint;
}

export class PgConsoleSessions implements ConsoleSessionStore {
  constructor(private readonly db: PgDb) {}

  async createSession(rec: ConsoleSessionRecord): Promise<void> {
    await this.db.query(
      `INSERT INTO console_sessions (id_hash, access_key, root, csrf, created_ms, last_used_ms) VALUES ($1, $2, $3, $4, $5, $6)`,
      [rec.idHash, rec.accessKey, rec.root, rec.csrf, rec.createdMs, rec.lastUsedMs],
    );
  }

  async getSession(idHash: string): Promise<ConsoleSessionRecord | undefined> {
    const { rows } = await this.db.query<SessionRow>('SELECT * FROM console_sessions WHERE id_hash = $1', [idHash]);
    const r = rows[0];
    if (!r) return undefined;
    return {
      idHash: r.id_hash,
      accessKey: r.access_key,
      root: r.root,
      csrf: r.csrf,
      createdMs: Number(r.created_ms),
      lastUsedMs: Number(r.last_used_ms),
    };
  }

  async renewSession(idHash: string, nowMs: number, minAgeMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE console_sessions SET last_used_ms = $1 WHERE id_hash = $2 AND last_used_ms < $3',
      [nowMs, idHash, nowMs - minAgeMs],
    );
    return rowCount === 1;
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM console_sessions WHERE id_hash = $1', [idHash])).rowCount === 1;
  }

  async deleteSessionsOf(accessKey: string): Promise<number> {
    return (await this.db.query('DELETE FROM console_sessions WHERE access_key = $1', [accessKey])).rowCount ?? 0;
  }

  async sweepSessions(idleBeforeMs: number, maxPerKey: number): Promise<number> {
    const idle = await this.db.query('DELETE FROM console_sessions WHERE last_used_ms <= $1', [idleBeforeMs]);
    const excess = await this.db.query(
      `DELETE FROM console_sessions WHERE id_hash IN (
         SELECT id_hash FROM (
           SELECT id_hash, row_number() OVER (PARTITION BY access_key ORDER BY last_used_ms DESC, id_hash) AS n
           FROM console_sessions
         ) ranked WHERE n > $1
       )`,
      [maxPerKey],
    );
    return (idle.rowCount ?? 0) + (excess.rowCount ?? 0);
  }

  async countSignInAttempt(key: string, nowMs: number, windowMs: number): Promise<number> {
    const { rows } = await this.db.query<{ count: number }>(
      `INSERT INTO console_sign_in_failures (key, first_ms, count) VALUES ($1, $2, 1)
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN console_sign_in_failures.first_ms <= $3 THEN 1 ELSE console_sign_in_failures.count + 1 END,
         first_ms = CASE WHEN console_sign_in_failures.first_ms <= $3 THEN $2 ELSE console_sign_in_failures.first_ms END
       RETURNING count`,
      [key, nowMs, nowMs - windowMs],
    );
    return Number(rows[0]?.count ?? 0);
  }

  async clearSignInAttempts(key: string): Promise<void> {
    await this.db.query('DELETE FROM console_sign_in_failures WHERE key = $1', [key]);
  }

  async sweepSignInAttempts(beforeMs: number): Promise<number> {
    return (await this.db.query('DELETE FROM console_sign_in_failures WHERE first_ms <= $1', [beforeMs])).rowCount ?? 0;
  }
}
