/**
 * Bench of Granary's S3 API (docs/development/kodo-protocol.md §18): PUT and GET of 4 KiB objects (2,000 ops, 16 in
 * flight) and 64 MiB objects (8 objects, 2 in flight) through @aws-sdk/client-s3 against (a) Granary's S3 listener,
 * (b) a throw-away Ceph radosgw (test/helpers/s3-server.ts, memstore OSD, on loopback), and (c) Granary's own Kodo
 * API (form upload through the `qiniu` SDK for PUT, a plain GET of the public bucket for GET), in the same run, one
 * after the other per case. Every target first puts and reads back a few objects of the case's size untimed (warm-up:
 * JIT, connections, buffers); then 3 rounds (1 with `--quick`) rotate the order of the targets (A B C, B C A,
 * C A B) and the figures are each target's median round (every round is kept in the JSON). The Granary child is the usual bench server
 * (bench/granary-server.ts, file stores) with its S3 listener on a free loopback port. Figures: ops/s for 4 KiB,
 * MB/s (10^6 bytes) for 64 MiB, and the ratios Granary-S3 / radosgw and Granary-S3 / Kodo API.
 * `--quick`: 400 small ops and 4 large objects.
 *
 * Standalone: `npx tsx bench/s3.ts [--quick]` prints the table and the figures as JSON; `npm run bench -- --only=s3`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import qiniu from 'qiniu';
import { startS3Server } from '../test/helpers/s3-server.js';
import { transpileForBench } from './lib/build.js';
import { startServer } from './lib/child.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { fmt, KiB, MiB, table } from './lib/table.js';
import { median, timedPool } from './lib/stats.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 's3-bench';

/** One PUT/GET target: puts `body` under `key`, gets `key` (answers the bytes read). */
interface Target {
  name: string;
  put(key: string, body: Buffer): Promise<void>;
  get(key: string): Promise<number>;
}

/** A free loopback TCP port (listen on 0, close). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Drains a response body; answers its length in bytes. */
async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of body) n += c.length;
  return n;
}

/** A target speaking S3 through the AWS SDK. */
function s3Target(name: string, client: S3Client, bucket: string): Target {
  return {
    name,
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async get(key) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return drain(r.Body as Readable);
    },
  };
}

/** Granary's Kodo API: qiniu SDK form upload, plain GET of the public bucket. */
function kodoTarget(port: number): Target {
  const host = `127.0.0.1:${port}`;
  const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
  const config = new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions);
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  const token = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 86_400 }).uploadToken(mac);
  const form = new qiniu.form_up.FormUploader(config);
  return {
    name: 'Granary Kodo API',
    async put(key, body) {
      const r = await form.put(token, key, body, new qiniu.form_up.PutExtra());
      if (!r.ok()) throw new Error(`form upload of ${key}: ${r.resp.statusCode} ${JSON.stringify(r.data)}`);
    },
    async get(key) {
      const res = await fetch(`http://${host}/${BUCKET}/${encodeURIComponent(key)}`);
      if (res.status !== 200 || !res.body) throw new Error(`GET ${key}: ${res.status}`);
      return drain(res.body as unknown as AsyncIterable<Uint8Array>);
    },
  };
}


interface Case {
  name: string;
  size: number;
  count: number;
  concurrency: number;
  /** Objects put and read back, untimed, on every target before the first round. */
  warmup: number;
  unit: 'ops/s' | 'MB/s';
}


export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const rounds = opts.quick ? 1 : 3;
  const cases: Case[] = [
    { name: '4 KiB', size: 4 * KiB, count: opts.quick ? 400 : 2000, concurrency: 16, warmup: 200, unit: 'ops/s' },
    { name: '64 MiB', size: 64 * MiB, count: opts.quick ? 4 : 8, concurrency: 2, warmup: 2, unit: 'MB/s' },
  ];
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-s3-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-s3-data-'));
  const rgw = await startS3Server({ memstoreBytes: 6 * 1024 ** 3 });
  try {
    await transpileForBench(root, buildDir);
    const s3Port = await freePort();
    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, { GRANARY_S3_PORT: String(s3Port), GRANARY_S3_HOST: '127.0.0.1' }));
    const granaryS3 = new S3Client({
      endpoint: `http://127.0.0.1:${s3Port}`,
      region: 'cn-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: AK, secretAccessKey: SK },
    });
    const rgwClient = rgw.client();
    try {
      const targets = [s3Target('Granary S3 API', granaryS3, BUCKET), s3Target('radosgw', rgwClient, await rgw.createBucket()), kodoTarget(server.port)];
      const figures: Record<string, unknown> = {};
      const rows: string[][] = [];
      for (const c of cases) {
        const body = randomBytes(c.size);
        const rate = (seconds: number): number => (c.unit === 'ops/s' ? c.count / seconds : (c.count * c.size) / 1e6 / seconds);
        const prefix = `${c.name.replace(' ', '')}/`;
        // Warm-up, untimed: every target's first requests of this size (JIT, connections, buffers) are not measured.
        for (const t of targets) {
          await timedPool(c.warmup, c.concurrency, async (i) => t.put(`${prefix}warm-${i}`, body));
          await timedPool(c.warmup, c.concurrency, async (i) => void (await t.get(`${prefix}warm-${i}`)));
        }
        for (const op of ['PUT', 'GET'] as const) {
          const got: number[][] = targets.map(() => []);
          // Rounds rotate the order of the targets (A B C, B C A, C A B): none is always first or last.
          for (let round = 0; round < rounds; round++) {
            for (let k = 0; k < targets.length; k++) {
              const ti = (k + round) % targets.length;
              const t = targets[ti]!;
              const seconds = await timedPool(c.count, c.concurrency, async (i) => {
                if (op === 'PUT') await t.put(`${prefix}${i}`, body);
                else {
                  const n = await t.get(`${prefix}${i}`);
                  if (n !== c.size) throw new Error(`${t.name} GET ${prefix}${i}: ${n} bytes, expected ${c.size}`);
                }
              });
              got[ti]!.push(rate(seconds));
              log(`round ${round + 1} ${t.name}: ${op} ${c.count} × ${c.name}, ${c.concurrency} in flight: ${fmt(rate(seconds), 1)} ${c.unit}`);
            }
          }
          const [g = 0, r = 0, k = 0] = got.map(median);
          targets.forEach((t, ti) => {
            figures[`${t.name} ${op} ${c.name} ${c.unit}`] = median(got[ti]!);
            figures[`${t.name} ${op} ${c.name} ${c.unit} rounds`] = got[ti]!.map((x) => Math.round(x * 10) / 10);
          });
          rows.push([`${op} ${c.name} (${c.count}, ${c.concurrency} in flight)`, c.unit, fmt(g, 1), fmt(r, 1), fmt(k, 1), `${(g / r).toFixed(2)}×`, `${(g / k).toFixed(2)}×`]);
        }
      }
      log(table(['case', 'unit', 'Granary S3', 'radosgw', 'Granary Kodo', 'S3 / radosgw', 'S3 / Kodo'], rows));
      return figures;
    } finally {
      granaryS3.destroy();
      rgwClient.destroy();
      await server.stop();
    }
  } finally {
    await rgw.stop();
    await Promise.all([buildDir, dataDir].map((d) => rm(d, { recursive: true, force: true })));
  }
}

await runIfMain(import.meta.url, run);
