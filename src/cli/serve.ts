/**
 * `granary serve`: starts the server, prints a generated key pair once, stops gracefully on SIGTERM/SIGINT (the
 * first one; later ones are ignored) within GRANARY_STOP_TIMEOUT (main.ts, stop-bound.ts). On a terminal with pretty
 * logs it prints the start banner (start-banner.ts) once the server accepts connections; otherwise every process logs
 * a `granary listening` record (JSON for log collectors).
 * With GRANARY_WORKERS > 1 this process becomes the primary (workers/primary.ts) and forks that many workers
 * running the same command; each worker is one `startGranary` (its slot from the primary) and ends by itself when
 * the primary is gone (IPC `disconnect`). GRANARY_WORKERS=1 is one process, no primary.
 */
import cluster from 'node:cluster';
import type { Command } from 'commander';
import { rootKeysLocation } from '../auth/keys.js';
import type { Config } from '../config.js';
import { createLogger, resolveLogFormat } from '../log.js';
import { isLoopback, startBanner, type BannerUrl } from '../start-banner.js';
import { configFrom, withDataDir, type Opts } from './context.js';

/** Time a stop may run past GRANARY_STOP_TIMEOUT before the process ends regardless (exit status 1), ms. */
const BACKSTOP_MS = 10_000;

/** Whether a person reads stdout: a terminal, and the log format is pretty there (GRANARY_LOG_FORMAT auto/pretty). */
function forPerson(config: Config): boolean {
  return process.stdout.isTTY === true && resolveLogFormat(config.logFormat, true) === 'pretty';
}

/**
 * The start banner's facts (start-banner.ts): the listeners' URLs, the data dir, the workers. Another listener (an
 * S3 API port, say) is one more `urls` entry, after the Kodo API's.
 */
function bannerOf(config: Config, api: string, consoleUrl: string | undefined, s3Url: string | undefined): string {
  const urls: BannerUrl[] = [{ label: 'Kodo API', url: api }];
  if (s3Url) urls.push({ label: 'S3 API', url: s3Url, note: 'AWS SDKs and tools, the same key pair' });
  if (consoleUrl) urls.push({ label: 'Console', url: consoleUrl, note: 'open it and sign in with the key pair' });
  return startBanner({
    urls,
    dataDir: config.dataDir,
    workers: config.workers,
    consoleLoopbackOnly: consoleUrl !== undefined && isLoopback(config.consoleHost),
  });
}

/** `http://<host>:<port>` a local client reaches a listener bound to `host` at. */
function localUrl(host: string, port: number): string {
  const h = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

async function serve(opts: Opts): Promise<void> {
  const config = configFrom(opts);
  // The server (fastify, sharp, the stores) is imported here, not with the command tree: other commands skip it.
  if (cluster.isPrimary && config.workers > 1) {
    const { runPrimary } = await import('../workers/primary.js');
    const log = (await createLogger(config)).child({ role: 'primary' });
    const primary = await runPrimary(config, log, (t) => process.stdout.write(t));
    if (forPerson(config)) {
      await primary.accepting;
      const consoleUrl = primary.consolePort !== undefined ? localUrl(config.consoleHost, primary.consolePort) : undefined;
      const s3Url = primary.s3Port !== undefined ? localUrl(config.s3Host, primary.s3Port) : undefined;
      process.stdout.write(bannerOf(config, config.publicUrl ?? localUrl(config.host, primary.port), consoleUrl, s3Url));
    }
    return;
  }
  const [{ startGranary }, { SLOT_ENV, setsOldSpace }] = await Promise.all([import('../main.js'), import('../workers/primary.js')]);
  const slotText = cluster.isWorker ? process.env[SLOT_ENV] : undefined;
  const slot = slotText !== undefined && /^\d+$/.test(slotText) ? Number(slotText) : undefined;
  const started = startGranary(config, slot !== undefined ? { slot } : {});
  // Signals are handled from now on, not only once start-up has finished: the port accepts requests before the
  // workers and singletons are up, and a SIGTERM then must still stop gracefully (after the start completes).
  // Every signal is handled for the life of the process (`on`, not `once`): a stop by process group (systemd's
  // KillMode=control-group, `kill -- -<pgid>`) signals a worker twice (once itself, once forwarded by the primary),
  // and a second signal without a handler would kill it mid-drain. Signals after the first are logged and ignored.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      void started.then((r) => r.g.log.info({ signal }, 'already stopping: signal ignored'), () => undefined);
      return;
    }
    stopping = true;
    // A stop that overruns its own bound (GRANARY_STOP_TIMEOUT, then the aborts of stop-bound.ts) by far is stuck
    // in something unabortable (closing a store): the process ends anyway, with status 1.
    setTimeout(() => {
      process.stderr.write(`granary: the stop did not end within GRANARY_STOP_TIMEOUT (${config.stopTimeoutSeconds} s) + ${BACKSTOP_MS / 1000} s; exiting\n`);
      process.exit(1);
    }, config.stopTimeoutSeconds * 1000 + BACKSTOP_MS).unref();
    started
      .then((r) => {
        r.g.log.info({ signal }, 'shutting down: finishing in-flight requests');
        return r.close();
      })
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        process.stderr.write(`granary: shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // A worker whose primary is gone (killed) stops too: nobody would restart it or stop it.
  if (cluster.isWorker) process.once('disconnect', () => stop('primary gone'));
  const running = await started;
  const { g } = running;
  if (running.generatedKeys) {
    process.stdout.write(
      `Generated a root key pair (kept in ${rootKeysLocation(g.config)}; shown once):\n` +
        `  AccessKey: ${g.keys.accessKey}\n  SecretKey: ${g.keys.secretKey}\n`,
    );
  }
  // For a person at a terminal the banner says it (printed once: by the single process, or by the primary once a
  // worker accepts); log collectors get this record from every process.
  const person = forPerson(config);
  const listening = { url: running.url, publicUrl: g.publicUrl, console: running.console?.url, s3: running.s3?.url, dataDir: g.config.dataDir };
  if (person) g.log.debug(listening, 'granary listening');
  else g.log.info(listening, 'granary listening');
  if (person && !cluster.isWorker) process.stdout.write(bannerOf(config, g.publicUrl, running.console?.url, running.s3?.url));
  if (!cluster.isWorker && config.workerOldSpaceMb > 0 && !setsOldSpace(process.execArgv)) {
    // One process cannot give itself the flag the primary gives its workers (V8 reads it at start-up only).
    g.log.warn(
      { flag: `--initial-old-space-size=${config.workerOldSpaceMb}` },
      'one process without node --initial-old-space-size: large downloads cost about twice the CPU (garbage collection); start node with the flag (docs/operations/workers.md)',
    );
  }
  // No input may reach here (every stream Granary pipes has its errors handled; the test suite fails on any
  // uncaught error). Should a bug do it anyway, it is logged as one JSON line before the process ends.
  process.once('uncaughtException', (err) => {
    g.log.fatal({ err }, 'uncaught exception: the process ends (this is a bug; please report it)');
    process.exit(1);
  });
}

/** Adds `serve`. */
export function addServeCommand(program: Command): void {
  withDataDir(program.command('serve').description('start the server'), { creates: true })
    .option('--port <port>', 'TCP port (GRANARY_PORT, default 9000)')
    .option('--host <addr>', 'bind address (GRANARY_HOST, default 0.0.0.0)')
    .option('--public-url <url>', 'base URL advertised to clients (GRANARY_PUBLIC_URL)')
    .option('--log-level <level>', 'pino log level (GRANARY_LOG_LEVEL, default info)')
    .option('--log-format <format>', 'pretty, json or auto (GRANARY_LOG_FORMAT, default auto: pretty on a terminal)')
    .option('--console-port <port>', 'port of the console listener and /metrics (GRANARY_CONSOLE_PORT, default 9001; 0 = off)')
    .option('--console-host <addr>', 'bind address of the console listener (GRANARY_CONSOLE_HOST, default 127.0.0.1)')
    .option('--s3-port <port>', 'port of the S3 listener (GRANARY_S3_PORT, default 9002; 0 = off)')
    .option('--s3-host <addr>', 'bind address of the S3 listener (GRANARY_S3_HOST, default GRANARY_HOST)')
    .option('--s3-domain <domain>', 'S3 endpoint domain for virtual-hosted buckets (GRANARY_S3_DOMAIN)')
    .option('--outbound-allow <list>', 'CIDRs/hosts callbacks may reach (GRANARY_OUTBOUND_ALLOW)')
    .option('--workers <n>', 'worker processes sharing the port (GRANARY_WORKERS, default: the number of cores)')
    .action(serve);
}
