/**
 * WAL checkpoints off the event loop (issue 13, with group-commit.ts). The serving connection turns SQLite's
 * automatic checkpoint off (it would run — and fsync the WAL and the database — inside whichever commit crosses
 * 1000 pages, on the event loop); instead a worker thread with its own connection runs
 * `PRAGMA wal_checkpoint(PASSIVE)` every `intervalMs`. PASSIVE never blocks writers or readers; several processes
 * on one data dir may each run one (a busy checkpoint is skipped). With `synchronous=NORMAL` the checkpoint syncs
 * the WAL before copying and the database after, so checkpointed frames stay durable.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The worker's code (CommonJS, evaluated): loads better-sqlite3 by its resolved path. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 0');
db.pragma('synchronous = NORMAL');
const run = () => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy or transient: the next round retries */ }
};
const timer = setInterval(run, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); run(); db.close(); parentPort.close(); }
});
`;

/** A running checkpoint thread for the database at `path`. */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(path: string, intervalMs = 1000) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, path, intervalMs } });
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // A failing thread only means checkpoints stop running here; SQLite stays correct (the WAL grows).
    this.worker.on('error', () => undefined);
  }

  /** Runs a last checkpoint and ends the thread. */
  async stop(): Promise<void> {
    this.worker.postMessage('stop');
    await this.exited;
  }
}
