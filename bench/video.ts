/**
 * Video fop bench (issue 7): Granary in a child process (bench/video-server.ts, transpiled like bench/run.ts's
 * servers) against bare ffmpeg with the same arguments, in the same run, rounds alternating.
 *
 * - vframe: `GET /<bucket>/bunny.mp4?vframe/jpg/offset/5` on the download URL, one at a time; the baseline is
 *   ffmpeg run with the argv Granary builds (src/fops/video/vframe.ts) on the fixture file. p50 of each.
 * - avthumb: `avthumb/mp4/s/320x180` on the 60 s fixture, run in the server process through executeFops (the
 *   entry point persistent jobs use; the job engine's pfop route is not on this branch), timed inside the
 *   server; the baseline is ffmpeg with the argv Granary builds (src/fops/video/avthumb-args.ts). Target ≤ 1.1×.
 *
 * Both sides use GRANARY_VIDEO_THREADS (default 2) ffmpeg threads. Peak RSS of the server is sampled.
 * Standalone: `npx tsx bench/video.ts [--quick]` prints the figures as JSON.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import qiniu from 'qiniu';
import { avthumbArgs, parseAvthumb } from '../src/fops/video/avthumb-args.js';
import { fontFile } from '../src/fops/video/avthumb.js';
import { parseVframe, vframeArgs } from '../src/fops/video/vframe.js';
import { transpileForBench } from './lib/build.js';
import { startServer, type ServerChild } from './lib/child.js';
import { RssSampler } from './lib/proc.js';
import { msSince, summarize } from './lib/stats.js';

const AK = 'bench-video-ak';
const SK = 'bench-video-sk';
const BUCKET = 'bench-video';
const KEY = 'bunny.mp4';
const THREADS = 2;
const VIDEO = process.env.GRANARY_VIDEO_FIXTURE ?? join(process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images', '..', 'video', 'big_buck_bunny.mp4');
const VFRAME = 'vframe/jpg/offset/5';
const AVTHUMB = 'avthumb/mp4/s/320x180';
const exec = promisify(execFile);

/** Milliseconds of one bare ffmpeg run. */
async function bareFfmpeg(args: string[]): Promise<number> {
  const t = process.hrtime.bigint();
  await exec('ffmpeg', args, { maxBuffer: 1024 * 1024 });
  return msSince(t);
}

/** Asks the server child to run a persistent pipeline through executeFops; resolves with its in-server time. */
function serverFop(s: ServerChild, fops: string): Promise<{ ms: number; size: number }> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: { type?: string; ms?: number; size?: number; error?: string }): void => {
      if (msg.type !== 'fop') return;
      s.proc.off('message', onMessage);
      if (msg.error !== undefined || msg.ms === undefined) reject(new Error(`${fops}: ${msg.error ?? 'no answer'}`));
      else resolve({ ms: msg.ms, size: msg.size ?? 0 });
    };
    s.proc.on('message', onMessage);
    s.proc.send({ type: 'fop', bucket: BUCKET, key: KEY, fops });
  });
}

const median = (xs: number[]): number => summarize(xs).p50;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { quick, log } = opts;
  const vframeRuns = quick ? 5 : 11;
  const avthumbRounds = quick ? 1 : 3;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-data-'));
  const outDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-out-'));
  let server: ServerChild | undefined;
  try {
    await transpileForBench(root, buildDir);
    server = await startServer(buildDir, 'video-server', {
      GRANARY_PORT: '0',
      GRANARY_HOST: '127.0.0.1',
      GRANARY_DATA_DIR: dataDir,
      GRANARY_ACCESS_KEY: AK,
      GRANARY_SECRET_KEY: SK,
      GRANARY_LOG_LEVEL: 'warn',
      GRANARY_VIDEO_THREADS: String(THREADS),
      BENCH_BUCKET: BUCKET,
    });
    const s = server;
    const host = `127.0.0.1:${s.port}`;
    const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
    const uploader = new qiniu.form_up.FormUploader(new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions));
    const token = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${KEY}` }).uploadToken(new qiniu.auth.digest.Mac(AK, SK));
    const up = await uploader.put(token, KEY, await readFile(VIDEO), new qiniu.form_up.PutExtra());
    if (up.resp.statusCode !== 200) throw new Error(`upload failed: ${up.resp.statusCode}`);
    const sampler = new RssSampler(s.pid, 100).start();

    log(`vframe: ${VFRAME} on the download URL vs bare ffmpeg with the same argv, ${vframeRuns} runs each, alternating`);
    const url = `http://${host}/${BUCKET}/${KEY}?${VFRAME}`;
    const bareVframe = vframeArgs(parseVframe(VFRAME.split('/').slice(1)), VIDEO, join(outDir, 'frame.jpg'), THREADS);
    const granaryMs: number[] = [];
    const bareMs: number[] = [];
    for (let i = -1; i < vframeRuns; i++) {
      const t = process.hrtime.bigint();
      const res = await fetch(url);
      const body = Buffer.from(await res.arrayBuffer());
      const g = msSince(t);
      if (res.status !== 200 || body.length === 0) throw new Error(`vframe answered ${res.status}: ${body.toString().slice(0, 200)}`);
      await rm(join(outDir, 'frame.jpg'), { force: true });
      const b = await bareFfmpeg(bareVframe);
      if (i >= 0) {
        granaryMs.push(g);
        bareMs.push(b);
      }
    }
    const vframe = { granaryP50Ms: round1(median(granaryMs)), ffmpegP50Ms: round1(median(bareMs)), ratio: round3(median(granaryMs) / median(bareMs)), runs: vframeRuns };
    log(`  granary p50 ${vframe.granaryP50Ms} ms, bare ffmpeg p50 ${vframe.ffmpegP50Ms} ms, ratio ${vframe.ratio}×`);

    log(`avthumb: ${AVTHUMB} of the 60 s video via executeFops in the server vs bare ffmpeg with the same argv, ${avthumbRounds} round(s), alternating`);
    const bareOut = join(outDir, 'thumb.mp4');
    const bareAvthumb = avthumbArgs(parseAvthumb(AVTHUMB.split('/').slice(1)), { input: VIDEO, output: bareOut, font: fontFile(undefined) }, THREADS);
    const gThumb: number[] = [];
    const bThumb: number[] = [];
    let outputBytes = 0;
    const bare = async (): Promise<void> => {
      await rm(bareOut, { force: true });
      bThumb.push(await bareFfmpeg(bareAvthumb));
    };
    for (let i = 0; i < avthumbRounds; i++) {
      // The order alternates so that drift in background load does not favour one side.
      if (i % 2 === 1) await bare();
      const g = await serverFop(s, AVTHUMB);
      outputBytes = g.size;
      gThumb.push(g.ms);
      if (i % 2 === 0) await bare();
      log(`  round ${i + 1}: granary ${round1(g.ms)} ms, bare ffmpeg ${round1(bThumb[i] as number)} ms`);
    }
    const avthumb = {
      granaryMs: round1(median(gThumb)),
      ffmpegMs: round1(median(bThumb)),
      ratio: round3(median(gThumb) / median(bThumb)),
      targetRatio: 1.1,
      rounds: avthumbRounds,
      outputBytes,
      path: 'executeFops in the server process (IPC request), timed inside the server',
    };
    log(`  granary ${avthumb.granaryMs} ms, bare ffmpeg ${avthumb.ffmpegMs} ms, ratio ${avthumb.ratio}× (target ≤ 1.1×)`);
    const peakRssMB = round1(sampler.stop().peakBytes / 1e6);
    log(`  granary peak RSS ${peakRssMB} MB`);
    return { vframe, avthumb, peakRssMB, ffmpegThreads: THREADS, cpus: os.cpus().length };
  } finally {
    await server?.stop();
    for (const d of [buildDir, dataDir, outDir]) await rm(d, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await run({ quick: process.argv.includes('--quick'), log: (line) => console.log(line) });
  console.log(JSON.stringify(figures, null, 2));
}
