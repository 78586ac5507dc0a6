/**
 * Executing a fop pipeline on a stored object (docs/development/kodo-protocol.md §10.1, §9): the one entry point for download URLs
 * (roles/io/fop.ts) and persistent jobs. Builds the source (the stored blob, read lazily), the context (limits,
 * a time limit, a temp dir `<dataDir>/fop-tmp/<process tag>.<random>/`, guarded resource fetches, the tools) and runs the pipeline
 * in the server's pools. The caller consumes the result, then calls `dispose()` (removes the temp dir).
 */
import { createReadStream, mkdirSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { localObjectFile, readObjectSmall } from '../objects/verified-read.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { bucketFileOf, bucketUrls } from './bucket-urls.js';
import { openResource } from './files/resource-stream.js';
import { fetchResource } from './resource.js';
import type { FopPools } from './pools.js';
import { runPipeline } from './run.js';
import { fopTempPath, fopTempRoot } from './temp-root.js';
import { killLeftoverSubprocesses } from './video/leftovers.js';
import type { FopContext, FopLimits, FopPool, FopResult, FopSource, FopStage, SideOutputs } from './types.js';

/** A finished run: its result (a temp file result lives until `dispose`). */
export interface FopRun {
  result: FopResult;
  /** Removes the run's temp files; idempotent, never throws. */
  dispose(): Promise<void>;
}

export interface ExecuteOptions {
  /** Seconds the whole pipeline may run (default GRANARY_FOP_TIMEOUT); over → 400 `timed out`. */
  timeoutSeconds?: number;
  /** Aborts the run from outside (shutdown). */
  signal?: AbortSignal;
  /**
   * Whether time spent waiting for a pool slot counts against the time limit. Default true (download URLs: the
   * client waits either way); persistent jobs pass false, so GRANARY_JOB_TIMEOUT bounds the time a command runs,
   * not the time it queued behind other jobs' commands for the video or image slots.
   */
  countQueueWait?: boolean;
  /** Where a persistent command stores its side objects (HLS segments, vsample frames); jobs only. */
  outputs?: SideOutputs;
}

/** The limits of `g.config` as commands see them. */
export function fopLimits(g: Granary): FopLimits {
  const c = g.config;
  return {
    maxSourceBytes: c.fopMaxSourceBytes,
    maxSide: c.fopMaxSide,
    maxPixels: c.fopMaxPixels,
    maxFrames: c.fopMaxFrames,
    maxResourceBytes: c.fopMaxResourceBytes,
    timeoutSeconds: c.fopTimeoutSeconds,
    maxVideoSourceBytes: c.videoMaxSourceBytes,
    videoThreads: c.videoThreads,
    mkzipMaxFiles: c.mkzipMaxFiles,
    mkzipMaxBytes: c.mkzipMaxBytes,
    docMaxSourceBytes: c.docMaxSourceBytes,
    md2htmlMaxSourceBytes: c.md2htmlMaxSourceBytes,
  };
}

/** The stored object as the first stage's source. */
function storedSource(g: Granary, rec: ObjectRecord, limits: FopLimits): FopSource {
  let local: Promise<{ path: string; release(): Promise<void> }> | undefined;
  return {
    contentType: rec.mimeType,
    size: rec.fsize,
    bytes: async () => {
      if (rec.fsize > limits.maxSourceBytes) {
        throw Errors.imageTooLarge(`fop: source is ${rec.fsize} bytes, the limit is ${limits.maxSourceBytes}`);
      }
      return readObjectSmall(g, rec);
    },
    file: async () => (await (local ??= localObjectFile(g, rec))).path,
  };
}

/** Runs `stages` on the object `rec` of `bucket`. Throws Kodo errors; a time-out is 400 `timed out`. */
export async function executeFops(g: Granary, bucket: BucketRecord, rec: ObjectRecord, stages: FopStage[], opts: ExecuteOptions = {}): Promise<FopRun> {
  const limits = fopLimits(g);
  const ended = g.metrics?.fopStarted(stages[0]?.name ?? 'none');
  const timeoutSeconds = opts.timeoutSeconds ?? limits.timeoutSeconds;
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  // The time budget runs from here; without countQueueWait it is paused while a stage waits for its pool slot.
  let remainingMs = timeoutSeconds * 1000;
  let since = 0;
  let timer: NodeJS.Timeout | undefined;
  const startClock = (): void => {
    since = Date.now();
    timer = setTimeout(() => controller.abort(), Math.max(remainingMs, 0));
    timer.unref();
  };
  const stopClock = (): void => {
    clearTimeout(timer);
    remainingMs -= Date.now() - since;
  };
  startClock();
  let currentPool: FopPool | undefined;
  const pools: Pick<FopPools, 'run'> = {
    run: <T>(pool: FopPool, task: () => Promise<T>): Promise<T> => {
      if (opts.countQueueWait === false) stopClock();
      return g.fopPools.run(pool, () => {
        if (opts.countQueueWait === false && !disposed) startClock();
        if (controller.signal.aborted) return Promise.reject(timedOut());
        currentPool = pool;
        return task();
      });
    },
  };
  const dir = fopTempPath(g.config.dataDir, g.processTag);
  let made = false;
  let n = 0;
  let disposed = false;
  const releases: Array<() => Promise<void>> = [];
  const dispose = async (): Promise<void> => {
    if (disposed) return;
    disposed = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    for (const release of releases) await release().catch(() => undefined);
    if (made) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  };
  const ctx: FopContext = {
    limits: { ...limits, timeoutSeconds },
    signal: controller.signal,
    bucket,
    key: rec.key,
    clock: g.clock,
    ...(g.moderation ? { moderation: g.moderation } : {}),
    tempFile: (ext) => {
      if (!made) {
        mkdirSync(dir, { recursive: true });
        made = true;
      }
      return join(dir, `${++n}${ext}`);
    },
    fetchResource: (url, maxBytes) => fetchResource(g, bucket, url, maxBytes, controller.signal),
    openResource: (url, maxBytes, o) => openResource(g, bucket, url, maxBytes, controller.signal, o),
    tools: g.fopTools,
    urls: bucketUrls(g, bucket),
    ...(opts.outputs ? { outputs: opts.outputs } : {}),
    bucketFile: async (key) => {
      const file = await bucketFileOf(g, bucket, key);
      releases.push(file.release);
      return file;
    },
  };
  function timedOut(): Error {
    const message = `${stages[0]?.name ?? 'fop'}: processing timed out after ${timeoutSeconds} s`;
    return currentPool === 'video' ? Errors.videoFailed(message) : Errors.fopFailed(message);
  }
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(timedOut()), { once: true });
  });
  aborted.catch(() => undefined);
  try {
    const result = await Promise.race([runPipeline(stages, storedSource(g, rec, limits), ctx, pools), aborted]);
    ended?.('ok');
    return { result, dispose };
  } catch (err) {
    ended?.('error');
    await dispose();
    throw err;
  }
}

/**
 * Removes the temp dirs of processes that are gone (a crash, a killed worker): those whose tag (the name up to the
 * first `.`) is neither `ownTag` nor in `liveTags()`; the dirs of live workers (fops running) are left alone.
 * ffmpeg/ffprobe subprocesses recorded in a removed dir are killed first (video/leftovers.ts). Called at start
 * and by the reaper (workers/recovery.ts); resolves with how many subprocesses it killed.
 */
export async function clearFopTemp(dataDir: string, ownTag: string, liveTags?: () => Promise<ReadonlySet<string>>): Promise<number> {
  const root = fopTempRoot(dataDir);
  await mkdir(root, { recursive: true });
  // Listed before the live set is read (see FsBlobStore.recover).
  const names = await readdir(root);
  const live = liveTags ? await liveTags() : new Set<string>();
  const gone = names.filter((n) => {
    const tag = n.split('.')[0] ?? '';
    return tag !== ownTag && !live.has(tag);
  });
  const dirs = gone.map((n) => join(root, n));
  const killed = await killLeftoverSubprocesses(dirs);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  return killed;
}

/** The bytes of a result as a fresh stream (a file result is opened anew) and their content type. */
export function resultStream(result: FopResult): { stream: Readable; contentType: string } {
  if ('json' in result) return { stream: Readable.from([Buffer.from(JSON.stringify(result.json))]), contentType: 'application/json' };
  if ('body' in result) return { stream: Readable.from([result.body]), contentType: result.contentType };
  return { stream: createReadStream(result.file), contentType: result.contentType };
}
