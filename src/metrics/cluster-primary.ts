/**
 * The primary's part of the metrics of workers (docs/operations/metrics-and-workers.md): a worker asks (`gather`), the primary
 * asks every worker whose registry is ready (`collect`) and hands all their answers to the asking worker
 * (`gathered`), which sums them. The primary serves nothing and sums nothing: it only relays, so a scrape costs it
 * no CPU taken from the connection hand-off. Message shapes in metrics/cluster-messages.ts.
 *
 * A worker that exits during a gather is left out of it (its counters went with it: a restarted worker counts
 * from 0, which Prometheus reads as a counter reset). A worker alive but not answering within GATHER_TIMEOUT_MS
 * fails the gather (`error`): a scrape then fails rather than read totals that are short.
 */
import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { isMetricsMessage, METRICS_MSG, type MetricsJson, type MetricsMessage } from './cluster-messages.js';

/** How long a gather waits for the workers' answers, ms. */
const GATHER_TIMEOUT_MS = 5000;

interface Pending {
  waiting: Set<Worker>;
  lists: MetricsJson[];
  done: (error?: string) => void;
}

/** The primary's relay of the workers' metrics; `track` each forked worker, `remove` it when it exits. */
export class MetricsGather {
  private readonly ready = new Set<Worker>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  constructor(private readonly log: Logger) {}

  /** Follows `worker`'s metrics messages. */
  track(worker: Worker): void {
    worker.on('message', (msg: unknown) => {
      if (isMetricsMessage(msg, METRICS_MSG.ready)) this.ready.add(worker);
      else if (isMetricsMessage(msg, METRICS_MSG.gather)) this.gather(worker, msg.id ?? 0);
      else if (isMetricsMessage(msg, METRICS_MSG.collected)) this.collected(worker, msg);
    });
  }

  /** `worker` is gone: it is asked no more, and gathers waiting for it go on without it. */
  remove(worker: Worker): void {
    this.ready.delete(worker);
    for (const p of this.pending.values()) {
      if (p.waiting.delete(worker) && p.waiting.size === 0) p.done();
    }
  }

  private gather(asker: Worker, askerId: number): void {
    const id = this.nextId++;
    const workers = [...this.ready].filter((w) => w.isConnected());
    const reply = (m: MetricsMessage): void => {
      if (asker.isConnected()) asker.send(m, (err: Error | null) => err && this.log.debug({ err }, 'metrics: the asking worker is gone'));
    };
    const timer = setTimeout(() => done(`${[...entry.waiting].length} worker(s) did not send their metrics within ${GATHER_TIMEOUT_MS} ms`), GATHER_TIMEOUT_MS);
    const done = (error?: string): void => {
      if (!this.pending.delete(id)) return;
      clearTimeout(timer);
      reply(error ? { granary: METRICS_MSG.gathered, id: askerId, error } : { granary: METRICS_MSG.gathered, id: askerId, lists: entry.lists });
    };
    const entry: Pending = { waiting: new Set(workers), lists: [], done };
    this.pending.set(id, entry);
    if (workers.length === 0) return done();
    for (const w of workers) {
      w.send({ granary: METRICS_MSG.collect, id } satisfies MetricsMessage, (err: Error | null) => {
        // Its channel closed: it is exiting, and `remove` follows.
        if (err) this.log.debug({ err }, 'metrics: a worker could not be asked');
      });
    }
  }

  private collected(worker: Worker, msg: MetricsMessage): void {
    const p = this.pending.get(msg.id ?? -1);
    if (!p || !p.waiting.delete(worker)) return;
    if (msg.error !== undefined || !Array.isArray(msg.metrics)) return p.done(`a worker failed to collect its metrics: ${msg.error ?? 'no metrics'}`);
    p.lists.push(msg.metrics);
    if (p.waiting.size === 0) p.done();
  }
}
