/**
 * A lock file between processes: `withFileLock(lockPath, fn)` creates `lockPath` with O_CREAT|O_EXCL (the `wx` flag:
 * exactly one creator wins, on local file systems and NFSv3+), writes its pid and the time in it, runs `fn`, and
 * removes the file. A process finding the lock taken retries after a back-off (src/backoff.ts: 5 ms doubling to
 * 100 ms, jitter 0.5) until `timeoutMs` (default 10 s), then throws a TransferError naming the lock file and its
 * holder. A lock left by a process that is gone (its pid does not exist on this machine) or older than `staleMs`
 * (default 60 s: no holder keeps it that long) is removed and taken over.
 *
 * Used by transfer/remotes.ts so that concurrent `granary remote add|remove` read-modify-write remotes.json one at
 * a time (two adds at once used to lose one).
 */
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs, type Backoff } from '../backoff.js';
import { TransferError } from './errors.js';

/** The retry delays while the lock is held by another. */
const RETRY: Backoff = { firstMs: 5, maxMs: 100, jitter: 0.5 };

export interface FileLockOptions {
  /** Give up after this long, ms (default 10,000). */
  timeoutMs?: number;
  /** A lock older than this is stale whoever holds it, ms (default 60,000). */
  staleMs?: number;
}

/** Whether process `pid` exists on this machine (EPERM: it does, owned by another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The holder a lock file's text names (`<pid> <ms since epoch>`), or undefined when it names none (not written yet). */
function holderIn(text: string): { pid: number; atMs: number } | undefined {
  const [pid, atMs] = text.trim().split(' ').map(Number);
  return pid !== undefined && Number.isInteger(pid) && pid > 0 && atMs !== undefined && Number.isFinite(atMs) ? { pid, atMs } : undefined;
}

/**
 * The text of the lock at `lockPath` when it is left over (its holder is gone, or it is older than `staleMs`),
 * else undefined.
 */
async function staleText(lockPath: string, staleMs: number): Promise<string | undefined> {
  const text = await readFile(lockPath, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const holder = holderIn(text);
  if (holder) return !alive(holder.pid) || Date.now() - holder.atMs > staleMs ? text : undefined;
  // Created but not written yet (the holder writes right after creating), or unreadable: judge by its age.
  const st = await stat(lockPath).catch(() => undefined);
  return st !== undefined && Date.now() - st.mtimeMs > staleMs ? text : undefined;
}

/**
 * Runs `fn` holding the lock file `lockPath` (see the module comment) and answers its result; the lock is removed
 * whether `fn` succeeds or throws. Throws a TransferError when the lock stays taken for `timeoutMs`.
 */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      try {
        await handle.writeFile(`${process.pid} ${Date.now()}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const stale = await staleText(lockPath, staleMs);
    if (stale !== undefined) {
      // Removed only while it still holds the stale text (another waiter may have replaced it with a fresh lock
      // meanwhile; the window left is between this read and the unlink). Either way the next attempt competes.
      if ((await readFile(lockPath, 'utf8').catch(() => undefined)) === stale) await unlink(lockPath).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) {
      const holder = holderIn((await readFile(lockPath, 'utf8').catch(() => undefined)) ?? '');
      throw new TransferError(`${lockPath} is held${holder ? ` by process ${holder.pid}` : ''} for over ${timeoutMs / 1000} s; remove it if no granary command is running`);
    }
    await sleep(backoffMs(RETRY, attempt));
  }
  try {
    return await fn();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}
