/**
 * nrop bench: moderation throughput of Granary's `?nrop` (images/s, one at a time and 4 in flight) on real
 * fixture photos after a warm-up, with Granary's peak RSS; baseline: the bare model call (nsfwjs `classify` on
 * the same wasm backend, in this process, on the same photos already resized to 224×224) in the same run.
 *
 * Granary runs as a child process on the transpiled sources (lib/build.ts), like bench/run.ts. Each HTTP answer
 * must be 200 with a `fileList[0].label`. Granary does more per image than the baseline: reading the object,
 * decoding the full-size JPEG and resizing it (sharp), the hop to the worker thread, HTTP.
 *
 * `npx tsx bench/nrop.ts [--quick]` prints the figures; `run(opts)` returns them (the bench contract).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { transpileForBench } from './lib/build.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { startServer } from './lib/child.js';
import { RssSampler, rssBytes } from './lib/proc.js';

const AK = 'bench-nrop-ak';
const SK = 'bench-nrop-sk';
const BUCKET = 'bench-nrop';
const FIXTURES = process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images';
/** Camera and phone photos, 0.1–2 MB, 640 px to 12 Mpx. */
const PHOTOS = ['Nikon_D70.jpg', 'Canon_40D.jpg', 'hdr_canon_hdr_YES.jpg', 'mobile_jolla.jpg', 'exif-org_canon-ixus.jpg'];
const MB = 1e6;

interface Opts {
  quick: boolean;
  log: (line: string) => void;
}

function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Asks for `?nrop` on `key`; returns the latency in ms. */
async function nropOnce(port: number, key: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/${BUCKET}/${encodeURIComponent(key)}?nrop`);
  const body = (await res.json()) as { fileList?: { label?: number }[]; error?: string };
  const ms = performance.now() - t0;
  if (res.status !== 200 || typeof body.fileList?.[0]?.label !== 'number') {
    throw new Error(`nrop on ${key}: ${res.status} ${JSON.stringify(body)}`);
  }
  return ms;
}

/** `count` nrops cycling over the photos with `concurrency` in flight; images/s and per-request latencies. */
async function nropLoad(port: number, count: number, concurrency: number): Promise<{ imagesPerSecond: number; latencies: number[] }> {
  let next = 0;
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        latencies.push(await nropOnce(port, PHOTOS[i % PHOTOS.length] as string));
      }
    }),
  );
  return { imagesPerSecond: count / ((performance.now() - t0) / 1000), latencies };
}

/** The bare model: nsfwjs on the wasm backend in this process, classifying pre-resized pixels one at a time. */
async function baseline(count: number): Promise<{ loadMs: number; imagesPerSecond: number; p50Ms: number }> {
  const { createRequire } = await import('node:module');
  const { dirname } = await import('node:path');
  const tf = await import('@tensorflow/tfjs');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  const { load } = await import('nsfwjs/core');
  const { MobileNetV2Model } = await import('nsfwjs/models/mobilenet_v2');
  const t0 = performance.now();
  wasm.setWasmPaths(join(dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm')), '/'));
  wasm.setThreadsCount(1);
  await tf.setBackend('wasm');
  await tf.ready();
  tf.enableProdMode();
  const info = console.info;
  console.info = () => undefined;
  const model = await load('MobileNetV2', { modelDefinitions: [MobileNetV2Model] }).finally(() => (console.info = info));
  const loadMs = performance.now() - t0;
  const inputs = await Promise.all(
    PHOTOS.map(async (name) => {
      const raw = await sharp(join(FIXTURES, name)).rotate().resize(224, 224, { fit: 'fill' }).removeAlpha().toColourspace('srgb').raw().toBuffer();
      return Int32Array.from(raw);
    }),
  );
  const classify = async (i: number): Promise<number> => {
    const t = performance.now();
    const x = tf.tensor3d(inputs[i % inputs.length] as Int32Array, [224, 224, 3], 'int32');
    await model.classify(x, 5);
    x.dispose();
    return performance.now() - t;
  };
  for (let i = 0; i < inputs.length; i++) await classify(i);
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) latencies.push(await classify(i));
  const imagesPerSecond = count / ((performance.now() - start) / 1000);
  model.dispose();
  return { loadMs, imagesPerSecond, p50Ms: p50(latencies) };
}

export async function run(opts: Opts): Promise<Record<string, unknown>> {
  const { quick, log } = opts;
  const sequentialCount = quick ? 15 : 60;
  const concurrentCount = quick ? 20 : 80;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-nrop-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-nrop-data-'));
  try {
    log(`nrop bench: ${os.cpus().length} cores, Node ${process.version}${quick ? ' (--quick)' : ''}; photos ${PHOTOS.join(', ')}`);
    await transpileForBench(root, buildDir);
    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }));
    try {
      const idleRssMB = (rssBytes(server.pid) ?? 0) / MB;
      const sampler = new RssSampler(server.pid, 50).start();
      const mac = new qiniu.auth.digest.Mac(AK, SK);
      const enableUrl = `http://127.0.0.1:${server.port}/nrop/${BUCKET}/enable/1`;
      const enabled = await fetch(enableUrl, { method: 'POST', headers: { Authorization: qiniu.util.generateAccessToken(mac, enableUrl) } });
      if (enabled.status !== 200) throw new Error(`enabling nrop: ${enabled.status} ${await enabled.text()}`);
      const host = `127.0.0.1:${server.port}`;
      const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
      const uploader = new qiniu.form_up.FormUploader(new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions));
      const token = new qiniu.rs.PutPolicy({ scope: BUCKET }).uploadToken(mac);
      for (const name of PHOTOS) {
        const { resp } = await uploader.put(token, name, await readFile(join(FIXTURES, name)), new qiniu.form_up.PutExtra());
        if (resp.statusCode !== 200) throw new Error(`upload of ${name}: ${resp.statusCode}`);
      }

      const firstRequestMs = await nropOnce(server.port, PHOTOS[0] as string);
      log(`  first nrop (starts the worker, loads the model): ${round(firstRequestMs)} ms`);
      await nropLoad(server.port, PHOTOS.length * 2, 1);
      const seq = await nropLoad(server.port, sequentialCount, 1);
      log(`  sequential: ${round(seq.imagesPerSecond)} images/s, p50 ${round(p50(seq.latencies))} ms (${sequentialCount} requests)`);
      const conc = await nropLoad(server.port, concurrentCount, 4);
      log(`  4 in flight: ${round(conc.imagesPerSecond)} images/s, p50 ${round(p50(conc.latencies))} ms (${concurrentCount} requests)`);
      const { peakBytes } = sampler.stop();
      const loadedRssMB = (rssBytes(server.pid) ?? 0) / MB;
      log(`  Granary RSS: idle ${round(idleRssMB)} MB, after the runs ${round(loadedRssMB)} MB, peak ${round(peakBytes / MB)} MB`);
      await server.stop();

      const base = await baseline(sequentialCount);
      log(`  baseline (bare nsfwjs classify, pre-resized, in-process): ${round(base.imagesPerSecond)} images/s, p50 ${round(base.p50Ms)} ms; model load ${round(base.loadMs)} ms`);
      return {
        photos: PHOTOS,
        sequentialRequests: sequentialCount,
        concurrentRequests: concurrentCount,
        firstRequestMs: round(firstRequestMs),
        sequentialImagesPerSecond: round(seq.imagesPerSecond, 2),
        sequentialP50Ms: round(p50(seq.latencies)),
        concurrent4ImagesPerSecond: round(conc.imagesPerSecond, 2),
        concurrent4P50Ms: round(p50(conc.latencies)),
        granaryIdleRssMB: round(idleRssMB),
        granaryPeakRssMB: round(peakBytes / MB),
        baselineImagesPerSecond: round(base.imagesPerSecond, 2),
        baselineP50Ms: round(base.p50Ms),
        baselineModelLoadMs: round(base.loadMs),
        sequentialVsBaselineRatio: round(seq.imagesPerSecond / base.imagesPerSecond, 2),
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
