/**
 * Seeds the listing bucket of the `list` phase straight into Granary's SQLite file, before Granary starts: one
 * transaction of plain INSERTs in key order (seconds for a million rows, where a million uploads would take
 * hours). Every entry shares one blob id (counted in `blobs`, no file: the phase only lists).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';

/** The key layout: a big directory, many mid-size ones, and flat keys after them (byte order = this order). */
export interface ListLayout {
  /** Keys `big/file%06d`: one directory that sorts first. */
  big: number;
  /** Directories `dir%04d/` … */
  dirs: number;
  /** … of `file%06d` keys each. */
  perDir: number;
  /** Keys `flat%06d` at the root, after the directories. */
  flat: number;
}

/** Total number of keys of a layout. */
export function layoutSize(l: ListLayout): number {
  return l.big + l.dirs * l.perDir + l.flat;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * Creates `bucket` (owned by `owner`, region z0) in `<dataDir>/meta.db` — the schema is made by opening a
 * SqliteMetaStore — and inserts the keys of `layout`. Returns the number of keys and the time taken (ms).
 */
export async function seedListBucket(dataDir: string, bucket: string, owner: string, layout: ListLayout): Promise<{ keys: number; ms: number }> {
  const started = performance.now();
  const path = join(dataDir, 'meta.db');
  await new SqliteMetaStore(path).close();
  const db = new Database(path);
  try {
    // A bulk load into a fresh file: no journal fsyncs (Granary reopens it in WAL mode with synchronous=FULL).
    db.pragma('journal_mode = DELETE');
    db.pragma('synchronous = OFF');
    const blobId = 'bench-list-shared-blob';
    const ins = db.prepare(
      `INSERT INTO objects (bucket, key, blob_id, fsize, hash, md5, mime, put_time, type, status)
       VALUES (?, ?, ?, 4096, 'FhDBsZSX1uYPXK6fXcHdBTemKBlz', '8b0c0df8b2b5f0f5c6cfbb1b4fe3e3f4', 'application/octet-stream', ?, 0, 0)`,
    );
    const putTime = BigInt(Date.now()) * 10_000n;
    const keys = layoutSize(layout);
    db.transaction(() => {
      db.prepare('INSERT INTO buckets (name, region, private, ctime, owner) VALUES (?, ?, 0, ?, ?)').run(
        bucket,
        'z0',
        Math.floor(Date.now() / 1000),
        owner,
      );
      db.prepare('INSERT INTO blobs (id, refs) VALUES (?, ?)').run(blobId, keys);
      for (let i = 0; i < layout.big; i++) ins.run(bucket, `big/file${pad(i, 6)}`, blobId, putTime);
      for (let d = 0; d < layout.dirs; d++) {
        for (let f = 0; f < layout.perDir; f++) ins.run(bucket, `dir${pad(d, 4)}/file${pad(f, 6)}`, blobId, putTime);
      }
      for (let i = 0; i < layout.flat; i++) ins.run(bucket, `flat${pad(i, 6)}`, blobId, putTime);
    })();
    return { keys, ms: performance.now() - started };
  } finally {
    db.close();
  }
}
