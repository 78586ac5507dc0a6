/**
 * The event delivery worker: takes due events from the outbox (ports/events.ts) and delivers them (deliver.ts), at
 * most `concurrency` at a time (GRANARY_EVENT_CONCURRENCY). It wakes when a transaction of this process wrote
 * events (EventOutbox.subscribe), when one of its deliveries ends, on a timer armed (on the Clock) for the earliest
 * retry, and every `pollMs` (events written by another process, e.g. an offline CLI command).
 *
 * Retries: an attempt that fails (no URL answered 2xx) is tried again after `retryMs · 2^(attempt−1)` (at most an
 * hour) until `maxAttempts` (GRANARY_EVENT_ATTEMPTS) were made; then the event is `failed`. A failure that cannot
 * heal by itself (every URL refused by the outbound guard or unusable, the signing key deleted) fails it at once.
 * Events are claimed oldest first; a retried event does not hold back the others.
 *
 * At least once: an event is marked `done` only after a 2xx; one interrupted by a crash is still `running` in the
 * store and is queued again (`requeueAbandoned`, workers/recovery.ts: at the next start or by the reaper once its
 * process's lease is gone), so it may arrive twice (same `id`), never zero times. Stop: in-flight requests are aborted and their events released to `waiting` (attempt not counted).
 * Delivered and failed events are deleted `retentionMs` after they ended (checked at start and hourly).
 */
import { backoffMs } from '../backoff.js';
import type { Granary } from '../context.js';
import { ClaimPump } from '../ports/claim-pump.js';
import type { EventOutbox, OutboxEvent } from '../ports/events.js';
import { deliverEvent } from './deliver.js';
import type { EventPayload } from './outbox.js';

/** Settings of an EventWorker. */
export interface EventWorkerOptions {
  /** Deliveries running at the same time (≥ 1). */
  concurrency: number;
  /** Attempts before an event is given up (≥ 1). */
  maxAttempts: number;
  /** Pause after the first failed attempt, ms; doubled after each further one (at most an hour). */
  retryMs: number;
  /** How often the outbox is looked at without being woken, ms (default 5000). */
  pollMs?: number;
  /** How long delivered and failed events are kept, ms (default 7 days). */
  retentionMs?: number;
}

/** Longest pause between two attempts. */
const MAX_RETRY_MS = 3600 * 1000;
/** Default retention of finished events. */
export const EVENT_RETENTION_MS = 7 * 86400 * 1000;
const PRUNE_EVERY_MS = 3600 * 1000;

export class EventWorker {
  private readonly pump: ClaimPump<OutboxEvent>;
  private readonly abort = new AbortController();
  private poller: NodeJS.Timeout | undefined;
  private pruner: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private started = false;
  private stopping = false;

  /** A worker over `outbox` (normally `g.meta.events`); call `start`. */
  constructor(
    private readonly g: Granary,
    private readonly outbox: EventOutbox,
    private readonly opts: EventWorkerOptions,
  ) {
    this.pump = new ClaimPump({
      source: outbox,
      clock: g.clock,
      concurrency: opts.concurrency,
      run: (event) => this.run(event),
      onError: (err, id) => g.log.error({ err, ...(id ? { event: id } : {}) }, id ? 'events: delivery error' : 'events: outbox error'),
    });
  }

  /** Prunes old events and starts delivering. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.prune();
    this.unsubscribe = this.outbox.subscribe(() => this.pump.wake());
    this.poller = setInterval(() => this.poke(), this.opts.pollMs ?? 5000);
    this.poller.unref();
    this.pruner = setInterval(() => {
      this.prune().catch((err: unknown) => this.g.log.warn({ err }, 'events: prune failed'));
    }, PRUNE_EVERY_MS);
    this.pruner.unref();
    this.pump.start();
  }

  /** Deletes delivered and failed events that ended more than the retention ago; returns how many. */
  async prune(): Promise<number> {
    return this.outbox.prune(this.g.clock.nowMs() - (this.opts.retentionMs ?? EVENT_RETENTION_MS));
  }

  /** Number of deliveries running now. */
  get running(): number {
    return this.pump.active.size;
  }

  /** Wakes when an event is due (a read; claims take the write lock). Also called when another process wrote. */
  poke(): void {
    if (!this.stopping) this.pump.poke();
  }


  /** One attempt of a claimed event, then its final state or its retry. */
  private async run(event: OutboxEvent): Promise<void> {
    const now = (): number => this.g.clock.nowMs();
    let payload: EventPayload;
    try {
      payload = JSON.parse(event.payload) as EventPayload;
    } catch {
      await this.outbox.finish(event.id, 'failed', 'unreadable event', now());
      return;
    }
    const log = this.g.log.child({ event: event.id, bucket: payload.bucket, rule: payload.rule });
    let outcome;
    try {
      outcome = await deliverEvent(this.g, payload, this.abort.signal);
    } catch (err) {
      if (!this.abort.signal.aborted) throw err;
      // Stopping: the event goes back to the queue for the next start, this attempt not counted.
      await this.outbox.release(event.id, now());
      return;
    }
    if (outcome.delivered) {
      await this.outbox.finish(event.id, 'done', outcome.detail, now());
      return;
    }
    if (outcome.permanent || event.attempts >= this.opts.maxAttempts) {
      await this.outbox.finish(event.id, 'failed', outcome.detail, now());
      log.warn({ attempts: event.attempts, error: outcome.detail }, 'events: delivery given up');
      return;
    }
    const delay = backoffMs({ firstMs: this.opts.retryMs, maxMs: MAX_RETRY_MS }, event.attempts);
    await this.outbox.retryAt(event.id, now() + delay, outcome.detail, now());
    log.info({ attempt: event.attempts, delayMs: delay, error: outcome.detail }, 'events: delivery failed, retry later');
  }

  /** Stops: no new event is taken; in-flight deliveries are aborted and released for the next start. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.unsubscribe?.();
    this.pump.stop();
    for (const t of [this.poller, this.pruner]) if (t) clearTimeout(t);
    this.poller = this.pruner = undefined;
    this.abort.abort();
    await Promise.allSettled([...this.pump.active.values()]);
  }
}
