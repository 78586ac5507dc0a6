/**
 * The console Overview's history, kept by Granary itself (no Prometheus needed): every
 * GRANARY_CONSOLE_SAMPLE_SECONDS (default 60) the recording process of each node — the single process, or worker 0
 * of a primary — reads the node's metrics as a scrape would (with workers, the totals of all of them,
 * metrics/cluster-*.ts) and stores what happened since its previous reading as one `traffic` sample per node
 * (ports/console-samples.ts): requests, client and server errors (request-rates.ts `isServerError`), bytes in and
 * out, and the latency histogram's counts (so nodes add up and percentiles are computed after). The console
 * listener's own requests are left out (the Overview polling itself is not traffic). Every 60 intervals (hourly by
 * default) it stores one `storage` sample per bucket (bytes, entries); the cluster's nodes race for it and the first
 * wins. Traffic is kept 60 intervals and storage 30 days; older samples are deleted as new ones are written.
 * `history()` reads them back summed over nodes, with p50/p99 latency per interval. Timers do not keep the process
 * alive; a sample that fails to be read or written is skipped (logged at debug).
 */
import { hostname } from 'node:os';
import type { Granary } from '../context.js';
import type { ConsoleSample } from '../ports/console-samples.js';
import { isServerError } from './request-rates.js';

/** One traffic point: what happened during the interval ending at `at` (Unix seconds), summed over nodes. */
export interface TrafficPoint {
  at: number;
  seconds: number;
  requests: number;
  clientErrors: number;
  serverErrors: number;
  bytesIn: number;
  bytesOut: number;
  /** Latency percentiles, ms (null when no request finished in the interval). */
  p50Ms: number | null;
  p99Ms: number | null;
}

/** One storage point per time: `buckets` maps a bucket name to its bytes then. */
export interface StoragePoint {
  at: number;
  buckets: Record<string, number>;
}

/** What `GET /api/history` answers (api-overview.ts). */
export interface History {
  intervalSeconds: number;
  /** null for an account key (traffic is the whole server's). */
  traffic: TrafficPoint[] | null;
  storage: StoragePoint[];
}

/** Cumulative totals read from the metrics at one moment. `le` → cumulative count of the latency histogram. */
interface Totals {
  requests: number;
  clientErrors: number;
  serverErrors: number;
  bytesIn: number;
  bytesOut: number;
  latency: Record<string, number>;
}

/** The part of a prom-client metric read here. */
interface MetricLike {
  get(): Promise<{ values: Array<{ value: number; labels: Record<string, string | number | undefined>; metricName?: string }> }>;
}

const STORAGE_KEEP_SECONDS = 30 * 24 * 3600;
/** Storage is recorded once per this many traffic intervals. */
const STORAGE_EVERY = 60;
/** Traffic is kept this many intervals. */
const TRAFFIC_KEEP = 60;

/** Reads the node's totals from `g.metrics` (undefined when the Granary has none). */
async function readTotals(g: Granary): Promise<Totals | undefined> {
  const metrics = g.metrics as { totals?: () => Promise<{ getSingleMetric(name: string): unknown }> } | undefined;
  if (!metrics?.totals) return undefined;
  const reg = await metrics.totals();
  const values = async (name: string) => {
    const metric = reg.getSingleMetric(name) as MetricLike | undefined;
    return metric ? (await metric.get()).values : [];
  };
  const t: Totals = { requests: 0, clientErrors: 0, serverErrors: 0, bytesIn: 0, bytesOut: 0, latency: {} };
  for (const v of await values('granary_http_requests_total')) {
    if (v.labels.role === 'console') continue;
    const status = Number(v.labels.status);
    t.requests += v.value;
    if (isServerError(status)) t.serverErrors += v.value;
    else if (status >= 400) t.clientErrors += v.value;
  }
  for (const v of await values('granary_http_received_bytes_total')) if (v.labels.role !== 'console') t.bytesIn += v.value;
  for (const v of await values('granary_http_sent_bytes_total')) if (v.labels.role !== 'console') t.bytesOut += v.value;
  for (const v of await values('granary_http_request_duration_seconds')) {
    if (v.labels.role === 'console' || v.metricName !== 'granary_http_request_duration_seconds_bucket') continue;
    const le = String(v.labels.le);
    t.latency[le] = (t.latency[le] ?? 0) + v.value;
  }
  return t;
}

/** `now − before`, never negative (a restarted worker's counters start again from 0). */
function delta(now: Totals, before: Totals): Totals {
  const d = (a: number, b: number | undefined): number => Math.max(0, a - (b ?? 0));
  const latency: Record<string, number> = {};
  for (const [le, n] of Object.entries(now.latency)) latency[le] = d(n, before.latency[le]);
  return {
    requests: d(now.requests, before.requests),
    clientErrors: d(now.clientErrors, before.clientErrors),
    serverErrors: d(now.serverErrors, before.serverErrors),
    bytesIn: d(now.bytesIn, before.bytesIn),
    bytesOut: d(now.bytesOut, before.bytesOut),
    latency,
  };
}

/**
 * The `q` quantile (0…1) of a histogram given as cumulative counts per upper bound (`le`, seconds, `+Inf` last), in
 * ms, interpolated linearly within the bucket it falls in (as Prometheus' histogram_quantile); null when empty.
 */
export function quantileMs(cumulative: Record<string, number>, q: number): number | null {
  const bounds = Object.entries(cumulative)
    .map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = bounds.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevN = 0;
  for (const [le, n] of bounds) {
    if (n >= rank) {
      if (le === Infinity) return prevLe * 1000;
      const within = n - prevN > 0 ? (rank - prevN) / (n - prevN) : 1;
      return (prevLe + (le - prevLe) * within) * 1000;
    }
    prevLe = le;
    prevN = n;
  }
  return prevLe * 1000;
}

/** Records and reads the history (see the module comment). */
export class ConsoleHistory {
  private timer: NodeJS.Timeout | undefined;
  private last: Totals | undefined;
  private ticks = 0;
  private readonly source: string;
  private readonly intervalMs: number;

  constructor(private readonly g: Granary) {
    this.intervalMs = g.config.consoleSampleSeconds * 1000;
    // One name per node: the data dir tells apart nodes that share a host (tests, several nodes on one machine).
    this.source = `${hostname()}:${g.config.dataDir}`;
  }

  /** Whether this process records (a single process, or worker 0 of a primary). */
  get records(): boolean {
    return this.g.workerSlot === undefined || this.g.workerSlot === 0;
  }

  /** Starts recording (in the recording process only): a baseline now, then one sample per interval. */
  start(): void {
    if (!this.records) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    const interval = this.intervalMs / 1000;
    const at = Math.round(this.g.clock.nowMs() / this.intervalMs) * interval;
    try {
      const now = await readTotals(this.g);
      if (now && this.last) {
        const d = delta(now, this.last);
        await this.g.meta.consoleSamples.putSample({ kind: 'traffic', atSeconds: at, source: this.source, data: { seconds: interval, ...d } });
        await this.g.meta.consoleSamples.pruneSamples('traffic', at - TRAFFIC_KEEP * interval);
      }
      if (now) this.last = now;
      if (this.ticks++ % STORAGE_EVERY === 0) await this.recordStorage(Math.floor(at / (interval * STORAGE_EVERY)) * interval * STORAGE_EVERY);
    } catch (err) {
      this.g.log.debug({ err }, 'console history: sample skipped');
    }
  }

  private async recordStorage(at: number): Promise<void> {
    for (const b of await this.g.meta.listBuckets()) {
      const u = await this.g.meta.bucketUsage(b.name);
      await this.g.meta.consoleSamples.putSample({ kind: 'storage', atSeconds: at, source: b.name, data: { bytes: u?.bytes ?? 0, objects: u?.count ?? 0 } });
    }
    await this.g.meta.consoleSamples.pruneSamples('storage', at - STORAGE_KEEP_SECONDS);
  }

  /**
   * The traffic of the last 60 intervals (summed over nodes; only when `traffic`) and the storage of the last 30
   * days of the buckets `mayRead` admits, with a last point now (`current`: bucket → bytes) so a fresh bucket shows.
   */
  async history(opts: { traffic: boolean; mayRead: (bucket: string) => boolean; current: Record<string, number> }): Promise<History> {
    const interval = this.intervalMs / 1000;
    const nowS = Math.floor(this.g.clock.nowMs() / 1000);
    const traffic: TrafficPoint[] = [];
    if (opts.traffic) {
      const byAt = new Map<number, ConsoleSample[]>();
      for (const s of await this.g.meta.consoleSamples.listSamples('traffic', nowS - TRAFFIC_KEEP * interval)) {
        byAt.set(s.atSeconds, [...(byAt.get(s.atSeconds) ?? []), s]);
      }
      for (const [at, samples] of byAt) {
        const sum = (k: keyof Totals): number => samples.reduce((n, s) => n + (Number(s.data[k]) || 0), 0);
        const latency: Record<string, number> = {};
        for (const s of samples) {
          for (const [le, n] of Object.entries((s.data.latency ?? {}) as Record<string, number>)) latency[le] = (latency[le] ?? 0) + n;
        }
        const p50 = quantileMs(latency, 0.5);
        const p99 = quantileMs(latency, 0.99);
        traffic.push({
          at,
          seconds: Number(samples[0]?.data.seconds) || interval,
          requests: sum('requests'),
          clientErrors: sum('clientErrors'),
          serverErrors: sum('serverErrors'),
          bytesIn: sum('bytesIn'),
          bytesOut: sum('bytesOut'),
          p50Ms: p50 === null ? null : Math.round(p50 * 10) / 10,
          p99Ms: p99 === null ? null : Math.round(p99 * 10) / 10,
        });
      }
    }
    const byAt = new Map<number, Record<string, number>>();
    for (const s of await this.g.meta.consoleSamples.listSamples('storage', nowS - STORAGE_KEEP_SECONDS)) {
      if (!opts.mayRead(s.source)) continue;
      const point = byAt.get(s.atSeconds) ?? {};
      point[s.source] = Number(s.data.bytes) || 0;
      byAt.set(s.atSeconds, point);
    }
    const storage: StoragePoint[] = [...byAt].map(([at, buckets]) => ({ at, buckets }));
    if ((storage.at(-1)?.at ?? 0) < nowS) storage.push({ at: nowS, buckets: opts.current });
    return { intervalSeconds: interval, traffic: opts.traffic ? traffic : null, storage };
  }
}
