/**
 * The ConsoleSessionStore port (ports/console-sessions.ts) on SQLite: tables `console_sessions` and
 * `console_sign_in_failures` (schema.ts). Every worker process opens the same database, so a session made by one
 * worker is seen by all, and a failed sign-in is counted once whichever worker took it: `countSignInAttempt` is
 * one UPSERT … RETURNING, and SQLite serialises writers across processes. Times in Unix ms.
 */
import type Database from 'better-sqlite3';
import type { ConsoleSessionRecord, ConsoleSessionStore } from '../../ports/console-sessions.js';

interface SessionRow {
  id_hash: string;
  access_key: string;
  root: number;
  csrf: string;
  created_ms: number;
  last_used_ms: number;
}

/** A stored row as the port's record. */
function toRecord(r: SessionRow): ConsoleSessionRecord {
  return { idHash: r.id_hash, accessKey: r.access_key, root: r.root === 1, csrf: r.csrf, createdMs: r.created_ms, lastUsedMs: r.last_used_ms };
}

export class SqliteConsoleSessions implements ConsoleSessionStore {
  private readonly st;

  constructor(db: Database.Database) {
    this.st = {
      create: db.prepare(
        `INSERT INTO console_sessions (id_hash, access_key, root, csrf, created_ms, last_used_ms)
         VALUES (@idHash, @accessKey, @root, @csrf, @createdMs, @lastUsedMs)`,
      ),
      get: db.prepare('SELECT * FROM console_sessions WHERE id_hash = ?'),
      renew: db.prepare('UPDATE console_sessions SET last_used_ms = ? WHERE id_hash = ? AND last_used_ms < ?'),
      delete: db.prepare('DELETE FROM console_sessions WHERE id_hash = ?'),
      deleteOf: db.prepare('DELETE FROM console_sessions WHERE access_key = ?'),
      sweepIdle: db.prepare('DELETE FROM console_sessions WHERE last_used_ms <= ?'),
      sweepExcess: db.prepare(
        `DELETE FROM console_sessions WHERE id_hash IN (
           SELECT id_hash FROM (
             SELECT id_hash, row_number() OVER (PARTITION BY access_key ORDER BY last_used_ms DESC, id_hash) AS n
             FROM console_sessions
           ) WHERE n > ?
         )`,
      ),
      attempt: db
        .prepare(
          `INSERT INTO console_sign_in_failures (key, first_ms, count) VALUES (@key, @now, 1)
           ON CONFLICT (key) DO UPDATE SET
             count = CASE WHEN console_sign_in_failures.first_ms <= @start THEN 1 ELSE console_sign_in_failures.count + 1 END,
             first_ms = CASE WHEN console_sign_in_failures.first_ms <= @start THEN @now ELSE console_sign_in_failures.first_ms END
           RETURNING count`,
        )
        .pluck(),
      clear: db.prepare('DELETE FROM console_sign_in_failures WHERE key = ?'),
      sweepAttempts: db.prepare('DELETE FROM console_sign_in_failures WHERE first_ms <= ?'),
    };
  }

  async createSession(rec: ConsoleSessionRecord): Promise<void> {
    this.st.create.run({ ...rec, root: rec.root ? 1 : 0 });
  }

  async getSession(idHash: string): Promise<ConsoleSessionRecord | undefined> {
    const row = this.st.get.get(idHash) as SessionRow | undefined;
    return row && toRecord(row);
  }

  async renewSession(idHash: string, nowMs: number, minAgeMs: number): Promise<boolean> {
    return this.st.renew.run(nowMs, idHash, nowMs - minAgeMs).changes === 1;
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return this.st.delete.run(idHash).changes === 1;
  }

  async deleteSessionsOf(accessKey: string): Promise<number> {
    return this.st.deleteOf.run(accessKey).changes;
  }

  async sweepSessions(idleBeforeMs: number, maxPerKey: number): Promise<number> {
    return this.st.sweepIdle.run(idleBeforeMs).changes + this.st.sweepExcess.run(maxPerKey).changes;
  }

  async countSignInAttempt(key: string, nowMs: number, windowMs: number): Promise<number> {
    return Number(this.st.attempt.get({ key, now: nowMs, start: nowMs - windowMs }));
  }

  async clearSignInAttempts(key: string): Promise<void> {
    this.st.clear.run(key);
  }

  async sweepSignInAttempts(beforeMs: number): Promise<number> {
    return this.st.sweepAttempts.run(beforeMs).changes;
  }
}
