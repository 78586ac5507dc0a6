/**
 * The ConsoleSampleStore port (ports/console-samples.ts) on SQLite: table `console_samples` (schema.ts), shared by
 * the worker processes. `putSample` is one `INSERT OR IGNORE`: the first writer of a moment wins.
 */
import type Database from 'better-sqlite3';
import type { ConsoleSample, ConsoleSampleKind, ConsoleSampleStore } from '../../ports/console-samples.js';

interface Row {
  kind: ConsoleSampleKind;
  at_s: number;
  source: string;
  data: string;
}

export class SqliteConsoleSamples implements ConsoleSampleStore {
  private readonly st;

  constructor(db: Database.Database) {
    this.st = {
      put: db.prepare('INSERT OR IGNORE INTO console_samples (kind, at_s, source, data) VALUES (?, ?, ?, ?)'),
      list: db.prepare('SELECT kind, at_s, source, data FROM console_samples WHERE kind = ? AND at_s >= ? ORDER BY at_s, source'),
      prune: db.prepare('DELETE FROM console_samples WHERE kind = ? AND at_s < ?'),
    };
  }

  async putSample(s: ConsoleSample): Promise<boolean> {
    return this.st.put.run(s.kind, s.atSeconds, s.source, JSON.stringify(s.data)).changes === 1;
  }

  async listSamples(kind: ConsoleSampleKind, sinceSeconds: number): Promise<ConsoleSample[]> {
    return (this.st.list.all(kind, sinceSeconds) as Row[]).map((r) => ({
      kind: r.kind,
      atSeconds: r.at_s,
      source: r.source,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }

  async pruneSamples(kind: ConsoleSampleKind, beforeSeconds: number): Promise<number> {
    return this.st.prune.run(kind, beforeSeconds).changes;
  }
}
