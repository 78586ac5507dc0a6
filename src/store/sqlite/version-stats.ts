/**
 * Per-bucket version counters of the SQLite MetaStore (ports/versions.ts `VersionStats`; the `/metrics` gauges
 * granary_bucket_noncurrent_versions, granary_bucket_delete_markers, granary_bucket_noncurrent_bytes).
 *
 * `version_stats (bucket, versions, markers, bytes)` counts the bucket's `object_versions` rows: noncurrent versions
 * (`marker` = 0), delete markers (`marker` = 1, current or not) and the `fsize` sum of the noncurrent versions.
 * Triggers on `object_versions` keep it exact in the very transaction that retires, adds, restores or deletes a
 * version (rows are only ever inserted and deleted, never updated), and a trigger on `buckets` drops the row of a
 * dropped bucket. A scrape reads this small table: no scan of the versions.
 *
 * `migrateVersionStats` creates the table and triggers and, when the table is new, computes the counters of the
 * versions already stored (one pass over `object_versions`, once, in the same write transaction).
 */
import type Database from 'better-sqlite3';
import type { VersionStats } from '../../ports/versions.js';

/** The triggers (idempotent). */
const STATS_TRIGGERS = `
CREATE TRIGGER IF NOT EXISTS version_stats_insert AFTER INSERT ON object_versions BEGIN
  INSERT INTO version_stats (bucket, versions, markers, bytes)
    VALUES (new.bucket, 1 - new.marker, new.marker, CASE WHEN new.marker = 1 THEN 0 ELSE new.fsize END)
    ON CONFLICT (bucket) DO UPDATE SET versions = versions + excluded.versions, markers = markers + excluded.markers,
      bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS version_stats_delete AFTER DELETE ON object_versions BEGIN
  UPDATE version_stats SET versions = versions - (1 - old.marker), markers = markers - old.marker,
    bytes = bytes - CASE WHEN old.marker = 1 THEN 0 ELSE old.fsize END
  WHERE bucket = old.bucket;
END;
CREATE TRIGGER IF NOT EXISTS version_stats_bucket_delete AFTER DELETE ON buckets BEGIN
  DELETE FROM version_stats WHERE bucket = old.name;
END;
`;

/** Creates the counters and their triggers; computes them from the stored versions when the table is new. */
export function migrateVersionStats(db: Database.Database): void {
  db.transaction(() => {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'version_stats'").get() !== undefined;
    if (!exists) {
      db.exec(`
        CREATE TABLE version_stats (
          bucket   TEXT PRIMARY KEY,
          versions INTEGER NOT NULL,
          markers  INTEGER NOT NULL,
          bytes    INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO version_stats (bucket, versions, markers, bytes)
          SELECT bucket, SUM(1 - marker), SUM(marker), SUM(CASE WHEN marker = 1 THEN 0 ELSE fsize END)
          FROM object_versions GROUP BY bucket;
      `);
    }
    db.exec(STATS_TRIGGERS);
  }).immediate();
}

/** Every bucket's counters (buckets that never had a version are absent). */
export function readVersionStats(db: Database.Database): Map<string, VersionStats> {
  const rows = db.prepare('SELECT bucket, versions, markers, bytes FROM version_stats').all() as Array<{
    bucket: string;
    versions: number;
    markers: number;
    bytes: number;
  }>;
  return new Map(rows.map((r) => [r.bucket, { noncurrentVersions: r.versions, deleteMarkers: r.markers, noncurrentBytes: r.bytes }]));
}
