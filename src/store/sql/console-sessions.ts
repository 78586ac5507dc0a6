/**
 * The ConsoleSessionStore port (ports/console-sessions.ts) on SQLite and PostgreSQL (db.ts): tables
 * `console_sessions` and `console_sign_in_failures`. Every worker process and every node opens the same database,
 * so a session made by one is seen by all, and a failed sign-in is counted once whichever took it:
 * `countSignInAttempt` is one `INSERT … ON CONFLICT DO UPDATE … RETURNING` (SQLite serialises writers; on
 * PostgreSQL concurrent attempts on one key wait for each other's row lock and each sees the count the previous
 * one left). Times in Unix ms given by the caller.
 */
import type { ConsoleSessionRecord, ConsoleSessionStore } from '../../ports/console-sessions.js';
import { flag, type SqlDb } from './db.js';

interface SessionRow {
  id_hash: string;
  access_key: string;
  root: number | boolean;
  csrf: string;
  created_ms: number | bigint;
  last_used_ms: number | bigint;
}

const SQL = {
  create: 'INSERT INTO console_sessions (id_hash, access_key, root, csrf, created_ms, last_used_ms) VALUES (?, ?, ?, ?, ?, ?)',
  get: 'SELECT * FROM console_sessions WHERE id_hash = ?',
  renew: 'UPDATE console_sessions SET last_used_ms = ? WHERE id_hash = ? AND last_used_ms < ?',
  delete: 'DELETE FROM console_sessions WHERE id_hash = ?',
  deleteOf: 'DELETE FROM console_sessions WHERE access_key = ?',
  sweepIdle: 'DELETE FROM console_sessions WHERE last_used_ms <= ?',
  sweepExcess: `DELETE FROM console_sessions WHERE id_hash IN (
      SELECT id_hash FROM (
        SELECT id_hash, row_number() OVER (PARTITION BY access_key ORDER BY last_used_ms DESC, id_hash) AS n
        FROM console_sessions
      ) ranked WHERE n > ?
    )`,
  attempt: `INSERT INTO console_sign_in_failures (key, first_ms, count) VALUES (?, ?, 1)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN console_sign_in_failures.first_ms <= ? THEN 1 ELSE console_sign_in_failures.count + 1 END,
      first_ms = CASE WHEN console_sign_in_failures.first_ms <= ? THEN ? ELSE console_sign_in_failures.first_ms END
    RETURNING count`,
  clear: 'DELETE FROM console_sign_in_failures WHERE key = ?',
  sweepAttempts: 'DELETE FROM console_sign_in_failures WHERE first_ms <= ?',
};

export class SqlConsoleSessions implements ConsoleSessionStore {
  constructor(private readonly db: SqlDb) {}

  async createSession(rec: ConsoleSessionRecord): Promise<void> {
    await this.db.run(SQL.create, [rec.idHash, rec.accessKey, rec.root ? 1 : 0, rec.csrf, rec.createdMs, rec.lastUsedMs]);
  }

  async getSession(idHash: string): Promise<ConsoleSessionRecord | undefined> {
    const r = await this.db.get<SessionRow>(SQL.get, [idHash]);
    if (!r) return undefined;
    return {
      idHash: r.id_hash,
      accessKey: r.access_key,
      root: flag(r.root),
      csrf: r.csrf,
      createdMs: Number(r.created_ms),
      lastUsedMs: Number(r.last_used_ms),
    };
  }

  async renewSession(idHash: string, nowMs: number, minAgeMs: number): Promise<boolean> {
    return (await this.db.run(SQL.renew, [nowMs, idHash, nowMs - minAgeMs])) === 1;
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return (await this.db.run(SQL.delete, [idHash])) === 1;
  }

  async deleteSessionsOf(accessKey: string): Promise<number> {
    return this.db.run(SQL.deleteOf, [accessKey]);
  }

  async sweepSessions(idleBeforeMs: number, maxPerKey: number): Promise<number> {
    return (await this.db.run(SQL.sweepIdle, [idleBeforeMs])) + (await this.db.run(SQL.sweepExcess, [maxPerKey]));
  }

  async countSignInAttempt(key: string, nowMs: number, windowMs: number): Promise<number> {
    const start = nowMs - windowMs;
    const row = await this.db.get<{ count: number | bigint }>(SQL.attempt, [key, nowMs, start, start, nowMs]);
    return Number(row?.count ?? 0);
  }

  async clearSignInAttempts(key: string): Promise<void> {
    await this.db.run(SQL.clear, [key]);
  }

  async sweepSignInAttempts(beforeMs: number): Promise<number> {
    return this.db.run(SQL.sweepAttempts, [beforeMs]);
  }
}
