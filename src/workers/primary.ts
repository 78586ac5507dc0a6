/**
 * The primary of `granary serve` with GRANARY_WORKERS > 1 (node:cluster): it serves nothing itself. It takes the
 * data-dir lock (workers/data-dir-lock.ts), listens on GRANARY_PORT, GRANARY_CONSOLE_PORT and GRANARY_S3_PORT itself — before anything
 * else, so a port it cannot bind fails the start (exit 1, the address and the reason) before a worker runs or a key
 * pair is generated — prepares what must exist once before the workers start (the root key pair, printed once when
 * generated; the database schema and its migrations), hands each connection of either port to the worker holding
 * the fewest (workers/balancer.ts), gathers the workers' metrics for a scrape on any of them
 * (metrics/cluster-primary.ts), forks the workers (env GRANARY_WORKER_SLOT = 0…N−1, GRANARY_PORT = the port it
 * listens on), restarts a worker that dies (same slot; back-off 250 ms doubling to 30 s, reset once a worker lived a
 * minute; logged), forwards the first SIGTERM/SIGINT as SIGTERM for a graceful stop (later signals are ignored)
 * and exits when its workers are gone (killing those still there GRANARY_STOP_TIMEOUT + 15 s later). A
 * port it cannot listen on fails the start (runPrimary rejects); a worker that dies before any worker accepted
 * connections is a start-up failure too (bad configuration): the primary stops the others and exits 1. Workers end
 * by themselves when the primary dies (IPC `disconnect`, cli/serve.ts).
 */
import { backoffMs } from '../backoff.js';
import cluster, { type Worker } from 'node:cluster';
import { rm, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { loadRootKeys, rootKeysLocation } from '../auth/keys.js';
import type { Config } from '../config.js';
import { checkDeployment } from '../store/deployment.js';
import { startIdleCollector } from '../idle-gc.js';
import { listenError } from '../listen-error.js';
import { MetricsGather } from '../metrics/cluster-primary.js';
import { openStores } from '../store/open.js';
import { ConnectionBalancer } from './balancer.js';
import { lockDataDir } from './data-dir-lock.js';

/** Environment variable carrying a worker's slot (set by the primary only). */
export const SLOT_ENV = 'GRANARY_WORKER_SLOT';

const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;
/** A worker that lived this long resets the back-off, ms. */
const HEALTHY_MS = 60_000;
/** Time the workers' stop may run past GRANARY_STOP_TIMEOUT before the primary kills them, ms (theirs is 10 s). */
const PRIMARY_BACKSTOP_MS = 15_000;

/** Removes the fop caches of slots ≥ `workers` (left by a run with more workers). */
async function dropSurplusCaches(dataDir: string, workers: number): Promise<void> {
  for (const name of await readdir(dataDir).catch(() => [] as string[])) {
    const m = /^fop-cache\.(\d+)$/.exec(name);
    if (m && Number(m[1]) >= workers) await rm(join(dataDir, name), { recursive: true, force: true });
  }
}

/** Whether node flags `execArgv` set V8's initial old-space size. */
export function setsOldSpace(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => /^--initial[-_]old[-_]space[-_]size\b/.test(a));
}

/** Whether node flags `execArgv` set V8's largest semi-space. */
export function setsSemiSpace(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => /^--max[-_]semi[-_]space[-_]size\b/.test(a));
}

/**
 * The node flags of the workers: the primary's (`inherited`) plus `--initial-old-space-size=<oldSpaceMb>` and
 * `--max-semi-space-size=<semiSpaceMb>`, each unless it is 0 or the flags already set it (an operator's own choice
 * wins).
 */
export function workerExecArgv(inherited: readonly string[], oldSpaceMb: number, semiSpaceMb = 0): string[] {
  const out = [...inherited];
  if (oldSpaceMb > 0 && !setsOldSpace(inherited)) out.push(`--initial-old-space-size=${oldSpaceMb}`);
  if (semiSpaceMb > 0 && !setsSemiSpace(inherited)) out.push(`--max-semi-space-size=${semiSpaceMb}`);
  return out;
}

/** What `runPrimary` resolves with. */
export interface RunningPrimary {
  /** The API port the primary listens on (GRANARY_PORT, or the one chosen for 0). */
  port: number;
  /** The console port the primary listens on (absent when GRANARY_CONSOLE_PORT=0). */
  consolePort?: number;
  /** The S3 API port the primary listens on (absent when GRANARY_S3_PORT=0). */
  s3Port?: number;
  /** Resolves when the first worker accepts connections. */
  accepting: Promise<void>;
}

/**
 * Runs the primary; resolves once it listens and the workers are forked (the process then lives until they are
 * gone). Rejects when another server holds the data dir, or a port cannot be listened on (listen-error.ts:
 * EADDRINUSE, EACCES…).
 */
export async function runPrimary(config: Config, log: Logger, print: (text: string) => void): Promise<RunningPrimary> {
  // One server per data dir (held until this process ends; its workers are covered by it).
  lockDataDir(config.dataDir);
  // Every port first: one that cannot be bound fails the start before a worker runs or a key pair is generated.
  const balancer = new ConnectionBalancer(log, 'api');
  const port = await balancer.listen(config.port, config.host).catch((err: unknown) => {
    throw listenError('api', config.host, config.port, err);
  });
  let consoleBalancer: ConnectionBalancer | undefined;
  let consolePort: number | undefined;
  if (config.consolePort !== undefined) {
    consoleBalancer = new ConnectionBalancer(log, 'console');
    const consoleHost = config.consoleHost;
    const wanted = config.consolePort;
    consolePort = await consoleBalancer.listen(wanted, consoleHost).catch(async (err: unknown) => {
      await balancer.close();
      throw listenError('console', consoleHost, wanted, err);
    });
  }
  let s3Balancer: ConnectionBalancer | undefined;
  let s3Port: number | undefined;
  if (config.s3Port !== undefined) {
    s3Balancer = new ConnectionBalancer(log, 's3');
    const s3Host = config.s3Host;
    const wanted = config.s3Port;
    s3Port = await s3Balancer.listen(wanted, s3Host).catch(async (err: unknown) => {
      await Promise.all([balancer.close(), consoleBalancer?.close()]);
      throw listenError('s3', s3Host, wanted, err);
    });
  }
  // Schema and migrations once, before several processes open the database at the same time.
  const { meta, blobs } = await openStores(config);
  let loaded;
  try {
    // The deployment check (store/deployment.ts) before any key is made: a mismatch fails the start (exit 1).
    const state = await checkDeployment(config, meta, blobs);
    if (state.created !== 'nothing') log.info({ deploymentId: state.deploymentId, wrote: state.created }, 'deployment id written');
    loaded = await loadRootKeys(config, {
      ...(config.accessKey ? { accessKey: config.accessKey } : {}),
      ...(config.secretKey ? { secretKey: config.secretKey } : {}),
    }, meta);
  } finally {
    await meta.close();
    await blobs.close?.();
  }
  const { keys, created } = loaded;
  if (created) {
    print(
      `Generated a root key pair (kept in ${rootKeysLocation(config)}; shown once):\n` +
        `  AccessKey: ${keys.accessKey}\n  SecretKey: ${keys.secretKey}\n`,
    );
  }
  await dropSurplusCaches(config.dataDir, config.workers);
  const metricsGather = new MetricsGather(log);
  let firstAccepting: () => void = () => undefined;
  const accepting = new Promise<void>((resolve) => (firstAccepting = resolve));

  const bySlot = new Map<number, { worker: Worker; startedMs: number }>();
  /** Quick deaths in a row per slot (the back-off's retry number). */
  const deaths = new Map<number, number>();
  let stopping = false;
  let listened = false;

  cluster.setupPrimary({ execArgv: workerExecArgv(cluster.settings.execArgv ?? process.execArgv, config.workerOldSpaceMb, config.workerSemiSpaceMb) });
  const fork = (slot: number): void => {
    const worker = cluster.fork({
      [SLOT_ENV]: String(slot),
      GRANARY_PORT: String(port),
      ...(consolePort !== undefined ? { GRANARY_CONSOLE_PORT: String(consolePort) } : {}),
      ...(s3Port !== undefined ? { GRANARY_S3_PORT: String(s3Port) } : {}),
    });
    bySlot.set(slot, { worker, startedMs: Date.now() });
    // Its own listener is exclusive (workers/handoff.ts): its `accepting` message, not cluster's 'listening', says
    // it is up.
    balancer.track(worker, () => {
      listened = true;
      firstAccepting();
    });
    consoleBalancer?.track(worker, () => undefined);
    s3Balancer?.track(worker, () => undefined);
    metricsGather.track(worker);
    worker.once('exit', (code, signal) => {
      balancer.remove(worker);
      consoleBalancer?.remove(worker);
      s3Balancer?.remove(worker);
      metricsGather.remove(worker);
      const entry = bySlot.get(slot);
      if (entry?.worker === worker) bySlot.delete(slot);
      if (stopping) {
        // A worker that did not end its stop itself (killed, crashed) makes the stop a failed one — except one ended
        // by the SIGTERM itself: it came before the worker's handler was installed (cli/serve.ts installs it before
        // the worker listens), so the worker was still starting and served nothing.
        if (code !== 0 && signal !== 'SIGTERM') exitCode = 1;
        if (bySlot.size === 0) {
          log.info('all workers stopped');
          process.exit(exitCode);
        }
        return;
      }
      if (!listened) {
        log.fatal({ worker: slot, code, signal }, 'a worker failed to start; stopping');
        stop('start-up failure', 1);
        return;
      }
      const lived = Date.now() - (entry?.startedMs ?? Date.now());
      const n = lived >= HEALTHY_MS ? 1 : (deaths.get(slot) ?? 0) + 1;
      deaths.set(slot, n);
      const delay = backoffMs({ firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }, n);
      log.warn({ worker: slot, workerPid: worker.process.pid, code, signal, restartInMs: delay }, 'worker died; restarting it');
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, delay);
    });
  };

  let exitCode = 0;
  const stop = (why: string, code = 0): void => {
    exitCode = Math.max(exitCode, code);
    // A stop by process group signals the workers itself too, and a signal may come again: one stop, one SIGTERM
    // per worker (each worker ignores further ones as well, cli/serve.ts).
    if (stopping) {
      log.info({ signal: why }, 'already stopping: signal ignored');
      return;
    }
    log.info({ signal: why, workers: bySlot.size }, 'shutting down: stopping the workers');
    stopping = true;
    // No new connections from now on; the workers finish the ones they hold.
    void balancer.close();
    void consoleBalancer?.close();
    void s3Balancer?.close();
    if (bySlot.size === 0) process.exit(exitCode);
    for (const { worker } of bySlot.values()) worker.process.kill('SIGTERM');
    // Workers bound their own stop (GRANARY_STOP_TIMEOUT, then their own backstop); one that is still there later
    // is stuck beyond help (its event loop blocked): it is killed, and the primary exits with status 1.
    setTimeout(() => {
      for (const { worker } of bySlot.values()) {
        log.error({ worker: worker.id, workerPid: worker.process.pid }, 'a worker did not stop in time; killing it');
        worker.process.kill('SIGKILL');
      }
      process.exit(1);
    }, config.stopTimeoutSeconds * 1000 + PRIMARY_BACKSTOP_MS).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (let slot = 0; slot < config.workers; slot++) fork(slot);
  // The primary's own start-up garbage and young generation, given back once it is quiet (idle-gc.ts).
  startIdleCollector(config.idleGcSeconds);
  // The pid is in every record already (pino's base fields).
  log.info({ workers: config.workers, port }, 'granary primary started');
  return { port, ...(consolePort !== undefined ? { consolePort } : {}), ...(s3Port !== undefined ? { s3Port } : {}), accepting };
}
