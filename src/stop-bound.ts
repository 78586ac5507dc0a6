/**
 * The bound of a graceful stop (GRANARY_STOP_TIMEOUT, main.ts `close()`): the stop waits for requests in flight,
 * jobs and fetch tasks up to that many seconds. Past it, what still runs is aborted in three steps:
 * 1. the blob store's calls in flight fail at once (`BlobStore.abort`: an S3 call stuck on a frozen store), so the
 *    requests waiting on them answer (599 `the object store (S3) failed or did not answer`);
 * 2. those requests get ABORT_GRACE_MS to send that answer;
 * 3. every connection still open is closed, the listeners stop waiting for their handlers, and each request still
 *    running is logged (warn: request id, method, route), then the stop goes on (leases released, stores closed).
 * So a stop ends within GRANARY_STOP_TIMEOUT plus ABORT_GRACE_MS (plus closing the stores). A handler left running
 * fails on its own against the closed stores; it is never waited for.
 */
import type { Logger } from 'pino';
import type { RunningHandler } from './handlers-in-flight.js';

/** Time the aborted requests get to answer, ms. */
export const ABORT_GRACE_MS = 1000;

/** Whether `p` settled (resolved or rejected) within `ms` milliseconds. */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a stop past its timeout aborts. */
export interface Abortable {
  /** Fails the blob store's calls in flight (BlobStore.abort). */
  abortStoreCalls(): void;
  /** Closes every connection of every listener and stops waiting for their handlers; returns those handlers. */
  closeConnections(): RunningHandler[];
}

/**
 * Waits for `drained` (the listeners closed, the workers stopped) at most `stopMs`; past it aborts what runs (see
 * the module comment) and returns once the aborted requests had their grace. Rejects only when `drained` rejected
 * in time.
 */
export async function boundStop(drained: Promise<unknown>, stopMs: number, what: Abortable, log: Logger): Promise<void> {
  if (await settlesWithin(drained, stopMs)) {
    await drained; // its failure, if any, is the stop's
    return;
  }
  what.abortStoreCalls();
  const answered = await settlesWithin(drained, ABORT_GRACE_MS);
  const left = what.closeConnections();
  if (answered && left.length === 0) {
    log.warn({ stopTimeoutSeconds: stopMs / 1000 }, 'stop: calls to the blob store still running after GRANARY_STOP_TIMEOUT were aborted');
    return;
  }
  for (const h of left) log.warn({ reqId: h.reqId, method: h.method, route: h.route }, 'stop: request aborted, still running after GRANARY_STOP_TIMEOUT');
  log.warn({ stopTimeoutSeconds: stopMs / 1000, requests: left.length }, 'stop: gave up waiting after GRANARY_STOP_TIMEOUT; stopping anyway');
}
