/**
 * Request and error rates for the console's Overview, read from the Prometheus request counter
 * (`granary_http_requests_total`, by role/operation/status; src/metrics) as a scrape reads it — with workers, the
 * totals of all of them — when the Granary has metrics (client errors:
 * 4xx, 573 and Kodo's 6xx/7xx; server errors: the other 5xx, see `isServerError`): totals since
 * the start, and rates per second over about the last minute from samples taken every 10 seconds (at most 7 kept).
 * Without metrics (offline contexts) the Overview shows none. The sampler's timer does not keep the process alive.
 */

/** The part of a prom-client Counter read here. */
interface CounterLike {
  get(): Promise<{ values: Array<{ value: number; labels: Record<string, string | number | undefined> }> }>;
}

/** Request totals at one moment. `ms` Unix milliseconds. */
interface Sample {
  ms: number;
  requests: number;
  clientErrors: number;
  serverErrors: number;
}

/** What the Overview shows: totals since the start, and per-second rates over `windowSeconds` (0 = none yet). */
export interface RequestRates {
  total: { requests: number; clientErrors: number; serverErrors: number };
  perSecond: { requests: number; clientErrors: number; serverErrors: number };
  windowSeconds: number;
}

const SAMPLE_MS = 10_000;

/**
 * Whether a status is the server's failure: 5xx, except Kodo's 573 (too many requests). Kodo's 6xx/7xx codes (612 no
 * such entry, 614 exists, 631 no such bucket, 640 bad marker, 701 bad ctx…) are answers to the request, like 4xx.
 */
export function isServerError(status: number): boolean {
  return status >= 500 && status < 600 && status !== 573;
}
const KEEP = 7;

export class RequestRateSampler {
  private readonly samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly counter: CounterLike) {}

  /** Takes a sample now and every 10 s until `stop()`. */
  start(): void {
    // A sample that cannot be read (the workers' totals not gathered) is skipped: the next one comes in 10 s.
    const sample = (): void => void this.sample().catch(() => undefined);
    sample();
    this.timer = setInterval(sample, SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async read(): Promise<Sample> {
    const s: Sample = { ms: Date.now(), requests: 0, clientErrors: 0, serverErrors: 0 };
    for (const v of (await this.counter.get()).values) {
      const status = Number(v.labels.status);
      s.requests += v.value;
      if (isServerError(status)) s.serverErrors += v.value;
      else if (status >= 400) s.clientErrors += v.value;
    }
    return s;
  }

  private async sample(): Promise<void> {
    this.samples.push(await this.read());
    while (this.samples.length > KEEP) this.samples.shift();
  }

  /** Totals now and rates since the oldest kept sample. */
  async rates(): Promise<RequestRates> {
    const now = await this.read();
    const old = this.samples[0];
    const seconds = old ? (now.ms - old.ms) / 1000 : 0;
    const rate = (n: number, o: number | undefined): number => (seconds >= 1 && o !== undefined ? Math.max(0, (n - o) / seconds) : 0);
    return {
      total: { requests: now.requests, clientErrors: now.clientErrors, serverErrors: now.serverErrors },
      perSecond: {
        requests: rate(now.requests, old?.requests),
        clientErrors: rate(now.clientErrors, old?.clientErrors),
        serverErrors: rate(now.serverErrors, old?.serverErrors),
      },
      windowSeconds: seconds >= 1 ? Math.round(seconds) : 0,
    };
  }
}

/** The name of the request counter the rates are read from. */
const REQUESTS = 'granary_http_requests_total';

/**
 * The request counter of `g.metrics` as the scrape sees it, when the Granary has metrics: with workers, the totals of
 * every worker (metrics.ts `totals`), so each worker's console shows the same rates as `/metrics`.
 */
export function requestCounterOf(g: object): CounterLike | undefined {
  const metrics = (g as { metrics?: { totals?: () => Promise<{ getSingleMetric(name: string): unknown }> } }).metrics;
  const totals = metrics?.totals;
  if (!totals) return undefined;
  return {
    get: async () => {
      const metric = (await totals.call(metrics)).getSingleMetric(REQUESTS) as CounterLike | undefined;
      return metric ? metric.get() : { values: [] };
    },
  };
}
