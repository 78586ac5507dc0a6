/**
 * Object lock in the SQLite MetaStore (ports/object-lock.ts, docs/reference/versioning.md "Object lock"): each
 * version's retention and legal hold, kept as one JSON column `object_lock` on the version's row — `objects` for the
 * current version, `object_versions` for noncurrent ones (NULL = no lock) — so a version keeps its lock when it
 * becomes noncurrent (versions.ts copies the row) and back. Self-contained: the two columns are added here, at every
 * open (idempotent), after `object_versions` exists.
 */
import type Database from 'better-sqlite3';

/** The columns this module adds. */
const LOCK_COLUMNS: Array<[string, string]> = [
  ['objects', 'object_lock'],
  ['object_versions', 'object_lock'],
];

/** Adds the lock columns where missing (idempotent). */
export function migrateObjectLock(db: Database.Database): void {
  for (const [table, column] of LOCK_COLUMNS) {
    const cols = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (!cols.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`);
  }
}
