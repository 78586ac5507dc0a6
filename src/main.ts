/**
 * Start-up and shutdown of one server process: config → stores → registration → recovery → server → listen.
 * Nothing else lives here. Several such processes may share the data dir (GRANARY_WORKERS, cli/serve.ts and
 * workers/primary.ts), or, in cluster mode, the PostgreSQL metadata and the S3 blobs with the processes of other
 * nodes (store/open.ts; docs/guides/running-a-cluster.md); this process registers itself (workers/coordinator.ts) before
 * it touches anything shared.
 *
 * Before anything else the stores must prove they belong together (store/deployment.ts: the deployment id in the
 * metadata and in the blob store); a mismatch fails the start and nothing is touched.
 * Recovery at start (workers/recovery.ts), only of what processes that are gone left: their staging files and fop
 * temp dirs are removed, their async fetch tasks, persistent jobs (resumed at their first unfinished command) and
 * event deliveries are queued again. Then the queue workers start (fetch, jobs, events: in every process; claims
 * are atomic), and the singletons (workers/singletons.ts: the reaper, blob deletions left pending and the orphan
 * report, the expiry sweeper, the background scrubber) start in the one process holding each one's lease.
 * After the Kodo API listener, the console listener (console/listener.ts: web console, `/metrics`) starts unless
 * GRANARY_CONSOLE_PORT=0, then the S3 listener (s3api/server.ts: the AWS S3 API) unless GRANARY_S3_PORT=0; a per-Granary metrics registry (metrics/metrics.ts) is `g.metrics` (in a worker, shared
 * with the primary so any worker's scrape reads every worker's totals).
 *
 * A single process first takes the data-dir lock (workers/data-dir-lock.ts; a worker is covered by its primary's).
 * A root key pair generated at this start is kept only once everything is up: a start that fails (a listener that
 * cannot bind, named with its address by listen-error.ts) undoes what it did and leaves no pair behind.
 */
import { backoffMs } from './backoff.js';
import cluster from 'node:cluster';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { KeyIndex } from './auth/key-index.js';
import { resolveRootKeys } from './auth/keys.js';
import { DomainIndex } from './buckets/domain-index.js';
import type { Config } from './config.js';
import type { Granary } from './context.js';
import { FetchWorker } from './objects/fetch/fetch-worker.js';
import { JobWorker } from './jobs/worker.js';
import { EventWorker } from './events/worker.js';
import { ReplicationWorker } from './replication/worker.js';
import { FopCache } from './fops/cache/fop-cache.js';
import { startIdleCollector } from './idle-gc.js';
import { createLogger } from './log.js';
import { ModerationModel } from './fops/moderation-model.js';
import { FopPools } from './fops/pools.js';
import { locateTools } from './fops/tools.js';
import { Scrubber } from './objects/scrubber.js';
import { parseAllowList } from './outbound/guard.js';
import { systemClock, type Clock } from './ports/clock.js';
import { boundStop } from './stop-bound.js';
import { registerConsole } from './console/app.js';
import { startConsoleListener, type ConsoleListener, type ConsoleListenerOptions } from './console/listener.js';
import { startS3Listener, type S3Listener } from './s3api/server.js';
import { buildServer } from './server.js';
import { startListener } from './start-listener.js';
import { FreeSpace } from './objects/free-space.js';
import { checkDeployment } from './store/deployment.js';
import { openStores, sharedFsBlobsWarning } from './store/open.js';
import { EncryptingBlobStore } from './store/crypto/encrypting-blob-store.js';
import { masterSealer } from './store/crypto/sealer.js';
import { Coordinator } from './workers/coordinator.js';
import { lockDataDir, type DataDirLock } from './workers/data-dir-lock.js';
import { newIdentity, type ProcessIdentity } from './workers/identity.js';
import { recoverFromDeadProcesses } from './workers/recovery.js';
import { startBlobSweep, startSingletons } from './workers/singletons.js';

/** A running Granary. `url` is where it listens (e.g. http://127.0.0.1:9000). */
export interface RunningGranary {
  app: FastifyInstance;
  g: Granary;
  url: string;
  port: number;
  /** The console listener (web console, `/metrics`), unless disabled (GRANARY_CONSOLE_PORT=0). */
  console?: { url: string; port: number };
  /** The S3 listener (the AWS S3 API, s3api/server.ts), unless disabled (GRANARY_S3_PORT=0). */
  s3?: { url: string; port: number };
  /** Key pair generated at this start (to print once), if one was. */
  generatedKeys: boolean;
  /**
   * Graceful stop: in-flight requests finish, timers stop, running fetch tasks finish or are re-queued, running
   * jobs and event deliveries are aborted and re-queued, the moderation worker ends, the database closes. Waits at
   * most GRANARY_STOP_TIMEOUT for what runs: then stuck requests are aborted and logged (stop-bound.ts).
   */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** Routes of the console listener (console/listener.ts) instead of the web console's (console/app.ts). */
  registerConsole?: ConsoleListenerOptions['register'];
  /** Worker slot 0…GRANARY_WORKERS−1 given by the primary (workers/primary.ts); absent for a single process. */
  slot?: number;
}

/**
 * The fop cache of this process: one directory per worker slot, each bounded by GRANARY_FOP_CACHE_SIZE / workers.
 * Chosen over one shared index (in SQLite) because a hit then costs no cross-process access and eviction stays
 * local; the price is that a result cached by one worker is a miss on another (computed at most once per worker,
 * at most `workers` copies, all within the one size bound). Slot 0 (and a single process) uses `fop-cache/`.
 */
function fopCacheOf(config: Config, slot: number | undefined): { dir: string; bytes: number } {
  if (slot === undefined) return { dir: join(config.dataDir, 'fop-cache'), bytes: config.fopCacheBytes };
  const dir = join(config.dataDir, slot === 0 ? 'fop-cache' : `fop-cache.${slot}`);
  return { dir, bytes: Math.floor(config.fopCacheBytes / Math.max(config.workers, 1)) };
}

/** Steps that undo a partial start, run last-first when the start fails. */
class Undo {
  private readonly steps: Array<() => unknown> = [];
  push(step: () => unknown): void {
    this.steps.push(step);
  }
  /** Runs every step (last-first); a step that fails is logged and the others still run. */
  async run(log: Logger): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step();
      } catch (err) {
        log.warn({ err }, 'start-up failed: cleaning up also failed');
      }
    }
  }
}

/**
 * Starts Granary with `config`; resolves once it listens. Rejects when it cannot start — another server holds the
 * data dir (workers/data-dir-lock.ts), a store cannot be opened, a listener cannot bind its address (listen-error.ts)
 * — after undoing what it did: leases released, stores closed, a key pair generated for this start never kept
 * (it is kept only once both listeners are up, so a failed start prints and writes none).
 */
export async function startGranary(config: Config, opts: StartOptions = {}): Promise<RunningGranary> {
  const identity = newIdentity(opts.slot);
  const log = (opts.logger ?? (await createLogger(config))).child(opts.slot !== undefined ? { worker: opts.slot } : {});
  // A worker of a primary is covered by its primary's lock; its listeners are the primary's too (hand-off).
  const worker = cluster.isWorker && opts.slot !== undefined;
  const undo = new Undo();
  const lock = worker ? undefined : lockDataDir(config.dataDir);
  if (lock) undo.push(() => lock.release());
  try {
    return await start(config, opts, { identity, log, worker, undo, lock });
  } catch (err) {
    await undo.run(log);
    throw err;
  }
}

/** The body of `startGranary`; registers in `ctx.undo` what a failure must undo. */
async function start(
  config: Config,
  opts: StartOptions,
  ctx: { identity: ProcessIdentity; log: Logger; worker: boolean; undo: Undo; lock: DataDirLock | undefined },
): Promise<RunningGranary> {
  const { identity, log, undo } = ctx;
  const { meta, blobs } = await openStores(config, identity);
  undo.push(async () => {
    await meta.close();
    await blobs.close?.();
  });
  // Before anything is read, swept or served: metadata and blobs of one deployment, or no start at all.
  const state = await checkDeployment(config, meta, blobs);
  if (state.created !== 'nothing') log.info({ deploymentId: state.deploymentId, wrote: state.created }, 'deployment id written');
  // Liveness is about real time: the coordination clock is the wall clock, never the Clock tests move.
  const leaseClock = systemClock;
  const coord = new Coordinator(meta, identity, config.leaseSeconds * 1000, leaseClock, log);
  await coord.join();
  undo.push(() => coord.leave());
  const fsBlobsWarning = await sharedFsBlobsWarning(config, meta, identity);
  if (fsBlobsWarning) log.warn(fsBlobsWarning);
  // Resolved now, kept only once the listeners are up (below).
  const rootKeys = await resolveRootKeys(config, {
    ...(config.accessKey ? { accessKey: config.accessKey } : {}),
    ...(config.secretKey ? { secretKey: config.secretKey } : {}),
  }, meta);
  undo.push(() => rootKeys.abandon());
  const { keys } = rootKeys;
  const domains = new DomainIndex(meta, config);
  await domains.start();
  undo.push(() => domains.stop());
  const keyIndex = new KeyIndex(meta, keys);
  await keyIndex.start();
  undo.push(() => keyIndex.stop());
  const moderation = new ModerationModel(log);
  undo.push(() => moderation.close());
  // Loaded here, not at import: the CLI's offline commands import this module and need no metrics.
  const { Metrics } = await import('./metrics/metrics.js');
  const metrics = new Metrics();
  // A worker's metrics are read with the other workers' (metrics/cluster-worker.ts): any worker's scrape reads totals.
  if (ctx.worker) metrics.shareWithPrimary();
  const cache = fopCacheOf(config, opts.slot);
  const g: Granary = {
    config,
    meta,
    blobs,
    space: new FreeSpace(config.dataDir, config.minFree),
    clock: opts.clock ?? systemClock,
    log,
    keys,
    keyIndex,
    secretOf: keyIndex.secretOf,
    jobs: meta.jobs,
    outbound: { allow: parseAllowList(config.outboundAllow), onRefused: () => metrics.outboundRefused.inc() },
    domains,
    fopPools: new FopPools({ image: config.fopConcurrency, video: config.videoConcurrency }),
    fopTools: locateTools(config),
    moderation,
    fopCache: await FopCache.open(cache.dir, cache.bytes, log, blobs instanceof EncryptingBlobStore ? masterSealer(blobs.master) : undefined),
    metrics,
    processTag: identity.tag,
    ...(opts.slot !== undefined ? { workerSlot: opts.slot } : {}),
    publicUrl: config.publicUrl ?? '',
  };
  metrics.collectFrom(g);
  await recoverFromDeadProcesses(g, identity, leaseClock, coord.ttlMs);
  await startBlobSweep(g, coord, leaseClock);

  const app = await buildServer(g);
  // A worker of a primary serves the connections the primary hands it (workers/handoff.ts), listening itself only on
  // a private socket; a single process listens on the port.
  const api = await startListener(app, {
    name: 'api',
    host: config.host,
    port: config.port,
    ...(ctx.worker && opts.slot !== undefined ? { handedSlot: opts.slot } : {}),
    lingerMs: config.lingerTimeoutSeconds * 1000,
  });
  undo.push(() => api.close());
  const port = api.port;
  g.publicUrl = config.publicUrl ?? `http://127.0.0.1:${port}`;
  let consoleListener: ConsoleListener | undefined;
  if (config.consolePort !== undefined) {
    consoleListener = await startConsoleListener(g, {
      port: config.consolePort,
      host: config.consoleHost,
      ...(ctx.worker && opts.slot !== undefined ? { handedSlot: opts.slot } : {}),
      // The web console (console/app.ts) unless the caller brings its own routes.
      register: opts.registerConsole ?? ((consoleApp) => registerConsole(consoleApp, g)),
    });
    undo.push(() => consoleListener?.close());
  }
  let s3Listener: S3Listener | undefined;
  if (config.s3Port !== undefined) {
    s3Listener = await startS3Listener(g, {
      port: config.s3Port,
      host: config.s3Host,
      ...(ctx.worker && opts.slot !== undefined ? { handedSlot: opts.slot } : {}),
    });
    undo.push(() => s3Listener?.close());
  }

  // Memory back to the system once the process goes quiet (idle-gc.ts): the start-up's garbage first.
  const idleGc = startIdleCollector(config.idleGcSeconds, (e) => log.debug({ beforeBytes: e.beforeBytes, afterBytes: e.afterBytes, ms: Math.round(e.ms) }, 'idle: garbage collected'));
  undo.push(() => idleGc.stop());
  const fetchWorker = new FetchWorker(g, g.meta.fetchTasks, {
    concurrency: config.fetchConcurrency,
    retryDelayMs: (attempt) => backoffMs({ firstMs: config.fetchRetryMs }, attempt),
  });
  await fetchWorker.start();
  undo.push(() => fetchWorker.stop());
  const jobWorker = new JobWorker(g, g.jobs);
  await jobWorker.start();
  undo.push(() => jobWorker.stop());
  const eventWorker = new EventWorker(g, g.meta.events, {
    concurrency: config.eventConcurrency,
    maxAttempts: config.eventAttempts,
    retryMs: config.eventRetryMs,
  });
  await eventWorker.start();
  undo.push(() => eventWorker.stop());
  const replicationWorker = new ReplicationWorker(g, g.meta.replication, {
    concurrency: config.replicationConcurrency,
    retryMs: config.replicationRetryMs,
    maxRetryMs: config.replicationMaxRetryMs,
    failAfter: config.replicationFailAfter,
    multipartBytes: config.replicationMultipartBytes,
    backlog: config.replicationBacklog,
  });
  replicationWorker.start();
  undo.push(() => replicationWorker.stop());
  const scrubber = new Scrubber(g, { bytesPerSecond: config.scrubBytesPerSecond, intervalDays: config.scrubIntervalDays });
  g.scrubber = scrubber;
  await scrubber.load();
  const wake = (): void => {
    fetchWorker.poke();
    jobWorker.poke();
    eventWorker.poke();
    replicationWorker.poke();
  };
  coord.onForeignWrite(wake);
  await startSingletons(g, coord, leaseClock, { scrubber, wake });
  // Everything is up: a key pair generated for this start is kept now (and printed once by the caller).
  await rootKeys.persist();

  let closing: Promise<void> | undefined;
  return {
    app,
    g,
    url: `http://127.0.0.1:${port}`,
    port,
    ...(consoleListener ? { console: { url: consoleListener.url, port: consoleListener.port } } : {}),
    ...(s3Listener ? { s3: { url: s3Listener.url, port: s3Listener.port } } : {}),
    generatedKeys: rootKeys.created,
    close: () =>
      (closing ??= (async () => {
        domains.stop();
        keyIndex.stop();
        // Each listener stops accepting and ends its idle keep-alive connections (start-listener.ts).
        const closed = Promise.all([api.close(), consoleListener?.close(), s3Listener?.close()]);
        // Tasks queued by requests still in flight stay waiting in the store for the next start.
        // Running jobs are aborted and released: they resume at the next start.
        const drained = Promise.all([closed, fetchWorker.stop(), jobWorker.stop(), eventWorker.stop(), replicationWorker.stop()]);
        // At most GRANARY_STOP_TIMEOUT: then stuck requests are aborted and logged (stop-bound.ts).
        await boundStop(drained, config.stopTimeoutSeconds * 1000, {
          abortStoreCalls: () => blobs.abort?.(),
          closeConnections: () => [...api.abort(), ...(consoleListener?.abort() ?? []), ...(s3Listener?.abort() ?? [])],
        }, log);
        // The singletons (scrubber, sweepers) stop, then the leases go: another process may take them at once.
        await coord.leave();
        await moderation.close();
        await meta.close();
        await blobs.close?.();
        ctx.lock?.release();
      })()),
  };
}
