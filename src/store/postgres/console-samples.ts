/**
 * The ConsoleSampleStore port (ports/console-samples.ts) on PostgreSQL: table `console_samples` (schema.ts,
 * migration 3), shared by every node of a cluster. `putSample` is one `INSERT … ON CONFLICT DO NOTHING`: the first
 * writer of a moment wins. `data` is a jsonb column, read back as an object.
 */
import type { ConsoleSample, ConsoleSampleKind, ConsoleSampleStore } from '../../ports/console-samples.js';
import type { PgDb } from './db.js';

interface Row {
  kind: ConsoleSampleKind;
  at_s: string | number;
  source: string;
  data: Record<string, unknown>;
}

export class PgConsoleSamples implements ConsoleSampleStore {
  constructor(private readonly db: PgDb) {}

  async putSample(s: ConsoleSample): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'INSERT INTO console_samples (kind, at_s, source, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [s.kind, s.atSeconds, s.source, JSON.stringify(s.data)],
    );
    return rowCount === 1;
  }

  async listSamples(kind: ConsoleSampleKind, sinceSeconds: number): Promise<ConsoleSample[]> {
    const { rows } = await this.db.query<Row>(
      'SELECT kind, at_s, source, data FROM console_samples WHERE kind = $1 AND at_s >= $2 ORDER BY at_s, source',
      [kind, sinceSeconds],
    );
    return rows.map((r) => ({ kind: r.kind, atSeconds: Number(r.at_s), source: r.source, data: r.data }));
  }

  async pruneSamples(kind: ConsoleSampleKind, beforeSeconds: number): Promise<number> {
    return (await this.db.query('DELETE FROM console_samples WHERE kind = $1 AND at_s < $2', [kind, beforeSeconds])).rowCount ?? 0;
  }
}
