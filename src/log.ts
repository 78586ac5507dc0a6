/**
 * The server's logger (pino): one JSON object per line for log collectors, or pino-pretty's coloured
 * one-line-per-event text for a person at a terminal (GRANARY_LOG_FORMAT: `pretty`, `json`, `auto` = pretty when
 * stdout is a TTY). Level from GRANARY_LOG_LEVEL. Every request line carries `reqId` (the X-Reqid answered).
 */
import pino, { type Logger } from 'pino';
import type { Config, LogFormat } from './config.js';

/** The format actually used: `auto` resolves to `pretty` on a TTY, `json` otherwise. */
export function resolveLogFormat(format: LogFormat, isTTY: boolean): 'pretty' | 'json' {
  return format === 'auto' ? (isTTY ? 'pretty' : 'json') : format;
}

/**
 * A logger in the configured format, writing to `out.destination` (default stdout). Pretty output is written
 * synchronously (a person reads it; nothing is lost when the process ends on a fatal error) and coloured only on
 * a TTY. `out.isTTY` defaults to whether stdout is a terminal. pino-pretty is loaded only when used (it costs
 * a few hundred ms of start-up, which the CLI's offline commands do not pay).
 */
export async function createLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  out: { isTTY?: boolean; destination?: NodeJS.WritableStream } = {},
): Promise<Logger> {
  const isTTY = out.isTTY ?? process.stdout.isTTY === true;
  if (resolveLogFormat(config.logFormat, isTTY) === 'json') {
    return out.destination ? pino({ level: config.logLevel }, out.destination) : pino({ level: config.logLevel });
  }
  const { default: pretty } = await import('pino-pretty');
  return pino(
    { level: config.logLevel },
    pretty({
      colorize: isTTY,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: true,
      ...(out.destination ? { destination: out.destination } : {}),
    }),
  );
}
