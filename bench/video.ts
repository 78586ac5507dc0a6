/**
 * Video fop bench (issue 7): Granary in a child process (bench/granary-server.ts, transpiled like bench/run.ts's
 * servers) against bare ffmpeg with the same arguments, in the same run, rounds alternating.
 *
 * - vframe: `GET /<bucket>/bunny.mp4?vframe/jpg/offset/5` on the download URL, one at a time; the baseline is
 *   ffmpeg run with the argv Granary builds (src/fops/video/vframe.ts) on the fixture file. p50 of each.
 * - avthumb through the real path: `POST /pfop/` (QBox-signed, force=1, saveas) of `avthumb/mp4/s/320x180` on the
 *   60 s fixture, timed by the bench from the submission until prefop (polled every 20 ms) says code 0 — queueing,
 *   the job worker, ffmpeg, storing the output (digests, fsync, commit) and the polling granularity included.
 *   The baseline is ffmpeg with the argv Granary builds (src/fops/video/avthumb-args.ts). Target ≤ 1.1×.
 * - avthumb through executeFops alone (the same command run in the server process on an IPC request, timed
 *   inside the server): the processing part of the job without queue and store.
 *
 * Both sides use GRANARY_VIDEO_THREADS (default 2) ffmpeg threads. Peak RSS of the server is sampled.
 * Standalone: `npx tsx bench/video.ts [--quick]` prints the figures as JSON.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import qiniu from 'qiniu';
import { urlsafeB64Encode } from '../src/auth/base64.js';
import { avthumbArgs, parseAvthumb } from '../src/fops/video/avthumb-args.js';
import { fontFile } from '../src/fops/video/avthumb.js';
import { parseVframe, vframeArgs } from '../src/fops/video/vframe.js';
import { transpileForBench } from './lib/build.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
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
const PREFOP_POLL_MS = 20;
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

/** `POST /pfop/` (QBox) of `fops` on BUCKET:KEY with force, then prefop every PREFOP_POLL_MS until code 0; ms from submission. */
async function pfopAndWait(base: string, mac: qiniu.auth.digest.Mac, fops: string): Promise<number> {
  const form = new URLSearchParams({ bucket: BUCKET, key: KEY, fops, force: '1' }).toString();
  const url = `${base}/pfop/`;
  const t = process.hrtime.bigint();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: qiniu.util.generateAccessToken(mac, url, form), 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const sub = (await res.json()) as { persistentId?: string; error?: string };
  if (res.status !== 200 || !sub.persistentId) throw new Error(`pfop answered ${res.status}: ${JSON.stringify(sub)}`);
  for (;;) {
    const rec = (await (await fetch(`${base}/status/get/prefop?id=${sub.persistentId}`)).json()) as { code: number; items: unknown[] };
    if (rec.code === 0) return msSince(t);
    if (rec.code !== 1 && rec.code !== 2) throw new Error(`pfop job ended with ${JSON.stringify(rec)}`);
    if (msSince(t) > 600_000) throw new Error('pfop job did not finish in 10 minutes');
    await delay(PREFOP_POLL_MS);
  }
}

const median = (xs: number[]): number => summarize(xs).p50;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { quick, log } = opts;
  const vframeRuns = quick ? 5 : 11;
  const avthumbRounds = quick ? 1 : 5;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-data-'));
  const outDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-video-out-'));
  let server: ServerChild | undefined;
  try {
    await transpileForBench(root, buildDir);
    server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, { GRANARY_VIDEO_THREADS: String(THREADS), GRANARY_FOP_CACHE_SIZE: '0' }));
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

    log(`avthumb: ${AVTHUMB} of the 60 s video via POST /pfop/ (submission → prefop code 0) and via executeFops in the server, vs bare ffmpeg with the same argv, ${avthumbRounds} round(s), order rotating`);
    const bareOut = join(outDir, 'thumb.mp4');
    const bareAvthumb = avthumbArgs(parseAvthumb(AVTHUMB.split('/').slice(1)), { input: VIDEO, output: bareOut, font: fontFile(undefined) }, THREADS);
    const pfopFops = `${AVTHUMB}|saveas/${urlsafeB64Encode(`${BUCKET}:thumb.mp4`)}`;
    const base = `http://${host}`;
    const mac = new qiniu.auth.digest.Mac(AK, SK);
    const pThumb: number[] = [];
    const gThumb: number[] = [];
    const bThumb: number[] = [];
    let outputBytes = 0;
    const sides: Array<() => Promise<void>> = [
      async () => {
        pThumb.push(await pfopAndWait(base, mac, pfopFops));
      },
      async () => {
        await rm(bareOut, { force: true });
        bThumb.push(await bareFfmpeg(bareAvthumb));
      },
      async () => {
        const g = await serverFop(s, AVTHUMB);
        outputBytes = g.size;
        gThumb.push(g.ms);
      },
    ];
    for (let i = 0; i < avthumbRounds; i++) {
      // The order rotates so that drift in background load does not favour one side.
      for (let k = 0; k < sides.length; k++) await (sides[(i + k) % sides.length] as () => Promise<void>)();
      log(`  round ${i + 1}: pfop ${round1(pThumb[i] as number)} ms, executeFops ${round1(gThumb[i] as number)} ms, bare ffmpeg ${round1(bThumb[i] as number)} ms`);
    }
    const stored = await fetch(`${base}/${BUCKET}/thumb.mp4`);
    const storedBytes = (await stored.arrayBuffer()).byteLength;
    if (stored.status !== 200 || storedBytes === 0) throw new Error(`the pfop output is missing (${stored.status})`);
    const avthumbPfop = {
      granaryMs: round1(median(pThumb)),
      ffmpegMs: round1(median(bThumb)),
      ratio: round3(median(pThumb) / median(bThumb)),
      targetRatio: 1.1,
      rounds: avthumbRounds,
      outputBytes: storedBytes,
      prefopPollMs: PREFOP_POLL_MS,
      path: 'POST /pfop/ (force, saveas) → job worker → ffmpeg → putObject; timed from submission to prefop code 0',
    };
    log(`  pfop ${avthumbPfop.granaryMs} ms, bare ffmpeg ${avthumbPfop.ffmpegMs} ms, ratio ${avthumbPfop.ratio}× (target ≤ 1.1×)`);
    const avthumb = {
      granaryMs: round1(median(gThumb)),
      ffmpegMs: round1(median(bThumb)),
      ratio: round3(median(gThumb) / median(bThumb)),
      targetRatio: 1.1,
      rounds: avthumbRounds,
      outputBytes,
      path: 'executeFops in the server process (IPC request), timed inside the server',
    };
    log(`  executeFops ${avthumb.granaryMs} ms, bare ffmpeg ${avthumb.ffmpegMs} ms, ratio ${avthumb.ratio}×`);
    const peakRssMB = round1(sampler.stop().peakBytes / 1e6);
    log(`  granary peak RSS ${peakRssMB} MB`);
    return { vframe, avthumbPfop, avthumb, peakRssMB, ffmpegThreads: THREADS, cpus: os.cpus().length };
  } finally {
    await server?.stop();
    for (const d of [buildDir, dataDir, outDir]) await rm(d, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, run);
