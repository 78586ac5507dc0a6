/**
 * The async-fetch worker: runs queued `/sisyphus/fetch` tasks in this process, at most `concurrency` at a time
 * (GRANARY_FETCH_CONCURRENCY). No polling: it wakes when a task is queued (FetchTaskStore.subscribe), when one of
 * its tasks ends, on a timer armed for the earliest retry, and when the Clock jumps (ports/claim-pump.ts).
 *
 * Retries: a retryable failure (fetch-task-run.ts) is tried again after `retryDelayMs(attempt)` (default 1 s,
 * then 2 s, …; main.ts: GRANARY_FETCH_RETRY_MS), counted on the Clock (the task's `nextRunMs` is the Clock's now
 * plus the delay, so a test moves the clock instead of waiting), until `maxAttempts` (default 3) attempts were
 * made; then the task fails. A task ends `done` or `failed` only after its completion callback was attempted (a
 * crash in between runs the task again: the callback may be delivered twice, never lost).
 *
 * Tasks left `running` by a process that died are queued again by workers/recovery.ts (at start, and by the reaper
 * while other workers run); tasks queued by another process wake this one through `poke()` (workers/).
 * Stop: no new task is taken; running
 * tasks get `graceMs` to finish, the rest are released back to `waiting` (their attempt not counted) and
 * whatever they do afterwards is not recorded; the next start runs them again (storing is atomic).
 */
import { backoffMs } from '../../backoff.js';
import type { Granary } from '../../context.js';
import { ClaimPump } from '../../ports/claim-pump.js';
import type { FetchTaskRecord, FetchTaskStore } from '../../ports/fetch-tasks.js';
import type { AsyncFetchRequest } from './async-fetch.js';
import { attemptFetchTask, sendFetchCallback } from './fetch-task-run.js';

/** Settings of a FetchWorker. */
export interface FetchWorkerOptions {
  /** Tasks run at the same time (≥ 1). */
  concurrency: number;
  /** Attempts before a retryable failure becomes final (default 3). */
  maxAttempts?: number;
  /** Delay before the next attempt after attempt number `attempt` (1-based) failed, ms (default 1000·2^(attempt−1)). */
  retryDelayMs?: (attempt: number) => number;
  /** How long `stop` waits for running tasks before releasing them, ms (default 5000). */
  graceMs?: number;
}

export class FetchWorker {
  private readonly pump: ClaimPump<FetchTaskRecord>;
  private readonly abandoned = new Set<string>();
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly graceMs: number;
  private unsubscribe: (() => void) | undefined;
  private started = false;
  private stopping = false;

  /** A worker over `store` (normally `g.meta.fetchTasks`); call `start`. */
  constructor(
    private readonly g: Granary,
    private readonly store: FetchTaskStore,
    private readonly opts: FetchWorkerOptions,
  ) {
    this.maxAttempts = opts.maxAttempts ?? 3;
    this.retryDelayMs = opts.retryDelayMs ?? ((attempt) => backoffMs({ firstMs: 1000 }, attempt));
    this.graceMs = opts.graceMs ?? 5000;
    this.pump = new ClaimPump({
      source: store,
      clock: g.clock,
      concurrency: opts.concurrency,
      run: (task) => this.run(task),
      onError: (err, id) => g.log.error({ err, ...(id ? { task: id } : {}) }, id ? 'async fetch: task error' : 'async fetch: queue error'),
      onSettled: (id) => this.abandoned.delete(id),
    });
  }

  /** Subscribes to new tasks and starts taking them. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.store.subscribe(() => this.pump.wake());
    this.pump.start();
  }

  /** Another process may have queued a task: looks (a read) and claims when one is due. */
  poke(): void {
    this.pump.poke();
  }

  /** Number of tasks running now. */
  get running(): number {
    return this.pump.active.size;
  }

  /** One attempt of a claimed task, then its retry, or its callback and final state. */
  private async run(task: FetchTaskRecord): Promise<void> {
    const log = this.g.log.child({ task: task.id });
    let req: AsyncFetchRequest;
    try {
      req = JSON.parse(task.request) as AsyncFetchRequest;
    } catch {
      await this.store.finish(task.id, 'failed', JSON.stringify({ error: 'unreadable task', code: 599 }), this.g.clock.nowMs());
      return;
    }
    const outcome = await attemptFetchTask(this.g, task, req);
    if (this.abandoned.has(task.id)) return;
    if (!outcome.ok && outcome.retryable && task.attempts < this.maxAttempts) {
      const delay = this.retryDelayMs(task.attempts);
      log.info({ attempt: task.attempts, delayMs: delay, error: outcome.result.error }, 'async fetch: retry later');
      await this.store.retryAt(task.id, this.g.clock.nowMs() + delay, JSON.stringify(outcome.result), this.g.clock.nowMs());
      return;
    }
    const callbackError = await sendFetchCallback(this.g, task, req, outcome);
    if (callbackError !== undefined) {
      outcome.result.callbackError = callbackError;
      log.warn({ error: callbackError }, 'async fetch: callback failed');
    }
    if (this.abandoned.has(task.id)) return;
    const state = outcome.ok ? 'done' : 'failed';
    await this.store.finish(task.id, state, JSON.stringify(outcome.result), this.g.clock.nowMs());
    if (outcome.ok) log.info({ key: outcome.result.key, ignored: outcome.result.ignored === true }, 'async fetch: done');
    else log.warn({ attempts: task.attempts, error: outcome.result.error }, 'async fetch: failed');
  }

  /**
   * Stops taking tasks; waits up to `graceMs` for the running ones, then releases the rest back to the queue
   * (see the module comment). Resolves when nothing more will be written by this worker.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.unsubscribe?.();
    this.pump.stop();
    const active = this.pump.active;
    if (active.size === 0) return;
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => {
      graceTimer = setTimeout(() => resolve('timeout'), this.graceMs);
    });
    const settled = Promise.allSettled([...active.values()]).then(() => 'settled' as const);
    const how = await Promise.race([settled, grace]);
    clearTimeout(graceTimer);
    if (how === 'settled') return;
    for (const id of [...active.keys()]) {
      this.abandoned.add(id);
      await this.store
        .release(id, this.g.clock.nowMs())
        .catch((err: unknown) => this.g.log.warn({ err, task: id }, 'async fetch: release failed'));
    }
    this.g.log.info({ tasks: this.abandoned.size }, 'async fetch: running tasks released for the next start');
  }
}
