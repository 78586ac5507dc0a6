/**
 * Bench of the persistent job engine (issue 7): jobs per second for N small image jobs (default 200; 40 with
 * `--quick`), each an `imageView2` thumbnail of a 640×480 JPEG with `|saveas/` (force), submitted with `POST /pfop/`
 * alternately to two pipelines of concurrency 2, timed from the first submission until the last job is seen done
 * through prefop (jobs are polled in submission order, one request at a time, 10 ms apart while one is not done). Baseline, in the same run and
 * process: the same N thumbnails made by the same fops synchronously on download URLs (`GET /<bucket>/<key>?
 * imageView2/...`) with the same total concurrency (4). Each job also stores its output (digests, fsync, SQLite
 * commit), so the ratio shows what the queue plus storing cost over processing alone (the fop result cache is off,
 * so the baseline computes every thumbnail). Rounds alternate between
 * the two (3 rounds, 1 with `--quick`); medians are reported. Granary's peak RSS is sampled during the job rounds.
 *
 * Standalone: `npx tsx bench/jobs.ts [--quick]` prints the figures as JSON.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import { transpileForBench } from './lib/build.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { startServer } from './lib/child.js';
import { RssSampler } from './lib/proc.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 'jobs-bench';
const PIPELINES = ['bench-a', 'bench-b'];
const PIPELINE_CONCURRENCY = 2;
const FIXTURE = process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images';

const b64 = (s: string): string => qiniu.util.urlsafeBase64Encode(s);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const n = opts.quick ? 40 : 200;
  const rounds = opts.quick ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-jobs-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-jobs-data-'));
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  try {
    await transpileForBench(root, buildDir);
    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, { GRANARY_FOP_CACHE_SIZE: '0' }));
    const base = `http://127.0.0.1:${server.port}`;
    const signed = async (path: string, form?: string): Promise<{ status: number; json: unknown }> => {
      const url = `${base}${path}`;
      const headers: Record<string, string> = { authorization: qiniu.util.generateAccessToken(mac, url, form) };
      if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
      const res = await fetch(url, { method: 'POST', headers, ...(form !== undefined ? { body: form } : {}) });
      return { status: res.status, json: await res.json().catch(() => undefined) };
    };
    try {
      for (const p of PIPELINES) {
        const r = await signed(`/pipelines/${p}?concurrency=${PIPELINE_CONCURRENCY}`);
        if (r.status !== 200) throw new Error(`pipeline ${p}: ${r.status} ${JSON.stringify(r.json)}`);
      }
      const photo = await readFile(join(FIXTURE, 'gps_DSCN0010.jpg'));
      const token = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:src.jpg` }).uploadToken(mac);
      const form = new FormData();
      form.set('token', token);
      form.set('key', 'src.jpg');
      form.set('file', new Blob([photo]), 'src.jpg');
      const up = await fetch(`${base}/`, { method: 'POST', body: form });
      if (up.status !== 200) throw new Error(`upload: ${up.status} ${await up.text()}`);

      const fop = (i: number): string => `imageView2/2/w/${100 + (i % 50)}`;
      const jobRound = async (round: number): Promise<{ seconds: number; peakRssBytes: number }> => {
        const sampler = new RssSampler(server.pid, 50).start();
        const t0 = performance.now();
        const ids: string[] = new Array<string>(n);
        await pool(
          Array.from({ length: n }, (_, i) => i),
          8,
          async (i) => {
            const fops = `${fop(i)}|saveas/${b64(`${BUCKET}:thumb-${round}-${i}.jpg`)}`;
            const body = new URLSearchParams({ bucket: BUCKET, key: 'src.jpg', fops, pipeline: PIPELINES[i % 2]!, force: '1' }).toString();
            const r = await signed('/pfop/', body);
            if (r.status !== 200) throw new Error(`pfop: ${r.status} ${JSON.stringify(r.json)}`);
            ids[i] = (r.json as { persistentId: string }).persistentId;
          },
        );
        const submitted = (performance.now() - t0) / 1000;
        if (process.env.BENCH_DEBUG) log(`  submitted in ${submitted.toFixed(2)} s`);
        for (const id of ids) {
          for (;;) {
            const res = await fetch(`${base}/status/get/prefop?id=${id}`);
            const rec = (await res.json()) as { code: number; items: Array<{ error: string }> };
            if (rec.code === 0) break;
            if (rec.code !== 1 && rec.code !== 2) throw new Error(`job ${id} failed: ${JSON.stringify(rec)}`);
            await delay(10);
          }
        }
        const seconds = (performance.now() - t0) / 1000;
        return { seconds, peakRssBytes: sampler.stop().peakBytes };
      };
      const urlRound = async (): Promise<number> => {
        const t0 = performance.now();
        await pool(
          Array.from({ length: n }, (_, i) => i),
          PIPELINES.length * PIPELINE_CONCURRENCY,
          async (i) => {
            const res = await fetch(`${base}/${BUCKET}/src.jpg?${fop(i)}`);
            const body = Buffer.from(await res.arrayBuffer());
            if (res.status !== 200 || body.length === 0) throw new Error(`download fop: ${res.status}`);
          },
        );
        return (performance.now() - t0) / 1000;
      };

      await urlRound(); // warm-up (libvips, code paths)
      const jobSeconds: number[] = [];
      const urlSeconds: number[] = [];
      let peak = 0;
      for (let r = 0; r < rounds; r++) {
        const j = await jobRound(r);
        jobSeconds.push(j.seconds);
        peak = Math.max(peak, j.peakRssBytes);
        const u = await urlRound();
        urlSeconds.push(u);
        log(`jobs round ${r + 1}: ${n} jobs in ${j.seconds.toFixed(2)} s (${(n / j.seconds).toFixed(1)}/s); download-URL fops ${u.toFixed(2)} s (${(n / u).toFixed(1)}/s)`);
      }
      const jobsPerSecond = n / median(jobSeconds);
      const baselineImagesPerSecond = n / median(urlSeconds);
      return {
        jobs: n,
        pipelines: PIPELINES.length,
        pipelineConcurrency: PIPELINE_CONCURRENCY,
        rounds,
        jobsPerSecond: Number(jobsPerSecond.toFixed(1)),
        baselineImagesPerSecond: Number(baselineImagesPerSecond.toFixed(1)),
        jobsVsBaselineRatio: Number((jobsPerSecond / baselineImagesPerSecond).toFixed(2)),
        jobRoundSeconds: jobSeconds.map((s) => Number(s.toFixed(3))),
        baselineRoundSeconds: urlSeconds.map((s) => Number(s.toFixed(3))),
        peakRssMB: Number((peak / 1024 / 1024).toFixed(1)),
      };
    } finally {
      await server.stop();
    }
  } finally {
    await rm(buildDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, run);
