/**
 * A worker's part of the metrics of workers (docs/operations/metrics-and-workers.md; the primary's in cluster-primary.ts):
 * it answers the primary's `collect` with its own registry, and `totals()` asks the primary for every worker's
 * registry and sums them with prom-client's `AggregatorRegistry.aggregate` — each metric by its `aggregator`
 * (counters and histograms summed; gauges read from the shared metadata or disk taken as their maximum; see
 * metrics.ts) — so a scrape on any worker reads the totals of all of them.
 */
import { AggregatorRegistry, type Registry } from 'prom-client';
import { isMetricsMessage, METRICS_MSG, type MetricsJson, type MetricsMessage } from './cluster-messages.js';

/** How long a worker waits for the primary's `gathered`, ms (the primary's own bound is shorter). */
const TOTALS_TIMEOUT_MS = 10_000;

/** The worker side: answers the primary for as long as the process lives. */
export class ClusterMetricsClient {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (lists: MetricsJson[]) => void; reject: (err: Error) => void }>();
  private readonly onMessage = (msg: unknown): void => {
    if (isMetricsMessage(msg, METRICS_MSG.collect)) this.collect(msg.id ?? 0);
    else if (isMetricsMessage(msg, METRICS_MSG.gathered)) {
      const w = this.waiting.get(msg.id ?? -1);
      if (!w) return;
      if (msg.error !== undefined || !Array.isArray(msg.lists)) w.reject(new Error(msg.error ?? 'no metrics'));
      else w.resolve(msg.lists);
    }
  };

  /** Answers the primary with `registry` from now on (call once, in a worker of the primary). */
  constructor(private readonly registry: Registry) {
    process.on('message', this.onMessage);
    this.send({ granary: METRICS_MSG.ready });
  }

  /**
   * The registry of every worker's metrics summed (a new Registry, rendered with `.metrics()`). Rejects when the
   * primary is gone or the gather failed or took over 10 s.
   */
  async totals(): Promise<Registry> {
    const id = this.nextId++;
    const lists = await new Promise<MetricsJson[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`the primary did not send the workers' metrics within ${TOTALS_TIMEOUT_MS} ms`));
      }, TOTALS_TIMEOUT_MS);
      const settle = (): void => {
        clearTimeout(timer);
        this.waiting.delete(id);
      };
      this.waiting.set(id, {
        resolve: (l) => (settle(), resolve(l)),
        reject: (e) => (settle(), reject(e)),
      });
      if (!this.send({ granary: METRICS_MSG.gather, id })) this.waiting.get(id)?.reject(new Error('the primary is gone'));
    });
    return AggregatorRegistry.aggregate(lists);
  }

  private collect(id: number): void {
    this.registry
      .getMetricsAsJSON()
      .then((metrics) => this.send({ granary: METRICS_MSG.collected, id, metrics }))
      .catch((err: unknown) => this.send({ granary: METRICS_MSG.collected, id, error: (err as Error).message }));
  }

  /** Sends `m` to the primary; false when the channel is closed. */
  private send(m: MetricsMessage): boolean {
    if (!process.connected || !process.send) return false;
    process.send(m, undefined, undefined, () => undefined);
    return true;
  }
}
