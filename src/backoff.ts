/**
 * The one back-off formula of every retry loop: exponential with a cap and optional jitter. The delay before
 * retry number `n` (1 = the first retry, i.e. after the first failed attempt) is
 *
 *   min(firstMs · 2^(n−1), maxMs) · (1 − jitter + 2 · jitter · random)        milliseconds
 *
 * so with jitter 0.25 it lies in [0.75, 1.25) of the capped value. Each caller keeps its own parameters (the
 * documented settings, docs/reference/configuration.md):
 * - async-fetch retries (objects/fetch/fetch-worker.ts): first GRANARY_FETCH_RETRY_MS, no cap (3 attempts);
 * - job notifications (jobs/notify.ts): first GRANARY_NOTIFY_RETRY_MS, no cap (GRANARY_NOTIFY_ATTEMPTS);
 * - event deliveries (events/worker.ts): first GRANARY_EVENT_RETRY_MS, at most an hour;
 * - the PostgreSQL LISTEN reconnection (store/postgres/wake.ts): 100 ms to 5 s, jitter 0.25;
 * - the SQLite commit batch waiting for the write lock (store/sqlite/commit-batch.ts): 1 ms to 8 ms;
 * - a worker process restarted by the primary (workers/primary.ts): 250 ms to 30 s;
 * - waiting for the lock file of the CLI's remotes file (transfer/file-lock.ts): 5 ms to 100 ms, jitter 0.5.
 * No jitter unless asked: the delays of queue retries are counted on the Clock and tests move it by them.
 */

/** The parameters of one caller's back-off. */
export interface Backoff {
  /** Delay before the first retry, ms (> 0). */
  firstMs: number;
  /** Longest delay before jitter, ms (default: none). */
  maxMs?: number;
  /** Fraction (0–1) the delay is spread by, each way (default 0: exact). */
  jitter?: number;
}

/** Exponents beyond this only overflow (2^60 ms is far beyond any delay). */
const MAX_EXPONENT = 60;

/**
 * The delay before retry number `n` (≥ 1), ms: see the module comment. `random` (default Math.random, values in
 * [0, 1)) is for tests.
 */
export function backoffMs(b: Backoff, n: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(n - 1, 0), MAX_EXPONENT);
  const capped = Math.min(b.firstMs * 2 ** exponent, b.maxMs ?? Number.POSITIVE_INFINITY);
  const jitter = b.jitter ?? 0;
  return jitter > 0 ? capped * (1 - jitter + 2 * jitter * random()) : capped;
}
