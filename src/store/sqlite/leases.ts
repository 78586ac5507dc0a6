/**
 * The LeaseStore port (ports/leases.ts) on SQLite: table `leases` (schema.ts). `acquire` is one UPSERT whose
 * update applies only when the row is the caller's or has expired, so two processes racing for a free or lapsed
 * lease cannot both get it (SQLite serialises writers; `changes` tells who won). Times in ms.
 */
import type Database from 'better-sqlite3';
import type { Lease, LeaseStore } from '../../ports/leases.js';

interface LeaseRow {
  name: string;
  owner: string;
  expires_ms: number;
  acquired_ms: number;
}

export class SqliteLeases implements LeaseStore {
  private readonly st;

  constructor(db: Database.Database) {
    this.st = {
      acquire: db.prepare(
        `INSERT INTO leases (name, owner, expires_ms, acquired_ms) VALUES (@name, @owner, @expires, @now)
         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms,
           acquired_ms = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_ms ELSE excluded.acquired_ms END
         WHERE leases.owner = excluded.owner OR leases.expires_ms <= @now`,
      ),
      renew: db.prepare('UPDATE leases SET expires_ms = ? WHERE name = ? AND owner = ?'),
      release: db.prepare('DELETE FROM leases WHERE name = ? AND owner = ?'),
      releaseAll: db.prepare('DELETE FROM leases WHERE owner = ?'),
      list: db.prepare("SELECT * FROM leases WHERE substr(name, 1, length(?)) = ? ORDER BY name"),
    };
  }

  async acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    return this.st.acquire.run({ name, owner, expires: nowMs + ttlMs, now: nowMs }).changes === 1;
  }

  async renew(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    return this.st.renew.run(nowMs + ttlMs, name, owner).changes === 1;
  }

  async release(name: string, owner: string): Promise<void> {
    this.st.release.run(name, owner);
  }

  async releaseAll(owner: string): Promise<number> {
    return this.st.releaseAll.run(owner).changes;
  }

  async list(prefix: string): Promise<Lease[]> {
    return (this.st.list.all(prefix, prefix) as LeaseRow[]).map((r) => ({
      name: r.name,
      owner: r.owner,
      expiresMs: r.expires_ms,
      acquiredMs: r.acquired_ms,
    }));
  }
}
