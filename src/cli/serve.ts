/** `granary serve`: starts the server, prints a generated key pair once, stops gracefully on SIGTERM/SIGINT. */
import type { Command } from 'commander';
import { startGranary } from '../main.js';
import { configFrom, withDataDir, type Opts } from './context.js';

async function serve(opts: Opts): Promise<void> {
  const running = await startGranary(configFrom(opts));
  const { g } = running;
  if (running.generatedKeys) {
    process.stdout.write(
      `Generated a root key pair (kept in ${g.config.dataDir}/credentials.json; shown once):\n` +
        `  AccessKey: ${g.keys.accessKey}\n  SecretKey: ${g.keys.secretKey}\n`,
    );
  }
  g.log.info({ url: running.url, publicUrl: g.publicUrl, console: running.console?.url, dataDir: g.config.dataDir }, 'granary listening');
  const stop = (signal: string): void => {
    g.log.info({ signal }, 'shutting down: finishing in-flight requests');
    running
      .close()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        g.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  // No input may reach here (every stream Granary pipes has its errors handled; the test suite fails on any
  // uncaught error). Should a bug do it anyway, it is logged as one JSON line before the process ends.
  process.once('uncaughtException', (err) => {
    g.log.fatal({ err }, 'uncaught exception: the process ends (this is a bug; please report it)');
    process.exit(1);
  });
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/** Adds `serve`. */
export function addServeCommand(program: Command): void {
  withDataDir(program.command('serve').description('start the server'))
    .option('--port <port>', 'TCP port (GRANARY_PORT, default 9000)')
    .option('--host <addr>', 'bind address (GRANARY_HOST, default 0.0.0.0)')
    .option('--public-url <url>', 'base URL advertised to clients (GRANARY_PUBLIC_URL)')
    .option('--log-level <level>', 'pino log level (GRANARY_LOG_LEVEL, default info)')
    .option('--log-format <format>', 'pretty, json or auto (GRANARY_LOG_FORMAT, default auto: pretty on a terminal)')
    .option('--console-port <port>', 'port of the console listener and /metrics (GRANARY_CONSOLE_PORT, default 9001; 0 = off)')
    .option('--console-host <addr>', 'bind address of the console listener (GRANARY_CONSOLE_HOST, default GRANARY_HOST)')
    .option('--outbound-allow <list>', 'CIDRs/hosts callbacks may reach (GRANARY_OUTBOUND_ALLOW)')
    .action(serve);
}
