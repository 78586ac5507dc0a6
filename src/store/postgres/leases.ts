/**
 * The LeaseStore port (ports/leases.ts) on PostgreSQL: table `leases` (schema.ts), the semantics of
 * store/sqlite/leases.ts. `acquire` is one `INSERT … ON CONFLICT DO UPDATE … WHERE <expired or same owner>
 * RETURNING`: PostgreSQL makes concurrent inserts of one name wait for each other and evaluates the WHERE on the
 * latest committed row, so of any number of nodes racing for a free or lapsed lease exactly one gets it (the
 * others see a live holder and get no row back). Times in Unix ms given by the caller.
 */
import type { Lease, LeaseStore } from '../../ports/leases.js';
import type { PgDb } from './db.js';

interface LeaseRow {
  name: string;
  owner: string;
  expires_ms: bigint;
  acquired_ms: bigint;
}

export class PgLeases implements LeaseStore {
  constructor(private readonly db: PgDb) {}

  async acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO leases (name, owner, expires_ms, acquired_ms) VALUES ($1, $2, $3, $4)
       ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms,
         acquired_ms = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_ms ELSE excluded.acquired_ms END
       WHERE leases.owner = excluded.owner OR leases.expires_ms <= $4
       RETURNING 1`,
      [name, owner, nowMs + ttlMs, nowMs],
    );
    return rowCount === 1;
  }

  async renew(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE leases SET expires_ms = $1 WHERE name = $2 AND owner = $3', [
      nowMs + ttlMs,
      name,
      owner,
    ]);
    return rowCount === 1;
  }

  async release(name: string, owner: string): Promise<void> {
    await this.db.query('DELETE FROM leases WHERE name = $1 AND owner = $2', [name, owner]);
  }

  async releaseAll(owner: string): Promise<number> {
    return (await this.db.query('DELETE FROM leases WHERE owner = $1', [owner])).rowCount ?? 0;
  }

  async list(prefix: string): Promise<Lease[]> {
    const { rows } = await this.db.query<LeaseRow>(
      'SELECT * FROM leases WHERE substr(name, 1, length($1)) = $1 ORDER BY name',
      [prefix],
    );
    return rows.map((r) => ({
      name: r.name,
      owner: r.owner,
      expiresMs: Number(r.expires_ms),
      acquiredMs: Number(r.acquired_ms),
    }));
  }
}
