/**
 * Starts Granary as a separate process (for tests that kill or signal it): `node bin/granary.js`, the build in dist/
 * (test/global-setup.ts rebuilds it when older than src/).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import qiniu from 'qiniu';
import { BIN } from './cli.js';
import { AK, SK } from './server.js';

export { freePort } from './cli.js';

export interface ChildServer {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/**
 * The status of GET `url` on a connection of its own, closed after the answer. A kept-alive connection would stay
 * counted against the worker that answered it, and the primary hands each new connection to the worker holding the
 * fewest (src/workers/balancer.ts): for as long as the server keeps it open (72 s), tests opening fresh connections
 * would all reach the other worker.
 */
function statusOnce(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      })
      .once('error', reject);
  });
}

/**
 * Spawns `granary serve` and resolves once it answers HTTP (on a connection closed after the answer). `prefix` runs it through another command (e.g.
 * `setpriv …` to drop capabilities). One process (GRANARY_WORKERS=1) unless `env` asks for more workers.
 * `options.detached`: in a process group of its own (its pid is the group's id: `process.kill(-pid, signal)`
 * signals it and its workers).
 */
export async function spawnServer(
  env: Record<string, string>,
  port: number,
  prefix: string[] = [],
  options: { detached?: boolean } = {},
): Promise<ChildServer> {
  const argv = [process.execPath, BIN, 'serve'];
  const [cmd, ...args] = [...prefix, ...argv] as [string, ...string[]];
  const child = spawn(cmd, args, {
    env: { ...process.env, GRANARY_PORT: String(port), GRANARY_HOST: '127.0.0.1', GRANARY_LOG_LEVEL: 'warn', GRANARY_WORKERS: '1', GRANARY_CONSOLE_PORT: '0', GRANARY_S3_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached === true,
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  const url = `http://127.0.0.1:${port}`;
  // Generous: a loaded machine (two cores, the suite in parallel) may take a minute to start two workers.
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early: ${out}`);
    try {
      if ((await statusOnce(`${url}/regions`)) === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url, stdout: () => out, exited };
}

/**
 * The official SDK pointed at a server on 127.0.0.1:`port` with the test root pair: every role at that host (a static
 * Zone; the uc host too), its Mac, config and a BucketManager.
 */
export function sdkAt(port: number): { mac: qiniu.auth.digest.Mac; config: qiniu.conf.Config; bm: qiniu.rs.BucketManager } {
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  const host = `127.0.0.1:${port}`;
  const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
  const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
  (qiniu.conf as unknown as { UC_HOST: string }).UC_HOST = host;
  return { mac, config, bm: new qiniu.rs.BucketManager(mac, config) };
}
