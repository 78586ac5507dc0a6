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

/**
 * Whether an answered status is the server's fault: 500–599 except Kodo's client codes in that range (573 rate
 * limited, 579 the application's callback failed); Kodo's 6xx (608 changed, 612 missing, 614 exists, 631 no such
 * bucket, 640, 701…) are the client's, like 4xx.
 */
export function isServerFault(status: number): boolean {
  return status >= 500 && status < 600 && status !== 573 && status !== 579;
}

/**
 * The one rule every listener (Kodo, S3, console) logs an error answer by: a server fault at `error` with the
 * error and its stack; anything else — a refusal that is nobody's fault (4xx, Kodo's 6xx, a client that hung up) —
 * at `info`, with the status and message only (no stack).
 */
export function logAnswerError(
  log: Pick<Logger, 'error' | 'info'>,
  status: number,
  err: unknown,
  message: string,
): void {
  if (isServerFault(status)) log.error({ err }, message);
  else log.info({ status, error: (err as { message?: unknown } | null)?.message }, message);
}
