/**
 * Batched entry commits for the embedded SQLite store (the aim: "concurrent commits share one transaction and one
 * WAL fsync").
 *
 * `CommitBatch.run(fn)` queues a synchronous transaction body; at the next turn of the event loop (setImmediate, so
 * every commit that became ready in the same I/O phase joins) the whole queue runs in ONE `BEGIN IMMEDIATE`
 * transaction, each body inside its own SAVEPOINT: a body that throws is rolled back alone and its promise
 * rejects with its error (OverQuota included: the caller turns it into its outcome), the others commit. After the
 * COMMIT every promise waits for one shared WAL fdatasync (group-commit.ts) and then resolves: a commit is
 * acknowledged only once it is durable, exactly as before; only the transaction is shared.
 *
 * The write lock is taken without blocking the event loop: the attempt runs with `busy_timeout = 0`, and when
 * another connection holds the lock (another worker process, a checkpoint restarting the WAL) the batch is retried
 * on a timer (setImmediate first, then 1 ms doubling to 8 ms) while more commits join it. SQLite's own busy
 * handler would instead sleep inside the call, stopping every request of the process. After `busyTimeoutMs` of
 * retries the batch fails with the SQLITE_BUSY error (the error handler answers the 5xx family).
 *
 * A body's failure that ends the whole transaction (SQLite rolls back by itself on I/O errors and a full disk) puts
 * the bodies that had run before it back at the head of the queue for the next attempt; the failing one rejects.
 */
import { backoffMs } from '../../backoff.js';
import type Database from 'better-sqlite3';
import type { WalSync } from './group-commit.js';

interface Pending {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

const MAX_RETRY_DELAY_MS = 8;

/** One queue of commit bodies sharing transactions; see the module comment. */
export class CommitBatch {
  private queue: Pending[] = [];
  private scheduled = false;
  /** When the current batch first found the lock taken (ms, performance.now), undefined when it did not. */
  private busySince: number | undefined;
  private retries = 0;
  private readonly st;
  /** Transactions committed and bodies they held (tests and metrics). */
  readonly stats = { transactions: 0, commits: 0 };

  /**
   * `db`: the store's connection (its busy timeout is `busyTimeoutMs`, restored after each attempt); `wal`: the
   * shared fdatasync every batch waits for before its promises resolve.
   */
  private readonly busyTimeoutMs: number;

  constructor(
    private readonly db: Database.Database,
    private readonly wal: WalSync,
    busyTimeoutMs: number,
  ) {
    this.busyTimeoutMs = Math.max(0, Math.floor(busyTimeoutMs));
    this.st = {
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT granary_commit'),
      release: db.prepare('RELEASE granary_commit'),
      rollbackTo: db.prepare('ROLLBACK TO granary_commit'),
    };
  }

  /** Runs `fn` (synchronous, statements only) in the next shared transaction; resolves once it is durable. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      this.schedule(0);
    });
  }

  private schedule(delayMs: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const go = (): void => {
      this.scheduled = false;
      this.flush();
    };
    if (delayMs === 0) setImmediate(go);
    else setTimeout(go, delayMs);
  }

  /** Takes the write lock without waiting; false (and a retry scheduled) when another connection holds it. */
  private begin(): boolean {
    // Not prepared statements: SQLite applies a PRAGMA when it is compiled, so a prepared one set it only once.
    this.db.pragma('busy_timeout = 0');
    try {
      this.st.begin.run();
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      const now = performance.now();
      this.busySince ??= now;
      if (now - this.busySince >= this.busyTimeoutMs) throw err;
      this.retries++;
      this.schedule(this.retries === 1 ? 0 : backoffMs({ firstMs: 1, maxMs: MAX_RETRY_DELAY_MS }, this.retries - 1));
      return false;
    } finally {
      this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    }
    this.busySince = undefined;
    this.retries = 0;
    return true;
  }

  private flush(): void {
    if (this.queue.length === 0) return;
    try {
      if (!this.begin()) return;
    } catch (err) {
      this.busySince = undefined;
      this.retries = 0;
      this.failAll(this.queue.splice(0), err);
      return;
    }
    const batch = this.queue.splice(0);
    const done: Array<{ p: Pending; value: unknown }> = [];
    const failed: Array<{ p: Pending; err: unknown }> = [];
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i] as Pending;
      this.st.savepoint.run();
      try {
        const value = p.fn();
        this.st.release.run();
        done.push({ p, value });
      } catch (err) {
        if (!this.db.inTransaction) {
          // SQLite ended the transaction itself: what ran before is gone too; run it again next time.
          failed.push({ p, err });
          this.queue.unshift(...done.map((d) => d.p), ...batch.slice(i + 1));
          this.settle([], failed);
          this.schedule(0);
          return;
        }
        this.st.rollbackTo.run();
        this.st.release.run();
        failed.push({ p, err });
      }
    }
    try {
      this.st.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.st.rollback.run();
      this.failAll(batch, err);
      return;
    }
    this.stats.transactions++;
    this.stats.commits += done.length;
    // Bodies that failed changed nothing: they answer now; the others once the WAL is on disk.
    this.settle([], failed);
    if (done.length > 0) {
      this.wal.sync().then(
        () => this.settle(done, []),
        (err: unknown) => this.failAll(done.map((d) => d.p), err),
      );
    }
    if (this.queue.length > 0) this.schedule(0);
  }

  private settle(done: Array<{ p: Pending; value: unknown }>, failed: Array<{ p: Pending; err: unknown }>): void {
    for (const d of done) d.p.resolve(d.value);
    for (const f of failed) f.p.reject(f.err);
  }

  private failAll(batch: Pending[], err: unknown): void {
    for (const p of batch) p.reject(err);
    if (this.queue.length > 0) this.schedule(0);
  }
}
