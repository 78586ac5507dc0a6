/**
 * Bench of `mkzip` (docs/processing/files.md): N small objects (default 1,000 of 4–60 KiB, half pseudo-random,
 * half text; 200 with `--quick`) archived by one `mkzip/4` job (its index file lists every object's URL on this
 * server, read from storage) with `|saveas/` — timed from the pfop submission until prefop shows it done, so the
 * figure includes storing the archive through putObject. Baseline, in the same run: Info-ZIP `zip -q -r` of the
 * same files on disk (deflate, like Granary's archive). Rounds alternate (2; 1 with `--quick`); medians reported.
 * Throughput is source bytes (MB = 10^6 bytes) per second; peak RSS is Granary's whole process (sampled every
 * 20 ms during the job; its RSS just before is given too) and `zip`'s (`/usr/bin/time -f %M`).
 *
 * Each round also runs the same command once through executeFops over IPC (`{type: 'fop'}`, the processing alone:
 * reading, compressing and writing the temp file, without the queue and putObject), to split the job's time.
 *
 * Standalone: `npx tsx bench/mkzip.ts [--quick] [--cpu-prof]` prints the figures as JSON; `--cpu-prof` profiles Granary
 * during the job rounds only (V8's profiler started and stopped over IPC) and lists its hottest functions.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import { transpileForBench } from './lib/build.js';
import { startServer } from './lib/child.js';
import { hotFunctions } from './lib/profile.js';
import { RssSampler, rssBytes } from './lib/proc.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 'mkzip-bench';

const b64 = (s: string): string => qiniu.util.urlsafeBase64Encode(s);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Object `i`: 4–60 KiB; even ones pseudo-random (incompressible), odd ones text. */
function content(i: number): Buffer {
  const size = 4096 + ((i * 7919) % 57) * 1024;
  if (i % 2 === 1) return Buffer.from(`line ${i} of a small text object for the mkzip bench\n`.repeat(Math.ceil(size / 50))).subarray(0, size);
  const blocks: Buffer[] = [];
  for (let k = 0; k * 32 < size; k++) blocks.push(createHash('sha256').update(`${i}/${k}`).digest());
  return Buffer.concat(blocks).subarray(0, size);
}

export async function run(opts: { quick: boolean; log: (line: string) => void; cpuProf?: boolean }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const n = opts.quick ? 200 : 1000;
  const rounds = opts.quick ? 1 : Number(process.env.BENCH_ROUNDS ?? 2);
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-mkzip-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-mkzip-data-'));
  const filesDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-mkzip-files-'));
  const profDir = opts.cpuProf ? await mkdtemp(join(os.tmpdir(), 'granary-bench-mkzip-prof-')) : undefined;
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  try {
    await transpileForBench(root, buildDir);
    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, { GRANARY_CONSOLE_PORT: '0' }));
    const base = `http://127.0.0.1:${server.port}`;
    const upload = async (key: string, body: Buffer): Promise<void> => {
      const form = new FormData();
      form.set('token', new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${key}` }).uploadToken(mac));
      form.set('key', key);
      form.set('file', new Blob([body]), key);
      const r = await fetch(`${base}/`, { method: 'POST', body: form });
      if (r.status !== 200) throw new Error(`upload ${key}: ${r.status} ${await r.text()}`);
    };
    try {
      let totalBytes = 0;
      await mkdir(join(filesDir, 'objects'));
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < n) {
            const i = next++;
            const body = content(i);
            totalBytes += body.length;
            await upload(`objects/o-${i}.bin`, body);
            await writeFile(join(filesDir, 'objects', `o-${i}.bin`), body);
          }
        }),
      );
      const index = Array.from({ length: n }, (_, i) => `/url/${b64(`${base}/${BUCKET}/objects/o-${i}.bin`)}`).join('\n');
      await upload('index.txt', Buffer.from(index));
      log(`mkzip: ${n} objects, ${(totalBytes / 1e6).toFixed(1)} MB`);

      const jobRound = async (round: number): Promise<{ seconds: number; peakRssBytes: number; idleRssBytes: number; zipBytes: number }> => {
        const idle = rssBytes(server.pid) ?? 0;
        if (profDir) await server.ask({ type: 'profile', on: true });
        const sampler = new RssSampler(server.pid, 20).start();
        const t0 = performance.now();
        const fops = `mkzip/4|saveas/${b64(`${BUCKET}:archive-${round}.zip`)}`;
        const url = `${base}/pfop/`;
        const form = new URLSearchParams({ bucket: BUCKET, key: 'index.txt', fops, force: '1' }).toString();
        const sub = await fetch(url, { method: 'POST', headers: { authorization: qiniu.util.generateAccessToken(mac, url, form), 'content-type': 'application/x-www-form-urlencoded' }, body: form });
        const id = ((await sub.json()) as { persistentId: string }).persistentId;
        for (;;) {
          const rec = (await (await fetch(`${base}/status/get/prefop?id=${id}`)).json()) as { code: number };
          if (rec.code === 0) break;
          if (rec.code !== 1 && rec.code !== 2) throw new Error(`mkzip job failed: ${JSON.stringify(rec)}`);
          await delay(10);
        }
        const seconds = (performance.now() - t0) / 1000;
        if (profDir) await server.ask({ type: 'profile', on: false, path: join(profDir, `job-${round}.cpuprofile`) });
        const zip = await fetch(`${base}/${BUCKET}/archive-${round}.zip`, { method: 'HEAD' });
        return { seconds, peakRssBytes: sampler.stop().peakBytes, idleRssBytes: idle, zipBytes: Number(zip.headers.get('content-length')) };
      };
      // The same command through executeFops (processing alone: no queue, no putObject), over IPC.
      const fopRound = async (): Promise<number> => {
        const r = await server.ask<{ type: 'fop'; ms?: number; error?: string }>({ type: 'fop', bucket: BUCKET, key: 'index.txt', fops: 'mkzip/4' });
        if (r.error !== undefined || r.ms === undefined) throw new Error(`mkzip fop failed: ${r.error ?? 'no time'}`);
        return r.ms / 1000;
      };
      const zipRound = async (round: number): Promise<{ seconds: number; zipBytes: number }> => {
        const out = join(filesDir, `baseline-${round}.zip`);
        const t0 = performance.now();
        execFileSync('zip', ['-q', '-r', out, 'objects'], { cwd: filesDir, stdio: 'ignore' });
        const seconds = (performance.now() - t0) / 1000;
        return { seconds, zipBytes: (await stat(out)).size };
      };
      // zip's peak RSS (KiB) from /usr/bin/time, in a run of its own (time writes it on stderr).
      const zipPeakKiB = (): number => {
        const r = execFileSync('sh', ['-c', `/usr/bin/time -f %M zip -q -r ${join(filesDir, 'peak.zip')} objects 2>&1 >/dev/null; rm -f ${join(filesDir, 'peak.zip')}`], { cwd: filesDir, encoding: 'utf8' });
        return Number(r.trim().split('\n').pop());
      };

      const jobSeconds: number[] = [];
      const fopSeconds: number[] = [];
      const zipSeconds: number[] = [];
      let peak = 0;
      let idle = 0;
      let granaryZip = 0;
      let baselineZip = 0;
      for (let r = 0; r < rounds; r++) {
        const j = await jobRound(r);
        const z = await zipRound(r);
        const f = await fopRound();
        jobSeconds.push(j.seconds);
        fopSeconds.push(f);
        zipSeconds.push(z.seconds);
        peak = Math.max(peak, j.peakRssBytes);
        idle = j.idleRssBytes;
        granaryZip = j.zipBytes;
        baselineZip = z.zipBytes;
        log(`mkzip round ${r + 1}: Granary ${j.seconds.toFixed(2)} s (${(totalBytes / 1e6 / j.seconds).toFixed(1)} MB/s; processing alone ${f.toFixed(2)} s), zip ${z.seconds.toFixed(2)} s (${(totalBytes / 1e6 / z.seconds).toFixed(1)} MB/s)`);
      }
      const zipPeak = zipPeakKiB() * 1024;
      const granaryMBps = totalBytes / 1e6 / median(jobSeconds);
      const zipMBps = totalBytes / 1e6 / median(zipSeconds);
      return {
        objects: n,
        sourceMB: Number((totalBytes / 1e6).toFixed(1)),
        rounds,
        granaryMBps: Number(granaryMBps.toFixed(1)),
        zipMBps: Number(zipMBps.toFixed(1)),
        ratio: Number((granaryMBps / zipMBps).toFixed(2)),
        granaryArchiveMB: Number((granaryZip / 1e6).toFixed(2)),
        zipArchiveMB: Number((baselineZip / 1e6).toFixed(2)),
        granaryPeakRssMB: Number((peak / 1024 / 1024).toFixed(1)),
        granaryIdleRssMB: Number((idle / 1024 / 1024).toFixed(1)),
        zipPeakRssMB: Number((zipPeak / 1024 / 1024).toFixed(1)),
        granaryRoundSeconds: jobSeconds.map((s) => Number(s.toFixed(3))),
        granaryProcessingSeconds: fopSeconds.map((s) => Number(s.toFixed(3))),
        zipRoundSeconds: zipSeconds.map((s) => Number(s.toFixed(3))),
      };
    } finally {
      await server.stop();
      if (profDir) {
        for (const f of (await readdir(profDir)).filter((n) => n.endsWith('.cpuprofile'))) {
          const { busyPercent, hot } = await hotFunctions(join(profDir, f), 30);
          log(`Granary CPU profile ${join(profDir, f)} (main thread): busy ${busyPercent.toFixed(1)}%`);
          for (const h of hot) log(`  ${h.selfPercent.toFixed(1).padStart(5)}% self ${h.totalPercent.toFixed(1).padStart(5)}% total  ${h.name}  ${h.where}`);
        }
      }
    }
  } finally {
    await rm(buildDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
    await rm(filesDir, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, (o) => run({ ...o, cpuProf: o.argv.includes('--cpu-prof') }));
