/**
 * The start-up failure of a listener that cannot bind its address: one message naming the listener, the address and
 * the reason (`the console listener (GRANARY_CONSOLE_PORT) cannot listen on 127.0.0.1:9001: address already in use
 * (EADDRINUSE)`), printed by `granary serve` before it exits 1 (cli.ts).
 */

/** Which listener failed, as the message names it. */
export type ListenerName = 'api' | 'console' | 's3';

const NAMES: Record<ListenerName, string> = {
  api: 'the Kodo API listener (GRANARY_PORT)',
  console: 'the console listener (GRANARY_CONSOLE_PORT)',
  s3: 'the S3 listener (GRANARY_S3_PORT)',
};

/** Plain words for the usual bind failures (errno codes). */
const REASONS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
  ENOTFOUND: 'the host name does not resolve',
};

/** The Error to throw for `err`, a failed `listen` of `listener` on `host:port`; keeps `err` as its cause. */
export function listenError(listener: ListenerName, host: string, port: number, err: unknown): Error {
  const code = (err as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' && REASONS[code] ? `${REASONS[code]} (${code})` : (err as Error).message;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Error(`${NAMES[listener]} cannot listen on ${address}: ${reason}`, { cause: err });
}
