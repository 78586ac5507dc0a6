/**
 * Bench of cluster mode (issue 14): Granary on PostgreSQL + an S3 server (GRANARY_METADATA, GRANARY_BLOBS) with one
 * and with two nodes, against the embedded mode (SQLite + the local disk) and against the same operations sent
 * straight to the S3 server (the ceiling: every Granary blob write and uncached read is one such S3 request), all in
 * the same run on this machine. PostgreSQL (test/helpers/pg-server.ts) and the S3 server (Ceph radosgw with a
 * memstore OSD, test/helpers/s3-server.ts) are throw-away instances on loopback, sharing the cores with Granary
 * and the load generator, so the absolute figures are those of one small machine doing everything.
 *
 * Per mode: form uploads of 4 KiB objects under distinct keys (16 clients; with two nodes 8 per node, each node
 * fed by its own load-generator process) for `uploadMs`, then GETs of one 4 KiB object (16 connections, split the
 * same way). Small objects are stored inline (GRANARY_INLINE_MAX) in every mode, as they are by default; the
 * `1 MiB` upload row shows a blob that goes to S3.
 *
 * Standalone: `npx tsx bench/cluster.ts [--quick]`; in `npm run bench -- --only=cluster`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import { startPgServer } from '../test/helpers/pg-server.js';
import { startS3Server } from '../test/helpers/s3-server.js';
import { transpileForBench } from './lib/build.js';
import { startClient, startServer, type ClientChild, type ServerChild } from './lib/child.js';
import type { Job, JobResult } from './lib/jobs.js';
import { benchServerEnv, runIfMain, type BenchOptions } from './lib/standalone.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 'cluster-bench';
const KiB = 1024;
const MiB = 1024 * KiB;

type Mode = 'embedded' | 'cluster-1' | 'cluster-2' | 's3-direct';

/** Figures of one mode. */
interface ModeFigures {
  upload4KiB: { opsPerSecond: number; p50Ms?: number; p99Ms?: number; errors: number };
  upload1MiB: { opsPerSecond: number; p50Ms?: number; p99Ms?: number; errors: number };
  get4KiB: { requestsPerSecond: number; p50Ms?: number; p99Ms?: number; errors: number };
}

/** Jobs run at once on several clients (one per node); ops/s and latencies combined. */
async function together(clients: ClientChild[], jobs: Job[]): Promise<{ perSecond: number; p50?: number; p99?: number; errors: number; firstError?: string }> {
  const results: JobResult[] = await Promise.all(jobs.map((job, i) => (clients[i] as ClientChild).run(job)));
  const perSecond = results.reduce((n, r) => n + r.ok / (r.elapsedMs / 1000), 0);
  const worst = (f: (r: JobResult) => number | undefined): number | undefined => {
    const v = results.map(f).filter((x): x is number => x !== undefined);
    return v.length > 0 ? Math.max(...v) : undefined;
  };
  const errors = results.reduce((n, r) => n + r.errors, 0);
  const firstError = results.find((r) => r.firstError)?.firstError;
  return { perSecond, p50: worst((r) => r.latency?.p50), p99: worst((r) => r.latency?.p99), errors, ...(firstError ? { firstError } : {}) };
}

export async function run(opts: BenchOptions): Promise<Record<string, unknown>> {
  const { log } = opts;
  const uploadMs = opts.quick ? 2000 : 8000;
  const warmupMs = opts.quick ? 500 : 2000;
  const concurrency = 16;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-cluster-build-'));
  const dirs: string[] = [buildDir];
  const servers: ServerChild[] = [];
  const clients: ClientChild[] = [];
  log('Starting PostgreSQL and the S3 server (radosgw) on loopback…');
  const [pg, s3] = await Promise.all([startPgServer(), startS3Server()]);
  try {
    await transpileForBench(root, buildDir);
    clients.push(await startClient(buildDir), await startClient(buildDir));
    const token = new qiniu.rs.PutPolicy({ scope: BUCKET }).uploadToken(new qiniu.auth.digest.Mac(AK, SK));

    /** Starts the Granary node(s) of a mode; returns their ports. */
    const startMode = async (mode: Exclude<Mode, 's3-direct'>): Promise<ServerChild[]> => {
      const nodes = mode === 'cluster-2' ? 2 : 1;
      const extra: Record<string, string> = { GRANARY_CONSOLE_PORT: '0' };
      if (mode !== 'embedded') {
        Object.assign(extra, { GRANARY_METADATA: await pg.createDatabase() }, s3.granaryEnv(await s3.createBucket(), 'blobs'));
      }
      const started: ServerChild[] = [];
      for (let i = 0; i < nodes; i++) {
        const dataDir = await mkdtemp(join(os.tmpdir(), `granary-bench-cluster-${mode}-${i}-`));
        dirs.push(dataDir);
        // One after the other: the first creates the bench bucket, the second finds it.
        const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, extra));
        started.push(server);
        servers.push(server);
      }
      return started;
    };

    const figures: Partial<Record<Mode, ModeFigures>> = {};
    const modes: Mode[] = ['embedded', 'cluster-1', 'cluster-2', 's3-direct'];
    for (const mode of modes) {
      log(`[${mode}]`);
      let nodes: ServerChild[] = [];
      let uploadJobs: (size: number, prefix: string, ms: number) => Job[];
      let getJobs: (ms: number) => Job[];
      if (mode === 's3-direct') {
        const bucket = await s3.createBucket();
        const s3Job = { endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, bucket };
        uploadJobs = (size, prefix, ms) => [{ kind: 's3-put', ...s3Job, key: `${prefix}/`, size, concurrency, durationMs: ms }];
        const put = await clients[0]!.run({ kind: 's3-put', ...s3Job, key: 'get-4k', size: 4 * KiB, concurrency: 1, durationMs: 1 });
        if (put.ok < 1) throw new Error(`S3 PutObject failed: ${put.firstError}`);
        getJobs = (ms) => [{ kind: 's3-get', ...s3Job, key: 'get-4k0', size: 4 * KiB, concurrency, durationMs: ms }];
      } else {
        nodes = await startMode(mode);
        const share = concurrency / nodes.length;
        uploadJobs = (size, prefix, ms) =>
          nodes.map((n, i) => ({ kind: 'upload', port: n.port, token, keyPrefix: `${prefix}/${i}/`, size, concurrency: share, durationMs: ms }) as const);
        const seed = await clients[0]!.run({ kind: 'upload-stream', port: nodes[0]!.port, token, bucket: BUCKET, key: 'get-4k', size: 4 * KiB });
        if (seed.ok < 1) throw new Error(`seeding the GET object failed: ${seed.firstError}`);
        getJobs = (ms) =>
          nodes.map((n) => ({ kind: 'get-rate', port: n.port, path: `/${BUCKET}/get-4k`, concurrency: share, durationMs: ms, expectBytes: 4 * KiB }) as const);
      }
      await together(clients, uploadJobs(4 * KiB, 'warm-up', warmupMs));
      const up = await together(clients, uploadJobs(4 * KiB, 'up-4k', uploadMs));
      const up1 = await together(clients, uploadJobs(MiB, 'up-1m', uploadMs / 2));
      await together(clients, getJobs(warmupMs));
      const get = await together(clients, getJobs(uploadMs));
      for (const [what, r] of [['upload 4 KiB', up], ['upload 1 MiB', up1], ['GET 4 KiB', get]] as const) {
        log(`  ${what.padEnd(13)}: ${r.perSecond.toFixed(0).padStart(6)} /s, p50 ${r.p50?.toFixed(1)} ms, p99 ${r.p99?.toFixed(1)} ms${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}`);
      }
      figures[mode] = {
        upload4KiB: { opsPerSecond: up.perSecond, p50Ms: up.p50, p99Ms: up.p99, errors: up.errors },
        upload1MiB: { opsPerSecond: up1.perSecond, p50Ms: up1.p50, p99Ms: up1.p99, errors: up1.errors },
        get4KiB: { requestsPerSecond: get.perSecond, p50Ms: get.p50, p99Ms: get.p99, errors: get.errors },
      };
      for (const n of nodes) await n.stop();
    }
    const e = figures.embedded as ModeFigures;
    log('');
    log('mode        upload 4 KiB/s   upload 1 MiB/s   GET 4 KiB/s   (vs embedded)');
    for (const mode of modes) {
      const f = figures[mode] as ModeFigures;
      const r = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;
      log(
        `${mode.padEnd(11)} ${f.upload4KiB.opsPerSecond.toFixed(0).padStart(8)} ${r(f.upload4KiB.opsPerSecond, e.upload4KiB.opsPerSecond).padStart(6)}` +
          ` ${f.upload1MiB.opsPerSecond.toFixed(0).padStart(8)} ${r(f.upload1MiB.opsPerSecond, e.upload1MiB.opsPerSecond).padStart(6)}` +
          ` ${f.get4KiB.requestsPerSecond.toFixed(0).padStart(8)} ${r(f.get4KiB.requestsPerSecond, e.get4KiB.requestsPerSecond).padStart(6)}`,
      );
    }
    return { parameters: { uploadMs, warmupMs, concurrency }, figures };
  } finally {
    for (const s of servers) await s.stop().catch(() => undefined);
    for (const c of clients) await c.stop().catch(() => undefined);
    await Promise.all([pg.stop(), s3.stop()]);
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, run);
