/**
 * A Granary cluster for tests: one throw-away PostgreSQL (pg-server.ts) and one radosgw (s3-server.ts) shared by
 * Granary nodes run as subprocesses (subprocess.ts `spawnServer`), each with its own data dir, GRANARY_WORKERS=1 —
 * nodes that share only PostgreSQL and S3, as on separate machines. Plus what tests of several nodes need: the
 * official SDK pointed at one node, signed management calls, and the root key pair read through the CLI.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import qiniu from 'qiniu';
import { startPgServer, type PgTestServer } from './pg-server.js';
import { startS3Server, type S3TestServer } from './s3-server.js';
import { BIN, cleanEnv } from './cli.js';
import { setUcHost } from './server.js';
import { freePort, spawnServer, type ChildServer } from './subprocess.js';

/** The shared services of a cluster and the environment every node gets. */
export interface ClusterBackend {
  pg: PgTestServer;
  s3: S3TestServer;
  /** GRANARY_METADATA (a fresh database), GRANARY_BLOBS and the AWS_* credentials (a fresh bucket, prefix `granary/`). */
  env: Record<string, string>;
  /** The PostgreSQL database URL (for a test's own look at the shared tables). */
  metadataUrl: string;
  stop(): Promise<void>;
}

/** Starts PostgreSQL and radosgw side by side, with a new database and bucket. */
export async function startClusterBackend(): Promise<ClusterBackend> {
  const [pg, s3] = await Promise.all([startPgServer(), startS3Server()]);
  const metadataUrl = await pg.createDatabase();
  const bucket = await s3.createBucket();
  return {
    pg,
    s3,
    metadataUrl,
    env: { GRANARY_METADATA: metadataUrl, ...s3.granaryEnv(bucket, 'granary/') },
    async stop() {
      await Promise.all([pg.stop(), s3.stop()]);
    },
  };
}

/** One Granary node (a `granary serve` subprocess with a data dir of its own). */
export interface ClusterNode {
  name: string;
  server: ChildServer;
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `127.0.0.1:<port>` */
  host: string;
  dataDir: string;
  /** Resolves with the first match of `re` in the node's output (stdout and stderr), rejects after `timeoutMs`. */
  output(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM, then waits for the exit; removes the data dir. */
  stop(): Promise<void>;
}

/** Starts a node named `name` with the cluster's `env` plus `extra`; `consolePort` enables its console listener. */
export async function startNode(name: string, env: Record<string, string>, extra: Record<string, string> = {}): Promise<ClusterNode> {
  const dataDir = await mkdtemp(join(tmpdir(), `granary-node-${name}-`));
  const port = await freePort();
  const server = await spawnServer({ ...env, GRANARY_DATA_DIR: dataDir, ...extra }, port);
  const url = `http://127.0.0.1:${port}`;
  let gone = false;
  void server.exited.then(() => (gone = true));
  return {
    name,
    server,
    port,
    url,
    host: `127.0.0.1:${port}`,
    dataDir,
    output(re, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const look = (): boolean => {
          const m = re.exec(server.stdout());
          if (m) resolve(m);
          return m !== null;
        };
        if (look()) return;
        const onData = (): void => {
          if (look()) done();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`node ${name} did not print ${String(re)}:\n${server.stdout()}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          server.child.stdout?.off('data', onData);
          server.child.stderr?.off('data', onData);
        };
        server.child.stdout?.on('data', onData);
        server.child.stderr?.on('data', onData);
      });
    },
    async kill() {
      if (!gone) server.child.kill('SIGKILL');
      await server.exited;
    },
    async stop() {
      if (!gone) server.child.kill('SIGTERM');
      await server.exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs the `granary` CLI (bin/granary.js) with `env` (GRANARY_* of the test process left out) to completion. */
export function runCliWith(args: string[], env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: cleanEnv(env), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The official SDK pointed at one node with a key pair: every role at its host (the uc host too). */
export interface NodeSdk {
  mac: qiniu.auth.digest.Mac;
  config: qiniu.conf.Config;
  bm: qiniu.rs.BucketManager;
  token(policy: Record<string, unknown>): string;
}

/**
 * The SDK at `node` (sets the SDK's global uc host to it: take a new one before each call when alternating nodes).
 */
export function sdkOn(node: ClusterNode, keys: { accessKey: string; secretKey: string }): NodeSdk {
  const mac = new qiniu.auth.digest.Mac(keys.accessKey, keys.secretKey);
  setUcHost(node.host);
  const zone = new qiniu.conf.Zone([node.host], [], node.host, node.host, node.host, node.host);
  const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
  return {
    mac,
    config,
    bm: new qiniu.rs.BucketManager(mac, config),
    token: (policy) => new qiniu.rs.PutPolicy(policy as unknown as qiniu.rs.PutPolicyOptions).uploadToken(mac),
  };
}

/** A management request signed like the Node SDK (Qiniu v2 token; a JSON body is signed). Status and parsed body. */
export async function signedJson(
  base: string,
  mac: qiniu.auth.digest.Mac,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; data: Record<string, unknown> }> {
  const url = `${base}${path}`;
  const text = body === undefined ? undefined : JSON.stringify(body);
  const contentType = 'application/json';
  const headers: Record<string, string> = { 'Content-Type': contentType };
  headers.Authorization = qiniu.util.generateAccessTokenV2(mac, url, method, contentType, text);
  const res = await fetch(url, { method, headers, ...(text !== undefined ? { body: text } : {}) });
  const answer = await res.text();
  return { status: res.status, data: answer ? (JSON.parse(answer) as Record<string, unknown>) : {} };
}
