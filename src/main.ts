/**
 * Start-up and shutdown: config → stores → recovery → server → listen. Nothing else lives here.
 *
 * Recovery at start: staging leftovers are removed (BlobStore.recover), blob deletions a crash interrupted are
 * finished, and orphaned blobs (sealed by an upload that never committed) are swept in the background; async
 * fetch tasks interrupted by a crash are queued again and the fetch worker starts; so do persistent jobs
 * (jobs/worker.ts: interrupted jobs resume at their first unfinished command); bucket event notifications left
 * undelivered are delivered (events/worker.ts: at least once). The background scrubber starts
 * (or resumes) its pass when one is due (objects/scrubber.ts). After the Kodo API listener, the console listener
 * (console/listener.ts: web console, `/metrics`) starts unless GRANARY_CONSOLE_PORT=0; a per-Granary metrics
 * registry (metrics/metrics.ts) is `g.metrics`.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { KeyIndex } from './auth/key-index.js';
import { loadRootKeys } from './auth/keys.js';
import { DomainIndex } from './buckets/domain-index.js';
import type { BlobsConfig, Config } from './config.js';
import type { Granary } from './context.js';
import { drainBlobDeletions, logDrain, sweepOrphanBlobs } from './objects/blobs.js';
import { FetchWorker } from './objects/fetch/fetch-worker.js';
import { JobWorker } from './jobs/worker.js';
import { EventWorker } from './events/worker.js';
import { FopCache } from './fops/cache/fop-cache.js';
import { createLogger } from './log.js';
import { clearFopTemp } from './fops/execute.js';
import { ModerationModel } from './fops/moderation-model.js';
import { configureImageWork, FopPools } from './fops/run.js';
import { locateTools } from './fops/tools.js';
import { startExpirySweeper } from './objects/expiry.js';
import { Scrubber } from './objects/scrubber.js';
import { parseAllowList } from './outbound/guard.js';
import { systemClock, type Clock } from './ports/clock.js';
import { trackConnections } from './connections.js';
import { registerConsole } from './console/app.js';
import { startConsoleListener, type ConsoleListener, type ConsoleListenerOptions } from './console/listener.js';
import { buildServer } from './server.js';
import type { BlobStore } from './store/blob.js';
import { FsBlobStore } from './store/fs/fs-blob-store.js';
import { InlineAwareBlobStore } from './store/inline-blob-store.js';
import { S3BlobStore } from './store/s3/s3-blob-store.js';
import { FreeSpace } from './store/fs/free-space.js';
import { SqliteMetaStore } from './store/sqlite/sqlite-meta-store.js';

/** A running Granary. `url` is where it listens (e.g. http://127.0.0.1:9000). */
export interface RunningGranary {
  app: FastifyInstance;
  g: Granary;
  url: string;
  port: number;
  /** The console listener (web console, `/metrics`), unless disabled (GRANARY_CONSOLE_PORT=0). */
  console?: { url: string; port: number };
  /** Key pair generated at this start (to print once), if one was. */
  generatedKeys: boolean;
  /**
   * Graceful stop: in-flight requests finish, timers stop, running fetch tasks finish or are re-queued, running
   * jobs and event deliveries are aborted and re-queued, the moderation worker ends, the database closes.
   */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** Routes of the console listener (console/listener.ts) instead of the web console's (console/app.ts). */
  registerConsole?: ConsoleListenerOptions['register'];
}

/**
 * Opens the stores (shared by the server and the CLI's offline commands): metadata in `dataDir`, blobs in
 * `dataDir` or in the S3 bucket of GRANARY_BLOBS (local copies for ffmpeg under `<dataDir>/blob-cache/`). Small
 * objects' bytes live in the metadata database either way (store/inline-blob-store.ts).
 */
export async function openStores(
  dataDir: string,
  blobsConfig: BlobsConfig = { kind: 'fs' },
): Promise<{ meta: SqliteMetaStore; blobs: BlobStore }> {
  await mkdir(dataDir, { recursive: true });
  const meta = new SqliteMetaStore(join(dataDir, 'meta.db'));
  const files = (): BlobStore => {
    if (blobsConfig.kind === 'fs') return new FsBlobStore(dataDir);
    const { cacheBytes, partBytes, staleUploadHours, ...location } = blobsConfig;
    const options = { cacheDir: join(dataDir, 'blob-cache'), cacheBytes, partBytes, staleUploadMs: staleUploadHours * 3_600_000 };
    return new S3BlobStore(location, options);
  };
  return { meta, blobs: new InlineAwareBlobStore(files(), meta) };
}

/** Starts Granary with `config`; resolves once it listens. */
export async function startGranary(config: Config, opts: StartOptions = {}): Promise<RunningGranary> {
  const log = opts.logger ?? (await createLogger(config));
  const { meta, blobs } = await openStores(config.dataDir, config.blobs);
  meta.startCheckpoints();
  await blobs.recover();
  const { keys, created } = await loadRootKeys(config.dataDir, {
    ...(config.accessKey ? { accessKey: config.accessKey } : {}),
    ...(config.secretKey ? { secretKey: config.secretKey } : {}),
  });
  const domains = new DomainIndex(meta);
  await domains.start();
  const keyIndex = new KeyIndex(meta, keys);
  await keyIndex.start();
  const moderation = new ModerationModel(log);
  // Loaded here, not at import: the CLI's offline commands import this module and need no metrics.
  const { Metrics } = await import('./metrics/metrics.js');
  const metrics = new Metrics();
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
    fopCache: await FopCache.open(join(config.dataDir, 'fop-cache'), config.fopCacheBytes, log),
    metrics,
    publicUrl: config.publicUrl ?? '',
  };
  metrics.collectFrom(g);
  const leftovers = await clearFopTemp(config.dataDir);
  if (leftovers > 0) g.log.warn({ processes: leftovers }, 'killed ffmpeg/ffprobe processes left running by a previous process');
  const startedMs = Date.now();
  logDrain(g, await drainBlobDeletions(g));

  const app = await buildServer(g);
  const connections = trackConnections(app.server);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  g.publicUrl = config.publicUrl ?? `http://127.0.0.1:${port}`;
  let consoleListener: ConsoleListener | undefined;
  try {
    if (config.consolePort !== undefined) {
      consoleListener = await startConsoleListener(g, {
        port: config.consolePort,
        host: config.consoleHost,
        // The web console (console/app.ts) unless the caller brings its own routes.
        register: opts.registerConsole ?? ((consoleApp) => registerConsole(consoleApp, g)),
      });
    }
  } catch (err) {
    // The main listener is already up: release it and the database before failing the start.
    await app.close();
    await meta.close();
    throw err;
  }

  const stopSweeper = startExpirySweeper(g, config.expirySweepSeconds);
  configureImageWork();
  const fetchWorker = new FetchWorker(g, g.meta.fetchTasks, { concurrency: config.fetchConcurrency });
  await fetchWorker.start();
  const jobWorker = new JobWorker(g, g.jobs);
  await jobWorker.start();
  const eventWorker = new EventWorker(g, g.meta.events, {
    concurrency: config.eventConcurrency,
    maxAttempts: config.eventAttempts,
    retryMs: config.eventRetryMs,
  });
  await eventWorker.start();
  const scrubber = new Scrubber(g, { bytesPerSecond: config.scrubBytesPerSecond, intervalDays: config.scrubIntervalDays });
  g.scrubber = scrubber;
  await scrubber.start();
  void sweepOrphanBlobs(g, startedMs)
    .then((n) => n > 0 && log.info({ removed: n }, 'orphaned blobs removed'))
    .catch((err: unknown) => log.warn({ err }, 'orphan blob sweep failed'));

  let closing: Promise<void> | undefined;
  return {
    app,
    g,
    url: `http://127.0.0.1:${port}`,
    port,
    ...(consoleListener ? { console: { url: consoleListener.url, port: consoleListener.port } } : {}),
    generatedKeys: created,
    close: () =>
      (closing ??= (async () => {
        stopSweeper();
        domains.stop();
        keyIndex.stop();
        const closed = Promise.all([app.close(), consoleListener?.close()]);
        connections.drain();
        // Tasks queued by requests still in flight stay waiting in the store for the next start.
        // Running jobs are aborted and released: they resume at the next start.
        await Promise.all([closed, fetchWorker.stop(), jobWorker.stop(), eventWorker.stop(), scrubber.stop()]);
        await moderation.close();
        await meta.close();
        await blobs.close?.();
      })()),
  };
}
