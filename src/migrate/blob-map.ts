/**
 * The migration's own memory of which destination blob holds the bytes of which source blob (or manifest), so that
 * entries sharing a blob (copies) share one destination blob even across runs: a run killed after copying one
 * entry of a shared blob lets the next run commit the others onto the same destination blob instead of copying
 * the bytes again.
 *
 * A small SQLite file (better-sqlite3) per destination, under the source data dir (`<dataDir>/migrate/`), so memory
 * stays bounded whatever the number of blobs. It is a hint, never the truth: a mapped destination blob is used only
 * while the destination MetaStore still references it (`blobReferenced`), so a wiped or different destination just
 * makes the migration copy again. Written after the entry's commit, never before.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export class BlobMap {
  private readonly db: Database.Database;
  private readonly getSt;
  private readonly putSt;

  /** Opens (or creates) the map file at `path`. */
  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec('CREATE TABLE IF NOT EXISTS blob_map (source TEXT PRIMARY KEY, dest TEXT NOT NULL) WITHOUT ROWID');
    this.getSt = this.db.prepare('SELECT dest FROM blob_map WHERE source = ?').pluck();
    this.putSt = this.db.prepare(
      'INSERT INTO blob_map (source, dest) VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET dest = excluded.dest',
    );
  }

  /**
   * The map file of a migration from `dataDir` to the destination named by `destination` (metadata and blobs
   * locations; hashed, so a password in a URL never reaches a file name).
   */
  static pathFor(dataDir: string, destination: string): string {
    const dir = join(dataDir, 'migrate');
    mkdirSync(dir, { recursive: true });
    return join(dir, `${createHash('sha256').update(destination).digest('hex').slice(0, 16)}.db`);
  }

  /** The destination blob id recorded for source blob `source`, if any. */
  get(source: string): string | undefined {
    return this.getSt.get(source) as string | undefined;
  }

  /** Records that destination blob `dest` holds the bytes of source blob `source`. */
  put(source: string, dest: string): void {
    this.putSt.run(source, dest);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
