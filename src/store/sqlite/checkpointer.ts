/**
 * WAL checkpoints off the event loop (with group-commit.ts). The serving connection turns SQLite's
 * automatic checkpoint off (it would run — and fsync the WAL and the database — inside whichever commit crosses
 * 1000 pages, on the event loop); instead a worker thread with its own connection runs
 * `PRAGMA wal_checkpoint(PASSIVE)` every `intervalMs`. PASSIVE never blocks writers or readers; several processes
 * on one data dir may each run one (a busy checkpoint is skipped). With `synchronous=NORMAL` the checkpoint syncs
 * the WAL before copying and the database after, so checkpointed frames stay durable.
 *
 * PASSIVE alone never gets the WAL back to its start under a steady stream of commits: SQLite rewinds the log only
 * when a writer finds every frame checkpointed, and by then new frames have always arrived. The log then grows
 * without end (352 MB in a 12 s upload bench), every commit extends the file and every read searches a longer
 * wal-index. So once the log holds `RESTART_FRAMES` frames after the PASSIVE pass, the thread runs
 * `wal_checkpoint(RESTART)`: it copies the few frames written meanwhile, syncs, and waits (up to
 * `RESTART_WAIT_MS`, in this thread) until readers are off the log, holding new writers back for that moment; the
 * next commit writes from the start of the file again. Upload commits wait for that without blocking their event
 * loop (commit-batch.ts); other writes wait in SQLite's busy handler, as before. `journal_size_limit` then trims a
 * log a burst made larger than `JOURNAL_LIMIT_BYTES`.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The worker's code (CommonJS, evaluated): loads better-sqlite3 by its resolved path. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 0');
// A checkpoint copies frames from the log to the file without keeping them: a small page cache is enough.
db.pragma('cache_size = -' + workerData.cacheKib);
db.pragma('synchronous = NORMAL');
db.pragma('journal_size_limit = ' + workerData.journalLimitBytes);
const run = () => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    if (r && r.log >= workerData.restartFrames) {
      db.pragma('busy_timeout = ' + workerData.restartWaitMs);
      try { db.pragma('wal_checkpoint(RESTART)'); } finally { db.pragma('busy_timeout = 0'); }
    }
  } catch { /* busy or transient: the next round retries */ }
};
const timer = setInterval(run, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); run(); db.close(); parentPort.close(); }
});
`;

/** Frames in the log (4 KiB pages) after a PASSIVE pass above which the thread rewinds it (RESTART). */
const RESTART_FRAMES = 1024;
/** How long a RESTART waits for writers and readers to let go, ms (then the next round tries again). */
const RESTART_WAIT_MS = 100;
/** SQLite page cache of the thread's connection, KiB. */
const CHECKPOINT_CACHE_KIB = 256;
/** Size the log file is trimmed to after it was rewound, bytes. */
export const JOURNAL_LIMIT_BYTES = 64 * 1024 * 1024;

/** A running checkpoint thread for the database at `path`. */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(path: string, intervalMs = 1000) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: {
        driver,
        path,
        intervalMs,
        restartFrames: RESTART_FRAMES,
        restartWaitMs: RESTART_WAIT_MS,
        journalLimitBytes: JOURNAL_LIMIT_BYTES,
        cacheKib: CHECKPOINT_CACHE_KIB,
      },
      // Its own V8 isolate: a young generation of V8's smallest size (it allocates next to nothing).
      resourceLimits: { maxYoungGenerationSizeMb: 1 },
    });
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    // A failing thread only means checkpoints stop running here; SQLite stays correct (the WAL grows).
    this.worker.on('error', () => undefined);
  }

  /** Runs a last checkpoint and ends the thread. */
  async stop(): Promise<void> {
    // Held while it ends: an unref'd thread is not waited for, so a process with nothing else to do (a start that
    // failed and is cleaning up) would end before this resolves, with status 0 and its error never reported.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
