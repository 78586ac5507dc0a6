/**
 * Group commit for the embedded SQLite store.
 *
 * The connection runs WAL with `synchronous=NORMAL`: a commit appends its frames to the `-wal` file with write(2)
 * and returns without fsync. Durability is restored here, off the event loop and shared: `WalSync.sync()` resolves
 * once an fdatasync of the `-wal` file that *started after the call* has finished (it runs on libuv's thread pool).
 * Concurrent callers share one fdatasync: while one runs, every new caller waits for the next one, which starts as
 * soon as the running one ends. fdatasync flushes every page of the file, header included, so all frames written
 * before it began are on disk when it returns — what `synchronous=FULL` gives per commit, for a whole group at once.
 * Checkpoints (frames copied into the main file) sync the WAL before and the database after with NORMAL too, and
 * run in a worker thread (checkpointer.ts), never on the event loop.
 *
 * `withGroupCommit(store, …)` applies this to a store object: every async method that changed the database
 * resolves only after `sync()`; reads pay nothing. The stores' method bodies are synchronous (better-sqlite3), so
 * the changes counted right after the call are exactly that call's.
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Shared fdatasync of one SQLite `-wal` file; see the module comment. */
export class WalSync {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  private handle: FileHandle | undefined;
  private closed = false;
  /** fdatasyncs run so far (tests and metrics). */
  syncs = 0;

  /** `walPath`: the database path + `-wal`. */
  constructor(private readonly walPath: string) {}

  /**
   * Resolves when every frame written to the WAL before this call is on disk. Rejects with the file system's error
   * (errno code kept: the error handler answers the 599 family).
   */
  sync(): Promise<void> {
    if (!this.running) return this.start();
    // One is running already and may have started before our frames were written: wait for the next one.
    this.next ??= this.running.then(
      () => this.startNext(),
      () => this.startNext(),
    );
    return this.next;
  }

  private startNext(): Promise<void> {
    this.next = undefined;
    return this.start();
  }

  private start(): Promise<void> {
    const run = this.datasync().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  /**
   * The `-wal` file is opened on the first sync and kept open: SQLite deletes it only when the last connection to
   * the database closes, and the store's own connection stays open until `close()`, so the handle always names
   * the live file (a checkpoint that restarts or truncates the log writes into the same file). Opening and closing
   * it per sync cost two more trips through the thread pool (~3% of a 4 KiB upload's event loop).
   */
  private async datasync(): Promise<void> {
    this.syncs++;
    if (!this.handle) {
      try {
        this.handle = await open(this.walPath, 'r');
      } catch (err) {
        // No WAL file: nothing was written since the last checkpoint deleted it, so nothing needs syncing.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      if (this.closed) return this.dropHandle();
    }
    await this.handle.datasync();
  }

  /** Closes the kept handle once the running sync (if any) has ended; call when the store's connection closes. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.running, this.next]);
    await this.dropHandle();
  }

  private async dropHandle(): Promise<void> {
    const h = this.handle;
    this.handle = undefined;
    await h?.close();
  }
}

/**
 * Wraps `store` so that each of its async methods resolves only once its database changes are durable:
 * `changes()` (the connection's `total_changes()`) is read before and right after the call; when it moved, the
 * result waits for `wal.sync()`. Other properties and sync methods pass through unchanged.
 */
export function withGroupCommit<T extends object>(store: T, wal: WalSync, changes: () => number): T {
  // Keyed by the method itself, so a method replaced on the object (instrumentation) is wrapped afresh.
  const wrapped = new WeakMap<object, unknown>();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || value.constructor.name !== 'AsyncFunction') return value;
      let fn = wrapped.get(value);
      if (!fn) {
        const method = value as (...args: unknown[]) => Promise<unknown>;
        fn = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
          const before = changes();
          const pending = method.apply(this === receiver ? target : this, args);
          const wrote = changes() !== before;
          const result = await pending;
          if (wrote) await wal.sync();
          return result;
        };
        wrapped.set(value, fn);
      }
      return fn;
    },
  });
}
