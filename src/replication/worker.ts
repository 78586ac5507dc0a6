/**
 * The replication worker of a process (ports/replication.ts; docs/guides/replication.md): takes due rows from the
 * replication outbox with the claim pump of the durable queues (ports/claim-pump.ts), at most `concurrency` at a
 * time, and brings each key in step at its rule's target (copy.ts). Every process of every node runs one; a row
 * is claimed by one process at a time (the claim records the process; rows of a process that died are taken back
 * by workers/recovery.ts), so the copies of one key never overlap and a key's latest state always wins.
 *
 * Wakes: when this process wrote rows (ReplicationStore.subscribe), when a copy ends, on a timer for the earliest
 * retry, and every `pollMs` (rows written by another process: a CLI command, another node).
 *
 * Failures: an attempt that fails waits `retryMs · 2^(attempt−1)` (at most `maxRetryMs`) and is tried again, for
 * ever — a destination that is down for a day converges when it is back; from the `failAfter`-th failed attempt
 * the row is `failed` (the object's status FAILED, the destination's error in `granary replication status`). A
 * rule or target that no longer exists ends the row. Stop: copies in flight are aborted and their rows released.
 */
import { backoffMs } from '../backoff.js';
import type { Granary } from '../context.js';
import { Pacer } from '../objects/throttle.js';
import { ClaimPump } from '../ports/claim-pump.js';
import type { ReplicationItem, ReplicationStore } from '../ports/replication.js';
import { checkEndpoint, TargetClients } from './client.js';
import { replicateKey, statusOf } from './copy.js';

/** Settings of a ReplicationWorker (GRANARY_REPLICATION_*). */
export interface ReplicationWorkerOptions {
  concurrency: number;
  retryMs: number;
  maxRetryMs: number;
  failAfter: number;
  multipartBytes: number;
  /** Waiting rows above which a warning is logged. */
  backlog: number;
  /** How often the outbox is looked at without being woken, ms (default 2000). */
  pollMs?: number;
}

/** The text of a failure as the status shows it: the destination's code and message, and its HTTP status. */
export function errorText(err: unknown): string {
  const e = err as { name?: string; Code?: string; message?: string };
  const status = statusOf(err);
  const code = e.Code ?? e.name ?? 'Error';
  const message = e.message && e.message !== code ? `: ${e.message}` : '';
  return `${code}${message}${status ? ` (HTTP ${status})` : ''}`.slice(0, 1000);
}

const BACKLOG_WARN_EVERY_MS = 60_000;

export class ReplicationWorker {
  private readonly pump: ClaimPump<ReplicationItem>;
  private readonly abort = new AbortController();
  private readonly clients: TargetClients;
  private readonly pacers = new Map<string, { rate: number; pacer: Pacer }>();
  private poller: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopping = false;
  private lastBacklogWarnMs = 0;

  constructor(
    private readonly g: Granary,
    private readonly store: ReplicationStore,
    private readonly opts: ReplicationWorkerOptions,
  ) {
    this.clients = new TargetClients(g.outbound, g.log);
    this.pump = new ClaimPump({
      source: store,
      clock: g.clock,
      concurrency: opts.concurrency,
      run: (item) => this.run(item),
      onError: (err, id) => g.log.error({ err, ...(id ? { replication: id } : {}) }, id ? 'replication: copy error' : 'replication: outbox error'),
    });
  }

  start(): void {
    this.unsubscribe = this.store.subscribe(() => this.pump.wake());
    this.poller = setInterval(() => this.poke(), this.opts.pollMs ?? 2000);
    this.poller.unref();
    this.pump.start();
  }

  /** Wakes when a row is due (a read first). Also called when another process wrote. */
  poke(): void {
    if (!this.stopping) this.pump.poke();
    void this.checkBacklog();
  }

  private async checkBacklog(): Promise<void> {
    const now = this.g.clock.nowMs();
    if (now - this.lastBacklogWarnMs < BACKLOG_WARN_EVERY_MS) return;
    this.lastBacklogWarnMs = now;
    try {
      const n = await this.store.backlog();
      if (n > this.opts.backlog) {
        this.g.log.warn({ backlog: n, limit: this.opts.backlog }, 'replication: backlog above GRANARY_REPLICATION_BACKLOG (a destination down or too slow?)');
      }
    } catch (err) {
      this.g.log.warn({ err }, 'replication: backlog check failed');
    }
  }

  private pacerOf(arn: string, rate: number): Pacer | undefined {
    if (rate <= 0) return undefined;
    const hit = this.pacers.get(arn);
    if (hit && hit.rate === rate) return hit.pacer;
    const pacer = new Pacer(rate, Math.max(rate, 64 * 1024));
    this.pacers.set(arn, { rate, pacer });
    return pacer;
  }

  /** One attempt of a claimed row, then its end or its retry. */
  private async run(item: ReplicationItem): Promise<void> {
    const now = (): number => this.g.clock.nowMs();
    const bucket = await this.g.meta.getBucket(item.bucket);
    const rule = bucket?.settings.replication?.find((r) => r.id === item.rule);
    const target = rule && (await this.store.getTarget(rule.target));
    if (!rule || !target) {
      // The rule (or its bucket, or its target) is gone: nothing to bring in step any more.
      await this.store.complete(item, 'rule removed', undefined, true, now());
      return;
    }
    const log = this.g.log.child({ bucket: item.bucket, key: item.key, rule: item.rule });
    try {
      checkEndpoint(target.endpoint, this.g.outbound);
      const out = await replicateKey(this.g, item.bucket, item.key, {
        client: this.clients.get(target),
        target,
        rule,
        ...(this.pacerOf(target.arn, target.bandwidth) ? { pacer: this.pacerOf(target.arn, target.bandwidth) as Pacer } : {}),
        multipartBytes: this.opts.multipartBytes,
        ...(item.copied ? { previous: item.copied } : {}),
        signal: this.abort.signal,
      });
      this.g.metrics?.replicationAttempts.inc({ outcome: out.action });
      if (out.bytes > 0) this.g.metrics?.replicationBytes.inc(out.bytes);
      const remove = out.action === 'deleted' || out.action === 'delete-skipped';
      await this.store.complete(item, out.action, out.copied, remove, now());
    } catch (err) {
      if (this.abort.signal.aborted) {
        await this.store.release(item.id, now());
        return;
      }
      const text = errorText(err);
      this.g.metrics?.replicationAttempts.inc({ outcome: 'failed' });
      const failed = item.attempts >= this.opts.failAfter;
      const delay = backoffMs({ firstMs: this.opts.retryMs, maxMs: this.opts.maxRetryMs }, item.attempts);
      await this.store.retryAt(item, now() + delay, text, failed, now());
      if (failed) log.warn({ attempts: item.attempts, error: text, delayMs: delay }, 'replication: object FAILED, retrying later');
      else log.info({ attempt: item.attempts, error: text, delayMs: delay }, 'replication: copy failed, retry later');
    }
  }

  /** Stops: no new row is taken; copies in flight are aborted and released for the next start. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.unsubscribe?.();
    this.pump.stop();
    if (this.poller) clearInterval(this.poller);
    this.abort.abort();
    await Promise.allSettled([...this.pump.active.values()]);
    this.clients.close();
  }
}
