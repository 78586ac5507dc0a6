/**
 * Test harness: starts the real Granary on a free port with a temp data dir, and builds official `qiniu` SDK
 * objects pointed at it in both configurations of docs/development/kodo-protocol.md §1.3 (static Zone; auto-discovery via /v4/query).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import qiniu from 'qiniu';
import { loadConfig } from '../../src/config.js';
import { startGranary, type RunningGranary } from '../../src/main.js';
import { AdjustableClock } from '../../src/ports/clock.js';

export const AK = 'test-access-key';

/** `qiniu.conf.UC_HOST` (a setter missing from the SDK's typings; it also sets the region-query host). */
export function setUcHost(host: string): void {
  (qiniu.conf as unknown as { UC_HOST: string }).UC_HOST = host;
}
export const SK = 'test-secret-key';

export interface TestServer {
  running: RunningGranary;
  url: string;
  /** The console listener's URL (web console, `/metrics`), unless the test disabled it (GRANARY_CONSOLE_PORT=0). */
  consoleUrl?: string;
  /** The S3 listener's URL (the AWS S3 API), unless the test disabled it (GRANARY_S3_PORT=0). */
  s3Url?: string;
  /** `127.0.0.1:<port>` */
  host: string;
  dataDir: string;
  clock: AdjustableClock;
  mac: qiniu.auth.digest.Mac;
  /** SDK config with a static Zone (option A). */
  zoneConfig(): qiniu.conf.Config;
  /** SDK config that discovers hosts through our /v4/query (option C). */
  discoveryConfig(): qiniu.conf.Config;
  bucketManager(config?: qiniu.conf.Config): qiniu.rs.BucketManager;
  uploadToken(policy: Record<string, unknown>): string;
  stop(): Promise<void>;
}

/** An SDK configuration with a static Zone: every role (up, io, rs, rsf, api, uc) at `host`. */
export function staticZoneConfig(host: string): qiniu.conf.Config {
  setUcHost(host);
  const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
  return new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
}

/**
 * Starts a server; `env` adds GRANARY_* settings (GRANARY_DATA_DIR: use that dir and leave it at stop); `logger`
 * replaces the silent one (to look at what is logged). The console listener runs on a free port of its own
 * (`consoleUrl`) unless `env` sets GRANARY_CONSOLE_PORT (0 disables it); so does the S3 listener (`s3Url`,
 * GRANARY_S3_PORT).
 */
export async function startTestServer(env: Record<string, string> = {}, logger?: pino.Logger): Promise<TestServer> {
  // A data dir given by the test (e.g. on a small tmpfs) is the test's to remove; a temp one is removed at stop.
  const ownDir = env.GRANARY_DATA_DIR === undefined;
  const dataDir = env.GRANARY_DATA_DIR ?? (await mkdtemp(join(tmpdir(), 'granary-test-')));
  const clock = new AdjustableClock();
  const config = loadConfig({
    GRANARY_PORT: '0',
    GRANARY_HOST: '127.0.0.1',
    GRANARY_DATA_DIR: dataDir,
    GRANARY_ACCESS_KEY: AK,
    GRANARY_SECRET_KEY: SK,
    ...env,
  });
  // The console listener binds any free port (0 in the config; GRANARY_CONSOLE_PORT=0 in `env` disables it).
  if (env.GRANARY_CONSOLE_PORT === undefined) config.consolePort = 0;
  // Likewise the S3 listener (GRANARY_S3_PORT=0 in `env` disables it).
  if (env.GRANARY_S3_PORT === undefined) config.s3Port = 0;
  const running = await startGranary(config, { clock, logger: logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
  const host = `127.0.0.1:${running.port}`;
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  const zoneConfig = (): qiniu.conf.Config => staticZoneConfig(host);
  const discoveryConfig = (): qiniu.conf.Config => {
    setUcHost(host);
    return new qiniu.conf.Config({ useHttpsDomain: false, regionsQueryResultCachePath: null } as unknown as qiniu.conf.ConfigOptions);
  };
  return {
    running,
    url: running.url,
    ...(running.console ? { consoleUrl: running.console.url } : {}),
    ...(running.s3 ? { s3Url: running.s3.url } : {}),
    host,
    dataDir,
    clock,
    mac,
    zoneConfig,
    discoveryConfig,
    bucketManager: (config) => new qiniu.rs.BucketManager(mac, config ?? zoneConfig()),
    uploadToken: (policy) => new qiniu.rs.PutPolicy(policy as unknown as qiniu.rs.PutPolicyOptions).uploadToken(mac),
    stop: async () => {
      await running.close();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Awaits an SDK call that resolves with `{data, resp}` and returns status and data. */
export async function sdk<T = unknown>(p: Promise<{ data: unknown; resp: { statusCode?: number } }>): Promise<{ status: number; data: T }> {
  const { data, resp } = await p;
  return { status: resp.statusCode ?? 0, data: data as T };
}
