/**
 * The LeaseStore port (ports/leases.ts) on SQLite and PostgreSQL (db.ts): table `leases`. `acquire` is one UPSERT
 * whose update applies only when the row is the caller's or has expired, so of any number of processes or nodes
 * racing for a free or lapsed lease exactly one gets it: SQLite serialises writers; PostgreSQL makes concurrent
 * inserts of one name wait for each other and evaluates the WHERE on the latest committed row. The rows changed
 * tell who won. Times in Unix ms given by the caller.
 */
import type { Lease, LeaseStore } from '../../ports/leases.js';
import type { SqlDb } from './db.js';

interface LeaseRow {
  name: string;
  owner: string;
  expires_ms: number | bigint;
  acquired_ms: number | bigint;
}

const SQL = {
  acquire: `INSERT INTO leases (name, owner, expires_ms, acquired_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms,
      acquired_ms = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_ms ELSE excluded.acquired_ms END
    WHERE leases.owner = excluded.owner OR leases.expires_ms <= ?`,
  renew: 'UPDATE leases SET expires_ms = ? WHERE name = ? AND owner = ?',
  release: 'DELETE FROM leases WHERE name = ? AND owner = ?',
  releaseAll: 'DELETE FROM leases WHERE owner = ?',
  list: 'SELECT * FROM leases WHERE substr(name, 1, length(?)) = ? ORDER BY name',
};

export class SqlLeases implements LeaseStore {
  constructor(private readonly db: SqlDb) {}

  async acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    return (await this.db.run(SQL.acquire, [name, owner, nowMs + ttlMs, nowMs, nowMs])) === 1;
  }

  async renew(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    return (await this.db.run(SQL.renew, [nowMs + ttlMs, name, owner])) === 1;
  }

  async release(name: string, owner: string): Promise<void> {
    await this.db.run(SQL.release, [name, owner]);
  }

  async releaseAll(owner: string): Promise<number> {
    return this.db.run(SQL.releaseAll, [owner]);
  }

  async list(prefix: string): Promise<Lease[]> {
    return (await this.db.all<LeaseRow>(SQL.list, [prefix, prefix])).map((r) => ({
      name: r.name,
      owner: r.owner,
      expiresMs: Number(r.expires_ms),
      acquiredMs: Number(r.acquired_ms),
    }));
  }
}
