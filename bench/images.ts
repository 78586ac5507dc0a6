/**
 * Image processing bench (issue 6): `npx tsx bench/images.ts [--quick]`, or `run()` from the bench runner.
 *
 * Granary runs as a child process (transpiled, like bench/run.ts) so its RSS can be sampled; the load generator
 * is the bench's client child (raw keep-alive sockets). The source is a photo-like 12 MP JPEG (a camera fixture
 * upscaled to 4000×3000, quality 90).
 *
 * (a) Computation: `imageView2/1/w/200/h/200` with the result cache off (GRANARY_FOP_CACHE_SIZE=0), so every
 *     request decodes, resizes and encodes. p50 latency one request at a time, and images/s with 4 in flight,
 *     against the same work as a bare sharp call in this process (`rotate().resize(200, 200, cover).jpeg(75)` on
 *     the bytes in memory), measured in alternating rounds. Target: Granary p50 ≤ 1.25× bare sharp.
 * (b) The cached repeat (cache on, the result computed once) against a plain download of an object of the same
 *     size, requests/s over 16 connections, alternating rounds. Target ≥ 0.8×.
 * (c) Granary's peak RSS (sampled every 50 ms) under 8 concurrent thumbnails of the 12 MP JPEG, cache off,
 *     fresh process. Target < 400 MB.
 * `--cpu-prof` (or `cpuProf: true`): Granary runs (b) under `node --cpu-prof`; its hottest functions are printed.
 *
 * Figures of a full run on the 2-core dev VM (busy with other work; noisy): (a) p50 21.0 ms vs bare sharp 18.6 ms
 * (1.13×), 4 in flight 59 vs 90 images/s; (b) 7,273 vs 7,447 req/s (0.98×); (c) peak RSS 148 MB (idle 88 MB).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import qiniu from 'qiniu';
import sharp from 'sharp';
import { transpileForBench } from './lib/build.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';
import { startClient, startServer, type ClientChild, type ServerChild } from './lib/child.js';
import type { JobResult } from './lib/jobs.js';
import { RssSampler, rssBytes } from './lib/proc.js';
import { msSince, summarize } from './lib/stats.js';
import { hotFunctions } from './lib/profile.js';
import { fmt, MB, table } from './lib/table.js';

const AK = 'bench-images-ak';
const SK = 'bench-images-sk';
const BUCKET = 'bench';
const THUMB = 'imageView2/1/w/200/h/200';
const FIXTURES = process.env.GRANARY_FIXTURES ?? '/work/shared/fixtures/images';

/** A photo-like 4000×3000 JPEG (q 90): a real camera photo upscaled, so it has real texture and EXIF-free pixels. */
async function twelveMegapixelJpeg(): Promise<Buffer> {
  const src = await readFile(join(FIXTURES, 'hdr_canon_hdr_YES.jpg'));
  return sharp(src).rotate().resize(4000, 3000, { fit: 'cover' }).sharpen().jpeg({ quality: 90 }).toBuffer();
}

/** The same work as Granary's imageView2 mode 1 200×200 (auto-orient, cover, centre crop, JPEG q 75). */
function bareThumbnail(input: Buffer): Promise<Buffer> {
  return sharp(input).rotate().resize(200, 200, { fit: 'cover' }).jpeg({ quality: 75 }).toBuffer();
}

async function uploadTo(port: number, key: string, body: Buffer): Promise<void> {
  const mac = new qiniu.auth.digest.Mac(AK, SK);
  const host = `127.0.0.1:${port}`;
  const zone = new qiniu.conf.Zone([host], [], host, host, host, host);
  const up = new qiniu.form_up.FormUploader(new qiniu.conf.Config({ zone, useHttpsDomain: false } as qiniu.conf.ConfigOptions));
  const token = new qiniu.rs.PutPolicy({ scope: `${BUCKET}:${key}` }).uploadToken(mac);
  const { resp } = await up.put(token, key, body, new qiniu.form_up.PutExtra());
  if (resp.statusCode !== 200) throw new Error(`upload of ${key}: HTTP ${resp.statusCode}`);
}

async function getBytes(port: number, path: string): Promise<{ body: Buffer; cache: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
  return { body: Buffer.from(await res.arrayBuffer()), cache: res.headers.get('x-granary-cache') };
}

const perSecond = (r: JobResult): number => (r.ok / r.elapsedMs) * 1000;

function checked(r: JobResult, what: string): JobResult {
  if (r.errors > 0 || r.ok === 0) throw new Error(`${what}: ${r.ok} ok, ${r.errors} errors (${r.firstError ?? ''})`);
  return r;
}

/** Runs the image bench; returns its figures (see the module comment). */
export async function run(opts: { quick: boolean; log: (line: string) => void; cpuProf?: boolean }): Promise<Record<string, unknown>> {
  const { quick, log } = opts;
  const rounds = quick ? 1 : 2;
  const phaseMs = quick ? 2500 : 6000;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const work = await mkdtemp(join(os.tmpdir(), 'granary-bench-images-'));
  const buildDir = join(work, 'build');
  const dataDir = join(work, 'data');
  const children = new Set<{ stop(): Promise<void> }>();
  const profDir = opts.cpuProf ? join(work, 'prof') : undefined;
  const startGranary = async (env: Record<string, string>, profile = false): Promise<ServerChild> => {
    const execArgv = profile && profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    const s = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }, env), execArgv);
    children.add(s);
    return s;
  };
  const stopGranary = async (s: ServerChild): Promise<void> => {
    await s.stop();
    children.delete(s);
  };
  const results: Record<string, unknown> = {};
  try {
    log(`Image bench: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}${quick ? ' (--quick)' : ''}`);
    await transpileForBench(root, buildDir);
    const photo = await twelveMegapixelJpeg();
    log(`  source: 4000×3000 JPEG q90, ${fmt(photo.length / MB, 2)} MB`);
    results.sourceBytes = photo.length;

    let granary = await startGranary({ GRANARY_FOP_CACHE_SIZE: '0' });
    const client: ClientChild = await startClient(buildDir);
    children.add(client);
    await uploadTo(granary.port, 'photo.jpg', photo);
    const thumbPath = `/${BUCKET}/photo.jpg?${THUMB}`;
    const first = await getBytes(granary.port, thumbPath);
    const meta = await sharp(first.body).metadata();
    if (meta.width !== 200 || meta.height !== 200 || first.cache !== 'bypass') throw new Error(`unexpected thumbnail ${meta.width}×${meta.height}, cache ${first.cache}`);
    const thumbBytes = first.body.length;
    const bare = await bareThumbnail(photo);
    log(`  thumbnail: ${fmt(thumbBytes)} bytes from Granary, ${fmt(bare.length)} bytes from bare sharp`);

    // (a) computation: alternating rounds of Granary (cache off) and bare sharp.
    sharp.concurrency(os.availableParallelism());
    const g1: number[] = [];
    const b1: number[] = [];
    const g4: number[] = [];
    const b4: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const seq = checked(
        await client.run({ kind: 'get-rate', port: granary.port, path: thumbPath, concurrency: 1, durationMs: phaseMs, expectBytes: thumbBytes }),
        'granary sequential',
      );
      g1.push(seq.latency?.p50 ?? NaN);
      const lat: number[] = [];
      const until = performance.now() + phaseMs;
      while (performance.now() < until) {
        const t = process.hrtime.bigint();
        await bareThumbnail(photo);
        lat.push(msSince(t));
      }
      b1.push(summarize(lat).p50);
      const par = checked(
        await client.run({ kind: 'get-rate', port: granary.port, path: thumbPath, concurrency: 4, durationMs: phaseMs, expectBytes: thumbBytes }),
        'granary 4 concurrent',
      );
      g4.push(perSecond(par));
      let n = 0;
      const start = process.hrtime.bigint();
      const end = performance.now() + phaseMs;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (performance.now() < end) {
            await bareThumbnail(photo);
            n++;
          }
        }),
      );
      b4.push((n / msSince(start)) * 1000);
      log(`  round ${i + 1}: p50 granary ${fmt(g1[i], 1)} ms vs bare sharp ${fmt(b1[i], 1)} ms; 4 concurrent ${fmt(g4[i], 1)} vs ${fmt(b4[i], 1)} images/s`);
    }
    const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
    // The same bare call with libvips on one thread per operation, as Granary configures it (run.ts).
    sharp.concurrency(1);
    const lat1: number[] = [];
    const until1 = performance.now() + phaseMs / 2;
    while (performance.now() < until1) {
      const t = process.hrtime.bigint();
      await bareThumbnail(photo);
      lat1.push(msSince(t));
    }
    sharp.concurrency(os.availableParallelism());
    const comp = {
      granaryP50Ms: mean(g1),
      bareSharpP50Ms: mean(b1),
      bareSharpOneThreadP50Ms: summarize(lat1).p50,
      latencyRatio: mean(g1) / mean(b1),
      granaryImagesPerSecond4: mean(g4),
      bareSharpImagesPerSecond4: mean(b4),
      throughputRatio: mean(g4) / mean(b4),
      targetLatencyRatioMax: 1.25,
    };
    results.compute = comp;
    log(`(a) p50 ${fmt(comp.granaryP50Ms, 1)} ms vs bare sharp ${fmt(comp.bareSharpP50Ms, 1)} ms (${fmt(comp.latencyRatio, 2)}×, target ≤ 1.25×${comp.latencyRatio <= 1.25 ? ' ok' : ' MISS'}); one-thread bare sharp ${fmt(comp.bareSharpOneThreadP50Ms, 1)} ms; 4 concurrent ${fmt(comp.granaryImagesPerSecond4, 1)} vs ${fmt(comp.bareSharpImagesPerSecond4, 1)} images/s (${fmt(comp.throughputRatio, 2)}×)`);

    // (c) peak RSS under 8 concurrent thumbnails, fresh process, cache off.
    await stopGranary(granary);
    granary = await startGranary({ GRANARY_FOP_CACHE_SIZE: '0' });
    const idleRss = rssBytes(granary.pid) ?? 0;
    const sampler = new RssSampler(granary.pid, 50).start();
    const eight = checked(
      await client.run({ kind: 'get-rate', port: granary.port, path: thumbPath, concurrency: 8, durationMs: phaseMs, expectBytes: thumbBytes }),
      'granary 8 concurrent',
    );
    const peak = sampler.stop();
    const mem = {
      idleRssMB: idleRss / MB,
      peakRssMB: peak.peakBytes / MB,
      samples: peak.samples,
      imagesPerSecond8: perSecond(eight),
      p99Ms8: eight.latency?.p99,
      targetPeakRssMB: 400,
    };
    results.memory = mem;
    log(`(c) 8 concurrent: peak RSS ${fmt(mem.peakRssMB)} MB (idle ${fmt(mem.idleRssMB)} MB; target < 400${mem.peakRssMB < 400 ? ' ok' : ' MISS'}), ${fmt(mem.imagesPerSecond8, 1)} images/s, p99 ${fmt(mem.p99Ms8, 0)} ms`);

    // (b) cached repeat vs a plain download of the same size.
    await stopGranary(granary);
    granary = await startGranary({}, true);
    await uploadTo(granary.port, 'same-size.bin', randomBytes(thumbBytes));
    const warm = await getBytes(granary.port, thumbPath);
    const hit = await getBytes(granary.port, thumbPath);
    if (warm.cache !== 'miss' || hit.cache !== 'hit' || !hit.body.equals(warm.body)) throw new Error(`cache did not answer a hit (${warm.cache}, ${hit.cache})`);
    const cachedRates: number[] = [];
    const plainRates: number[] = [];
    const connections = 16;
    const rate = (path: string, durationMs: number): Promise<JobResult> =>
      client.run({ kind: 'get-rate', port: granary.port, path, concurrency: connections, durationMs, expectBytes: thumbBytes });
    const plainPath = `/${BUCKET}/same-size.bin`;
    // Warm-up of both paths (JIT), then rounds alternating which goes first.
    checked(await rate(thumbPath, 1000), 'warm-up');
    checked(await rate(plainPath, 1000), 'warm-up');
    for (let i = 0; i < rounds * 2; i++) {
      const cachedFirst = i % 2 === 0;
      const a = checked(await rate(cachedFirst ? thumbPath : plainPath, phaseMs / 2), 'cached/plain');
      const b = checked(await rate(cachedFirst ? plainPath : thumbPath, phaseMs / 2), 'plain/cached');
      const [c, p] = cachedFirst ? [a, b] : [b, a];
      cachedRates.push(perSecond(c));
      plainRates.push(perSecond(p));
      log(`  round ${i + 1}: cached thumbnail ${fmt(cachedRates[i])} req/s (p50 ${fmt(c.latency?.p50, 2)} ms) vs plain ${fmt(plainRates[i])} req/s (p50 ${fmt(p.latency?.p50, 2)} ms)`);
    }
    const cached = {
      resultBytes: thumbBytes,
      connections,
      cachedRequestsPerSecond: mean(cachedRates),
      plainRequestsPerSecond: mean(plainRates),
      ratio: mean(cachedRates) / mean(plainRates),
      targetRatioMin: 0.8,
    };
    results.cached = cached;
    await stopGranary(granary);
    if (profDir) {
      for (const f of (await readdir(profDir)).filter((n) => n.endsWith('.cpuprofile'))) {
        const { busyPercent, hot } = await hotFunctions(join(profDir, f), 40);
        log(`Granary CPU profile of (b): busy ${fmt(busyPercent, 1)}%`);
        log(table(['function', 'self %', 'total %', 'where'], hot.map((h) => [h.name, fmt(h.selfPercent, 1), fmt(h.totalPercent, 1), h.where])));
      }
    }
    log(`(b) cached repeat ${fmt(cached.cachedRequestsPerSecond)} req/s vs plain download ${fmt(cached.plainRequestsPerSecond)} req/s (${fmt(cached.ratio, 2)}×, target ≥ 0.8×${cached.ratio >= 0.8 ? ' ok' : ' MISS'})`);
    return results;
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

await runIfMain(import.meta.url, (o) => run({ ...o, cpuProf: o.argv.includes('--cpu-prof') }));
