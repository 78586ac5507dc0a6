/**
 * HLS packaging bench: `avthumb/m3u8/segtime/10/vcodec/libx264/s/320x240` of the 60 s fixture through Granary's
 * real path — `POST /pfop/` (QBox-signed, force=1, saveas), the job worker, ffmpeg's hls muxer into the run's temp
 * dir, every segment and the playlist stored through putObject — timed by the bench from the submission until
 * prefop (polled every 100 ms) says code 0, against bare ffmpeg with the argv Granary builds
 * (src/fops/video/hls-args.ts) writing the same playlist and segments to a local dir, in the same run, rounds
 * alternating. Goal: speed (bare time / Granary time) ≥ 0.9×.
 *
 * CPU seconds (user + system) of each side, which a loaded machine disturbs far less than wall time: Granary's
 * server process plus its reaped children (the job's ffmpeg) over the pfop, and bare ffmpeg's from `/usr/bin/time`.
 * Peak RSS: Granary's server process (sampled every 100 ms) and, apart, its ffmpeg child (the largest RSS of any
 * descendant); bare ffmpeg's from `/usr/bin/time -f %M` (its maximum resident set). Both sides use 2 ffmpeg threads.
 * Standalone: `npx tsx bench/hls.ts [--quick]` prints the figures as JSON.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import qiniu from 'qiniu';
import { urlsafeB64Encode } from '../src/auth/base64.js';
import { fontFile } from '../src/fops/video/avthumb.js';
import { hlsArgs, parseHls } from '../src/fops/video/hls-args.js';
import { transpileForBench } from './lib/build.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { startServer } from './lib/child.js';
import { cpuSeconds, processTree, reapedChildrenCpuSeconds, rssBytes, RssSampler } from './lib/proc.js';
import { msSince, summarize } from './lib/stats.js';

const AK = 'bench-hls-ak';
const SK = 'bench-hls-sk';
const BUCKET = 'bench-hls';
const KEY = 'bunny.mp4';
const THREADS = 2;
const VIDEO = process.env.GRANARY_VIDEO_FIXTURE ?? join(process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images', '..', 'video', 'big_buck_bunny.mp4');
const HLS = 'avthumb/m3u8/segtime/10/vcodec/libx264/s/320x240';
/** 100 ms rather than video.ts's 20: a job of tens of seconds would otherwise spend whole CPU seconds answering polls. */
const PREFOP_POLL_MS = 100;
const exec = promisify(execFile);

/** Peak RSS of any descendant of `pid` (the ffmpeg a job runs), sampled every `intervalMs`. */
class ChildRssSampler {
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly pid: number, private readonly intervalMs = 100) {}
  start(): this {
    this.timer = setInterval(() => {
      for (const p of processTree([this.pid])) if (p !== this.pid) this.peak = Math.max(this.peak, rssBytes(p) ?? 0);
    }, this.intervalMs);
    return this;
  }
  stop(): number {
    clearInterval(this.timer);
    return this.peak;
  }
}

/** `POST /pfop/` of `fops` with force, then prefop until code 0; ms from submission. */
async function pfopAndWait(base: string, mac: qiniu.auth.digest.Mac, fops: string): Promise<number> {
  const form = new URLSearchParams({ bucket: BUCKET, key: KEY, fops, force: '1' }).toString();
  const url = `${base}/pfop/`;
  const t = process.hrtime.bigint();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: qiniu.util.generateAccessToken(mac, url, form), 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const sub = (await res.json()) as { persistentId?: string };
  if (res.status !== 200 || !sub.persistentId) throw new Error(`pfop answered ${res.status}: ${JSON.stringify(sub)}`);
  for (;;) {
    const rec = (await (await fetch(`${base}/status/get/prefop?id=${sub.persistentId}`)).json()) as { code: number };
    if (rec.code === 0) return msSince(t);
    if (rec.code !== 1 && rec.code !== 2) throw new Error(`pfop job ended with ${JSON.stringify(rec)}`);
    if (msSince(t) > 600_000) throw new Error('pfop job did not finish in 10 minutes');
    await delay(PREFOP_POLL_MS);
  }
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { quick, log } = opts;
  const rounds = quick ? 1 : 3;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-hls-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-hls-data-'));
  const outDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-hls-out-'));
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    await transpileForBench(root, buildDir);
    server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, { GRANARY_VIDEO_THREADS: String(THREADS) }));
    const s = server;
    const base = `http://127.0.0.1:${s.port}`;
    const host = `127.0.0.1:${s.port}`;
    const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const uploader = new qiniu.form_up.FormUploader(new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions));
    const token = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${KEY}` }).uploadToken(mac);
    const up = await uploader.put(token, KEY, await readFile(VIDEO), new qiniu.form_up.PutExtra());
    if (up.resp.statusCode !== 200) throw new Error(`upload failed: ${up.resp.statusCode}`);

    log(`hls: ${HLS} of the 60 s video via POST /pfop/ (submission → prefop code 0, segments and playlist stored) vs bare ffmpeg with the same argv, ${rounds} round(s), alternating`);
    const fops = `${HLS}|saveas/${urlsafeB64Encode(`${BUCKET}:bunny.m3u8`)}`;
    const params = parseHls(HLS.split('/').slice(1));
    const serverRss = new RssSampler(s.pid, 100).start();
    const childRss = new ChildRssSampler(s.pid).start();
    const granaryMs: number[] = [];
    const bareMs: number[] = [];
    const granaryCpu: number[] = [];
    const granaryFfmpegCpu: number[] = [];
    const bareCpu: number[] = [];
    let bareRssKB = 0;
    let bareSegments = 0;
    const sides: Array<() => Promise<void>> = [
      async () => {
        // Server process + its reaped children (the job's ffmpeg), user + system.
        const server0 = cpuSeconds(s.pid);
        const children0 = reapedChildrenCpuSeconds(s.pid);
        granaryMs.push(await pfopAndWait(base, mac, fops));
        const children = reapedChildrenCpuSeconds(s.pid) - children0;
        granaryFfmpegCpu.push(children);
        granaryCpu.push(cpuSeconds(s.pid) - server0 + children);
      },
      async () => {
        const dir = join(outDir, 'bare');
        await rm(dir, { recursive: true, force: true });
        await mkdir(dir);
        const args = hlsArgs(params, { input: VIDEO, output: join(dir, 'index.m3u8'), font: fontFile(undefined), segmentTemplate: join(dir, '%06d.ts') }, THREADS);
        const t = process.hrtime.bigint();
        const { stderr } = await exec('/usr/bin/time', ['-f', '%M %U %S', 'ffmpeg', ...args], { maxBuffer: 1024 * 1024 });
        bareMs.push(msSince(t));
        const [rssKB = 0, user = 0, system = 0] = (stderr.trim().split('\n').pop() ?? '').split(' ').map(Number);
        bareRssKB = Math.max(bareRssKB, rssKB);
        bareCpu.push(user + system);
        bareSegments = (await readdir(dir)).filter((f) => f.endsWith('.ts')).length;
      },
    ];
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < sides.length; k++) await (sides[(i + k) % sides.length] as () => Promise<void>)();
      log(`  round ${i + 1}: pfop ${round1(granaryMs[i] as number)} ms (${round1(granaryCpu[i] as number)} CPU s, its ffmpeg ${round1(granaryFfmpegCpu[i] as number)}), bare ffmpeg ${round1(bareMs[i] as number)} ms (${round1(bareCpu[i] as number)} CPU s)`);
    }
    const serverPeak = serverRss.stop().peakBytes;
    const ffmpegPeak = childRss.stop();
    const playlist = await (await fetch(`${base}/${BUCKET}/bunny.m3u8`)).text();
    const segments = playlist.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    for (const u of segments) if ((await fetch(u, { method: 'HEAD' })).status !== 200) throw new Error(`segment ${u} is not served`);
    const g = summarize(granaryMs).p50;
    const b = summarize(bareMs).p50;
    const figures = {
      granaryMs: round1(g),
      ffmpegMs: round1(b),
      speed: round3(b / g),
      targetSpeed: 0.9,
      granaryCpuSeconds: round1(summarize(granaryCpu).p50),
      granaryFfmpegCpuSeconds: round1(summarize(granaryFfmpegCpu).p50),
      ffmpegCpuSeconds: round1(summarize(bareCpu).p50),
      cpuRatio: round3(summarize(granaryCpu).p50 / summarize(bareCpu).p50),
      rounds,
      segments: segments.length,
      bareSegments,
      granaryServerPeakRssMB: round1(serverPeak / 1e6),
      granaryFfmpegPeakRssMB: round1(ffmpegPeak / 1e6),
      bareFfmpegPeakRssMB: round1((bareRssKB * 1024) / 1e6),
      ffmpegThreads: THREADS,
      path: 'POST /pfop/ (force, saveas) → job worker → ffmpeg -f hls → putObject per segment and the playlist; timed from submission to prefop code 0',
    };
    log(`  pfop ${figures.granaryMs} ms, bare ffmpeg ${figures.ffmpegMs} ms, speed ${figures.speed}× (goal ≥ 0.9×), ${figures.segments} segments`);
    log(`  CPU (user + system, p50): Granary server and its ffmpeg ${figures.granaryCpuSeconds} s (the ffmpeg alone ${figures.granaryFfmpegCpuSeconds} s), bare ffmpeg ${figures.ffmpegCpuSeconds} s, ratio ${figures.cpuRatio}×`);
    log(`  peak RSS: Granary server ${figures.granaryServerPeakRssMB} MB + its ffmpeg ${figures.granaryFfmpegPeakRssMB} MB; bare ffmpeg ${figures.bareFfmpegPeakRssMB} MB`);
    return figures;
  } finally {
    await server?.stop();
    for (const d of [buildDir, dataDir, outDir]) await rm(d, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, run);
