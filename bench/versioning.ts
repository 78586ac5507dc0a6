/**
 * Bench of bucket versioning (docs/reference/versioning.md): PUT and GET of 4 KiB objects through the AWS SDK (16 in
 * flight) against three targets in the same run — (a) `main`'s Granary (the branch point, built from `git archive
 * <ref>`) on an unversioned bucket, (b) this tree's Granary on an unversioned bucket, (c) this tree's Granary on a
 * versioned bucket (every PUT of a round overwrites the last round's keys: one more version each). Warm-up untimed;
 * rounds rotate the order of the targets; figures are each target's median round in ops/s, with the ratios b/a
 * (unversioned cost of the change) and c/b (versioned vs unversioned).
 *
 * Standalone: `npx tsx bench/versioning.ts [--quick] [--ref=main]`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, GetObjectCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { transpileForBench } from './lib/build.js';
import { startServer, type ServerChild } from './lib/child.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { fmt, KiB } from './lib/table.js';
import { median, timedPool } from './lib/stats.js';

const AK = 'bench-ak';
const SK = 'bench-sk';


/** A free port for the S3 listener: the OS picks one (listen on 0, close). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}


interface Target {
  name: string;
  client: S3Client;
  bucket: string;
}

/** Starts a Granary from `buildDir` with its S3 listener; answers its client. */
async function granary(buildDir: string, dataDir: string): Promise<{ server: ServerChild; client: S3Client }> {
  const port = await freePort();
  const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: 'plain' }, { GRANARY_S3_PORT: String(port), GRANARY_S3_HOST: '127.0.0.1', GRANARY_CONSOLE_PORT: '0' }));
  const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: 'cn-east-1', forcePathStyle: true, credentials: { accessKeyId: AK, secretAccessKey: SK } });
  return { server, client };
}

export async function run(opts: { quick: boolean; log: (line: string) => void; argv?: string[] }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const ref = opts.argv?.find((a) => a.startsWith('--ref='))?.slice('--ref='.length) ?? 'main';
  const rounds = opts.quick ? 3 : 5;
  const count = opts.quick ? 500 : 2000;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const tmp = await mkdtemp(join(os.tmpdir(), 'granary-bench-versioning-'));
  const children: ServerChild[] = [];
  try {
    // The reference tree, from git (read-only), sharing this tree's node_modules.
    const refRoot = join(tmp, 'ref-src');
    await mkdir(refRoot);
    execFileSync('bash', ['-c', `git -C "${root}" archive "${ref}" src bench | tar -x -C "${refRoot}"`]);
    await symlink(join(root, 'node_modules'), join(refRoot, 'node_modules'), 'dir');
    await transpileForBench(refRoot, join(tmp, 'ref-build'));
    await transpileForBench(root, join(tmp, 'build'));
    const a = await granary(join(tmp, 'ref-build'), join(tmp, 'ref-data'));
    const b = await granary(join(tmp, 'build'), join(tmp, 'data'));
    children.push(a.server, b.server);
    await b.client.send(new CreateBucketCommand({ Bucket: 'versioned' }));
    await b.client.send(new PutBucketVersioningCommand({ Bucket: 'versioned', VersioningConfiguration: { Status: 'Enabled' } }));
    const targets: Target[] = [
      { name: `${ref} unversioned`, client: a.client, bucket: 'plain' },
      { name: 'branch unversioned', client: b.client, bucket: 'plain' },
      { name: 'branch versioned', client: b.client, bucket: 'versioned' },
    ];
    const body = randomBytes(4 * KiB);
    const put = (t: Target, key: string): Promise<unknown> => t.client.send(new PutObjectCommand({ Bucket: t.bucket, Key: key, Body: body }));
    const get = async (t: Target, key: string): Promise<void> => {
      const r = await t.client.send(new GetObjectCommand({ Bucket: t.bucket, Key: key }));
      for await (const _ of r.Body as Readable) void _;
    };
    for (const t of targets) {
      await timedPool(300, 16, async (i) => void (await put(t, `k${i}`)));
      await timedPool(300, 16, (i) => get(t, `k${i}`));
    }
    const figures: Record<string, unknown> = {};
    for (const op of ['PUT', 'GET'] as const) {
      const got: number[][] = targets.map(() => []);
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < targets.length; k++) {
          const ti = (k + round) % targets.length;
          const t = targets[ti]!;
          const seconds = await timedPool(count, 16, async (i) => (op === 'PUT' ? void (await put(t, `k${i}`)) : get(t, `k${i}`)));
          got[ti]!.push(count / seconds);
          log(`round ${round + 1} ${t.name}: ${op} ${count} × 4 KiB: ${fmt(count / seconds, 0)} ops/s`);
        }
      }
      const [ra = 0, rb = 0, rc = 0] = got.map(median);
      figures[op] = { rounds: got, median: { [targets[0]!.name]: ra, [targets[1]!.name]: rb, [targets[2]!.name]: rc }, branchOverRef: rb / ra, versionedOverUnversioned: rc / rb };
      log(`${op} 4 KiB medians: ${ref} ${fmt(ra, 0)}, branch ${fmt(rb, 0)} (${fmt(rb / ra, 3)}×), versioned ${fmt(rc, 0)} (${fmt(rc / rb, 3)}× unversioned)`);
    }
    return figures;
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, run);
