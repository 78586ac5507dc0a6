/**
 * Granary's Prometheus metrics (prom-client): one registry per Granary (several servers share a test process, so
 * the global default registry is never used). Every series is prefixed `granary_`. Labels are bounded: role,
 * operation (a route pattern), status, upload kind, fop command, cache result, job state and code — never keys;
 * bucket names only on the per-bucket usage gauges.
 *
 * Counted where it happens (one call at each central point, all optional: `g.metrics?.…`): requests and bytes
 * (metrics/http.ts hooks on both listeners), uploads (callers of putObject), fop runs (fops/execute.ts), fop cache
 * answers (roles/io/fop.ts), finished jobs (jobs/worker.ts), outbound refusals (outbound/client.ts through
 * `OutboundPolicy.onRefused`). Read on scrape (`collectFrom`): job queue depth, disk space, scrub progress, bucket
 * usage, plus prom-client's default process metrics (event-loop lag, heap, CPU, GC, file descriptors).
 *
 * With workers (GRANARY_WORKERS > 1) a scrape reads the totals of all of them (`totals()`, metrics/cluster-worker.ts;
 * docs/operations/metrics-and-workers.md): counters and histograms are summed; the gauges read on scrape from what the workers
 * share (the metadata, the disk, the scrubber's shared progress) are the same in each and are taken once
 * (`aggregator: 'max'`); prom-client's process metrics keep their own aggregators (CPU and memory summed, event-loop
 * lag averaged, version `first`).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ClusterMetricsClient } from './cluster-worker.js';
import type { FreeSpace, SpaceReading } from '../objects/free-space.js';
import type { JobQueue } from '../ports/job-queue.js';
import type { BucketUsage, MetaStore } from '../ports/meta.js';
import type { VersionStats } from '../ports/versions.js';
import type { ReplicationRuleStats } from '../ports/replication.js';
import type { ScrubStatusSource } from '../ports/scrub-status.js';

/** What the scrape-time gauges read (the Granary gives them; named here so the context and metrics do not import each other). */
export interface GaugeSources {
  meta: MetaStore;
  /** GRANARY_REPLICATION_BACKLOG (granary_replication_backlog_exceeded). */
  config?: { replicationBacklog: number };
  jobs: JobQueue;
  space: FreeSpace;
  scrubber?: ScrubStatusSource;
}

/** How an object came to be stored (label `kind` of granary_uploads_total). */
export type UploadKind = 'form' | 'putb64' | 's3' | 'mkfile' | 'v2-complete' | 'fetch' | 'async-fetch' | 'mirror' | 'prefetch' | 'saveas' | 'pfop-output';

/** Latency buckets of requests and fop runs, seconds: small reads to multi-gigabyte uploads. */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class Metrics {
  /** The registry `GET /metrics` renders. */
  readonly registry = new Registry();

  /** Requests answered, by role (up, io, rs, rsf, api, uc, health, console), operation (route) and status. */
  readonly requests = new Counter({
    name: 'granary_http_requests_total',
    help: 'HTTP requests answered, by role, operation (route pattern) and status code',
    labelNames: ['role', 'operation', 'status'] as const,
    registers: [this.registry],
  });

  /** Time from the request head to the end of the answer, seconds, by role and operation. */
  readonly requestSeconds = new Histogram({
    name: 'granary_http_request_duration_seconds',
    help: 'Time from the request head to the last byte of the answer, seconds, by role and operation',
    labelNames: ['role', 'operation'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });

  /** Bytes read from clients (request heads and bodies), by role. */
  readonly bytesIn = new Counter({
    name: 'granary_http_received_bytes_total',
    help: 'Bytes received from clients (request heads and bodies), by role',
    labelNames: ['role'] as const,
    registers: [this.registry],
  });

  /** Bytes written to clients (response heads and bodies), by role. */
  readonly bytesOut = new Counter({
    name: 'granary_http_sent_bytes_total',
    help: 'Bytes sent to clients (response heads and bodies), by role',
    labelNames: ['role'] as const,
    registers: [this.registry],
  });

  /** Objects stored, by how they came. */
  readonly uploads = new Counter({
    name: 'granary_uploads_total',
    help: 'Objects stored, by kind (form, mkfile, v2-complete, fetch, async-fetch, mirror, prefetch, saveas, pfop-output)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /** Bytes of the objects stored, by how they came. */
  readonly uploadBytes = new Counter({
    name: 'granary_upload_bytes_total',
    help: 'Bytes of the objects stored, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /** Fop pipelines run (URL fops, saveas, pfop commands), by first command and result (ok, error). */
  readonly fopRuns = new Counter({
    name: 'granary_fop_runs_total',
    help: 'Fop pipelines run (download URLs, saveas, pfop commands), by first command and result (ok, error)',
    labelNames: ['command', 'result'] as const,
    registers: [this.registry],
  });

  /** Time a fop pipeline took until its result was ready, seconds (pool waits included), by first command. */
  readonly fopSeconds = new Histogram({
    name: 'granary_fop_duration_seconds',
    help: 'Time until a fop pipeline result was ready, seconds, by first command',
    labelNames: ['command'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });

  /** Fop answers on download URLs by cache result (hit, miss, bypass = not cacheable or cache off). */
  readonly fopCache = new Counter({
    name: 'granary_fop_cache_requests_total',
    help: 'Fop answers on download URLs by derived-result cache result (hit, miss, bypass)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  /** Persistent jobs finished, by final code (0 success, 3 failed, 4 notify failed). */
  readonly jobsFinished = new Counter({
    name: 'granary_jobs_finished_total',
    help: 'Persistent jobs (pfop, persistentOps) finished, by final code (0 success, 3 failed, 4 notify failed)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  /** Outbound requests the guard refused (private, loopback… addresses not in GRANARY_OUTBOUND_ALLOW). */
  readonly outboundRefused = new Counter({
    name: 'granary_outbound_refused_total',
    help: 'Outbound requests (callbacks, fetch, mirror, notify, resources) refused by the address guard',
    registers: [this.registry],
  });

  /** Replication attempts that ended, by outcome (copied, in-step, deleted, delete-skipped, failed). */
  readonly replicationAttempts = new Counter({
    name: 'granary_replication_attempts_total',
    help: 'Bucket replication attempts of this server, by outcome: copied, in-step (nothing to copy), deleted, delete-skipped, failed',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /** Bytes replication sent to destinations. */
  readonly replicationBytes = new Counter({
    name: 'granary_replication_sent_bytes_total',
    help: 'Object bytes bucket replication sent to its destinations',
    registers: [this.registry],
  });

  /** Requests of IAM sub-users refused by policy (auth/authorize.ts, iam/refusals.ts), by door and Kodo action. */
  readonly iamRefused = new Counter({
    name: 'granary_iam_refused_total',
    help: 'Requests of IAM sub-user keys refused by their policies, by door (kodo, s3, console) and action (kodo/Get …)',
    labelNames: ['door', 'action'] as const,
    registers: [this.registry],
  });

  /**
   * Blobs no metadata references, as last counted by the `blob-sweep` singleton (workers/singletons.ts; 0 in the
   * processes that do not hold it). Kept, never deleted automatically: `granary gc` removes them.
   */
  readonly orphanBlobs = new Gauge({
    name: 'granary_orphan_blobs',
    // Only the holder of the sweep sets it (the others stay 0): the largest is the count.
    aggregator: 'max',
    help: 'Blobs no metadata references (kept; remove them with granary gc), as last counted by the blob sweep',
    registers: [this.registry],
  });

  /** In a worker of a primary: the link through which `totals()` reads every worker's metrics. */
  private cluster: ClusterMetricsClient | undefined;

  /** A new registry with prom-client's default process metrics (prefix `granary_`), e.g. granary_nodejs_eventloop_lag_seconds. */
  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'granary_' });
  }

  /**
   * Call in a worker of the primary (GRANARY_WORKERS > 1): its registry answers the primary's gathers from now on
   * (until the process ends: a stopping worker still answers), and `totals()` sums every worker's.
   */
  shareWithPrimary(): void {
    this.cluster ??= new ClusterMetricsClient(this.registry);
  }

  /**
   * The registry a scrape renders: this process's, or with workers the sum of every worker's (a new registry per
   * call). Rejects when the workers' metrics cannot be gathered (the primary gone, a worker not answering in 5 s).
   */
  async totals(): Promise<Registry> {
    return this.cluster ? this.cluster.totals() : this.registry;
  }

  /** Counts one stored object of `bytes` bytes. */
  upload(kind: UploadKind, bytes: number): void {
    this.uploads.inc({ kind });
    this.uploadBytes.inc({ kind }, bytes);
  }

  /** Starts timing a fop pipeline whose first command is `command`; call the result with its outcome. */
  fopStarted(command: string): (result: 'ok' | 'error') => void {
    const end = this.fopSeconds.startTimer({ command });
    return (result) => {
      end();
      this.fopRuns.inc({ command, result });
    };
  }

  /**
   * Adds the gauges read from `g` on each scrape: job queue depth by state, disk space of the data dir, scrub
   * progress, the read cache's hits and misses (meta.readCache), and bytes and objects per bucket
   * (meta.bucketUsage: counters, no scan).
   */
  collectFrom(g: GaugeSources): void {
    const registers = [this.registry];
    new Gauge({
      name: 'granary_jobs',
      help: 'Persistent jobs not yet finished, by state (waiting, running, notifying)',
      labelNames: ['state'] as const,
      registers,
      aggregator: 'max',
      async collect() {
        const depth = await g.jobs.depth();
        for (const [state, n] of Object.entries(depth)) this.set({ state }, n);
      },
    });
    // Gauges are collected concurrently: each reads for itself (FreeSpace caches and shares its statfs reading).
    const disk = (name: string, help: string, pick: (r: SpaceReading) => number): void => {
      new Gauge({
        name,
        help,
        registers,
        aggregator: 'max',
        async collect() {
          const r = await g.space.reading();
          if (r) this.set(pick(r));
        },
      });
    };
    disk('granary_disk_free_bytes', 'Bytes free (for unprivileged users) on the file system of the data dir', (r) => r.freeBytes);
    disk('granary_disk_total_bytes', 'Size of the file system of the data dir, bytes', (r) => r.totalBytes);
    disk('granary_disk_reserve_bytes', 'Free space below which uploads are refused (GRANARY_MIN_FREE_BYTES), bytes', (r) => r.reserveBytes);
    const scrub = (pick: (s: ScrubStatusSource) => { current?: number; last?: number }) =>
      function (this: Gauge<'pass'>): void {
        this.reset();
        if (!g.scrubber) return;
        const v = pick(g.scrubber);
        if (v.current !== undefined) this.set({ pass: 'current' }, v.current);
        if (v.last !== undefined) this.set({ pass: 'last' }, v.last);
      };
    new Gauge({
      name: 'granary_scrub_bytes',
      help: 'Bytes verified by the scrubber in the current pass and in the last finished pass',
      labelNames: ['pass'] as const,
      registers,
      aggregator: 'max',
      collect: scrub((s) => {
        const st = s.status();
        return { ...(st.current ? { current: st.current.bytes } : {}), ...(st.lastPass ? { last: st.lastPass.bytes } : {}) };
      }),
    });
    new Gauge({
      name: 'granary_scrub_blobs',
      help: 'Blobs verified by the scrubber in the current pass and in the last finished pass',
      labelNames: ['pass'] as const,
      registers,
      aggregator: 'max',
      collect: scrub((s) => {
        const st = s.status();
        return { ...(st.current ? { current: st.current.blobs } : {}), ...(st.lastPass ? { last: st.lastPass.blobs } : {}) };
      }),
    });
    new Gauge({
      name: 'granary_scrub_corrupt_entries',
      help: 'Corrupt entries (bytes not matching their checksums) found by the last finished scrub pass',
      registers,
      aggregator: 'max',
      collect() {
        this.set(g.scrubber?.status().lastPass?.corrupt ?? 0);
      },
    });
    new Counter({
      name: 'granary_read_cache_lookups_total',
      help: "Download reads (bucket, entry, inline bytes) of this process answered from its cache (hit) or the database (miss); SQLite metadata only",
      labelNames: ['result'] as const,
      registers,
      collect() {
        const c = g.meta.readCache;
        this.reset();
        if (!c) return;
        this.inc({ result: 'hit' }, c.hits);
        this.inc({ result: 'miss' }, c.misses);
      },
    });
    // One read of every bucket's usage per scrape, shared by the two gauges collected at the same time.
    const readUsage = oncePerScrape(async () => {
      const out = new Map<string, BucketUsage>();
      for (const b of await g.meta.listBuckets()) {
        const u = await g.meta.bucketUsage(b.name);
        if (u) out.set(b.name, u);
      }
      return out;
    });
    // One read of the replication outbox's per-rule counts per scrape, shared by its gauges.
    const readRepl = oncePerScrape(() => g.meta.replication.stats(Date.now()));
    const replGauge = (name: string, help: string, pick: (s: ReplicationRuleStats, nowMs: number) => number | undefined): void => {
      new Gauge({
        name,
        help,
        labelNames: ['bucket', 'rule'] as const,
        registers,
        aggregator: 'max',
        async collect() {
          const all = await readRepl();
          this.reset();
          const now = Date.now();
          for (const s of all) {
            const v = pick(s, now);
            if (v !== undefined) this.set({ bucket: s.bucket, rule: s.rule }, v);
          }
        },
      });
    };
    replGauge('granary_replication_pending_objects', 'Objects waiting to be replicated (failed ones included), per bucket and rule', (s) => s.pending);
    replGauge('granary_replication_pending_bytes', 'Bytes of the objects waiting to be replicated, per bucket and rule', (s) => s.pendingBytes);
    replGauge('granary_replication_oldest_pending_seconds', 'Age of the oldest change not yet replicated, seconds, per bucket and rule (0: none)', (s, now) =>
      s.oldestPendingMs === undefined ? 0 : Math.max(0, (now - s.oldestPendingMs) / 1000),
    );
    replGauge('granary_replication_failed_objects', 'Objects whose replication status is FAILED (still retried), per bucket and rule', (s) => s.failed);
    new Gauge({
      name: 'granary_replication_backlog_exceeded',
      help: '1 when more objects wait for replication than GRANARY_REPLICATION_BACKLOG, else 0',
      registers,
      aggregator: 'max',
      async collect() {
        const all = await readRepl();
        const pending = all.reduce((n, s) => n + s.pending, 0);
        this.set(g.config && pending > g.config.replicationBacklog ? 1 : 0);
      },
    });
    const bucketGauge = (name: string, help: string, pick: (u: BucketUsage) => number): void => perBucketGauge(registers, name, help, readUsage, pick);
    bucketGauge('granary_bucket_bytes', 'Bytes stored per bucket', (u) => u.bytes);
    bucketGauge('granary_bucket_objects', 'Objects (entries) stored per bucket', (u) => u.count);
    // Versioned buckets (docs/reference/versioning.md): one read of the version counters per scrape, shared likewise.
    const readStats = oncePerScrape(() => g.meta.versionStats());
    const versionGauge = (name: string, help: string, pick: (v: VersionStats) => number): void => perBucketGauge(registers, name, help, readStats, pick);
    versionGauge('granary_bucket_noncurrent_versions', 'Noncurrent object versions kept per versioned bucket (delete markers not included)', (v) => v.noncurrentVersions);
    versionGauge('granary_bucket_delete_markers', 'Delete markers (current or noncurrent) per versioned bucket', (v) => v.deleteMarkers);
    versionGauge('granary_bucket_noncurrent_bytes', 'Bytes held by noncurrent versions per versioned bucket', (v) => v.noncurrentBytes);
  }
}

/** A read made once per scrape: the gauges collected at the same time share it (a new read for the next scrape). */
function oncePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read().finally(() => {
      pending = undefined;
    }));
}

/**
 * A gauge labelled by bucket whose value per bucket is `pick` of what `read` (shared per scrape) answers for it; the
 * cluster primary keeps the largest of the workers' values (they read the same store).
 */
function perBucketGauge<T>(
  registers: Registry[],
  name: string,
  help: string,
  read: () => Promise<Map<string, T> | undefined>,
  pick: (value: T) => number,
): void {
  new Gauge({
    name,
    help,
    labelNames: ['bucket'] as const,
    registers,
    aggregator: 'max',
    async collect() {
      const all = await read();
      this.reset();
      for (const [bucket, v] of all ?? []) this.set({ bucket }, pick(v));
    },
  });
}
