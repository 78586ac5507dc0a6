/**
 * One `granary serve` per data dir. Two servers on one data dir would each believe they own its per-process files:
 * the second one's start empties the first one's `fop-cache/tmp/` (and its blob-cache), and each counts the
 * other's files as its own. So `granary serve` holds a lock on `<dataDir>/granary.lock` for as long as it runs —
 * the single process, or the primary of GRANARY_WORKERS > 1 (its workers are covered by it and take no lock) — and a
 * second server on the same data dir is refused: an Error naming the data dir and the pid holding it.
 *
 * The lock is held by an open file, not by a pid file: Node has no flock(2), so the file is an (empty) SQLite
 * database held in an exclusive transaction, i.e. a POSIX fcntl lock the kernel releases the moment the process
 * ends, however it ends (SIGKILL, a crash, OOM). No stale lock survives its holder and no pid is ever guessed alive.
 * fcntl locks also work over NFSv4. Who holds it (pid, host, start time) is written beside it, to
 * `granary.lock.json`, for the refusal's message only.
 *
 * The CLI's offline commands (bucket, keys, stat, …) take no lock: they are designed to work next to a running
 * server (store/open.ts).
 */
import { readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** A held data-dir lock. */
export interface DataDirLock {
  /** The lock file. */
  readonly path: string;
  /** Releases the lock (idempotent). The process's end releases it too. */
  release(): void;
}

/** What `granary.lock.json` holds. */
interface Holder {
  pid: number;
  host: string;
  /** ISO 8601 time the lock was taken. */
  since: string;
}

/** Path of the lock file of `dataDir`. */
export function lockPath(dataDir: string): string {
  return join(dataDir, 'granary.lock');
}

const holderPath = (dataDir: string): string => join(dataDir, 'granary.lock.json');

/**
 * The connections holding locks: kept reachable here, as a connection that is garbage-collected is closed, and
 * closing it would release its lock while its server still runs.
 */
const holding = new Set<Database.Database>();

function readHolder(dataDir: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(holderPath(dataDir), 'utf8')) as Partial<Holder>;
    return typeof h.pid === 'number' ? { pid: h.pid, host: String(h.host), since: String(h.since) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock of `dataDir` (created if missing) without waiting. Throws an Error when another server holds it
 * (`the data dir <dir> is in use by granary serve pid <pid> on <host> …`) or when the lock file cannot be used (its
 * path and the reason).
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = lockPath(dataDir);
  let db: Database.Database;
  try {
    db = new Database(path, { timeout: 0 });
    // No journal file: nothing is ever written; the lock is all.
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      const h = readHolder(dataDir);
      const who = h ? `granary serve pid ${h.pid} on ${h.host} (since ${h.since})` : 'another granary serve';
      throw new Error(`the data dir ${dataDir} is in use by ${who}: one server per data dir (lock ${path}); stop it first or use another GRANARY_DATA_DIR`, { cause: err });
    }
    throw new Error(`cannot lock the data dir with ${path}: ${(err as Error).message}`, { cause: err });
  }
  const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  try {
    writeFileSync(`${holderPath(dataDir)}.tmp`, JSON.stringify(holder) + '\n');
    renameSync(`${holderPath(dataDir)}.tmp`, holderPath(dataDir));
  } catch {
    // Only the refusal's message of another server would miss the pid.
  }
  holding.add(db);
  return {
    path,
    release() {
      if (!holding.delete(db)) return;
      if (readHolder(dataDir)?.pid === process.pid) rmSync(holderPath(dataDir), { force: true });
      db.exec('ROLLBACK');
      db.close();
    },
  };
}
