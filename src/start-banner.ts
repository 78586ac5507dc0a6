/**
 * What `granary serve` prints for a person once the server is ready (cli/serve.ts, workers/primary.ts): where the
 * Kodo API and the console answer, that the console asks for the key pair, the data dir, the worker count and how to
 * stop — a few aligned lines instead of log records. Printed only when stdout is a terminal and the log format is
 * pretty (log.ts `resolveLogFormat`); log collectors get the `granary listening` JSON record instead.
 *
 * Each listener is one `BannerUrl` line, so another listener (an S3 API port, say) is one more entry in `urls`.
 */

/** One listener line: `label` (e.g. `Kodo API`), its URL, an optional note after it. */
export interface BannerUrl {
  label: string;
  url: string;
  note?: string;
}

export interface BannerFacts {
  urls: BannerUrl[];
  dataDir: string;
  /** Worker processes (1 = one process). */
  workers: number;
  /** When the console listener binds loopback only: how to open it to the network (shown as a hint). */
  consoleLoopbackOnly?: boolean;
}

/** The banner text (ends with a newline). */
export function startBanner(f: BannerFacts): string {
  const rows: Array<[string, string]> = [
    ...f.urls.map((u): [string, string] => [u.label, u.note ? `${u.url}   ${u.note}` : u.url]),
    ['Data dir', f.dataDir],
    ['Workers', f.workers === 1 ? '1 (one process)' : String(f.workers)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = [
    '',
    'Granary is ready.',
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    ...(f.consoleLoopbackOnly ? ['  (the console answers on this machine only; GRANARY_CONSOLE_HOST=0.0.0.0 opens it to the network)'] : []),
    'Press Ctrl-C to stop.',
    '',
  ];
  return lines.join('\n') + '\n';
}

/** Whether a bind address is loopback only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
