/**
 * Phase `footprint` (issue 45): the resident memory of the default start, process by process, and what it is made
 * of. `npm run bench -- --only=footprint` or `npx tsx bench/footprint.ts [options]`.
 *
 * Starts the real server as `npm start` does — `node --initial-old-space-size=256 bin/granary.js serve` (dist/,
 * rebuilt first when older than src/) with GRANARY_WORKERS=2 (a primary and two workers), the Kodo, console and
 * S3 listeners on free ports, a temp data dir — plus one node flag, `--import=<footprint-probe>` (bench/lib/
 * footprint-probe.ts: a SIGUSR2 handler and nothing else; the workers inherit it). Once it is ready and has been
 * idle for `--idle` seconds, for every process (the primary and its children) it reads /proc/<pid>/smaps
 * (bench/lib/smaps.ts: RSS, PSS, anonymous memory, the node binary's pages, native libraries, SQLite's mapped
 * files), then signals the probe for V8's view (heap used and committed, new space, external and array buffers,
 * the loaded scripts by package, the thread names; with `--snapshot`, a heap snapshot summed by node type).
 *
 * Options:
 * - `--workers=N` (default 2, the default start on a 2-core machine);
 * - `--seed=N`: before the start, N object entries (one shared blob, 4 KiB each as recorded) written straight into
 *   the SQLite file (lib/seed.ts), in 1,000-key directories: "a million objects stored" in seconds;
 * - `--fill=N`: N objects of 1 KiB uploaded through the real form-upload path before the measurement (wrk, 64
 *   connections, rounds of 10 s until N answers were 2xx), then the server restarted: idle after a restart;
 * - `--load[=SECONDS]` (default 8 per step): after the idle figures, the bench's load — form uploads of 4 KiB and
 *   1 MiB (16 connections), GETs of 4 KiB (32) and 1 MiB (8), wrk as in phases `upload` and `small` — while every
 *   process's RSS is sampled every 100 ms (PSS every 500 ms): the peak of each and of their sums; then the idle
 *   figures again;
 * - `--idle=SECONDS` (default 30: the idle collection, GRANARY_IDLE_GC_SECONDS, runs 10 s after the last busy second)
 *   before the first reading, `--settle=SECONDS` (default 40: the scrubber reads what the load uploaded) between the
 *   load and the reading after it; `--snapshot`; `--env=NAME=VALUE,…` (settings of the
 *   server under test, e.g. `--env=GRANARY_SQLITE_CACHE_SIZE=2MiB`); `--node-args='--flag …'` (node flags of the
 *   server's command line, which the workers inherit); `--gc-first` (each process runs V8's full collection
 *   before it is measured: what an idle collection would give back); `--quick` (short idle and load).
 *
 * Returns the figures (also printed): per process and summed, bytes.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import qiniu from 'qiniu';
import ts from 'typescript';
import { ensureConsoleBuilt, ensureDistBuilt } from '../test/helpers/build.js';
import { freePort } from '../test/helpers/cli.js';
import { contentBuffer } from './lib/data.js';
import { processTree, rssBytes } from './lib/proc.js';
import { seedListBucket } from './lib/seed.js';
import { PARTS, readSmaps, type MemoryPart, type PartName } from './lib/smaps.js';
import { runIfMain, type BenchRun } from './lib/standalone.js';
import { fmt, KiB, MB, MiB, table } from './lib/table.js';
import { ensureWrk, wrkGet, wrkUpload } from './lib/wrk.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const AK = 'bench-footprint-ak';
const SK = 'bench-footprint-sk';
const BUCKET = 'bench';

export interface FootprintOptions {
  workers: number;
  seed: number;
  fill: number;
  /** Seconds per load step; 0 = no load. */
  loadSeconds: number;
  idleSeconds: number;
  snapshot: boolean;
  env: Record<string, string>;
  /** Seconds between the end of the load and the reading after it. */
  settleSeconds: number;
  /** Each probe runs a full collection first, and the smaps are read after it (what an idle collection gives back). */
  gcFirst: boolean;
  /** Extra node flags of the server's command line (the workers inherit them). */
  nodeArgs: string[];
}

/** What the probe writes (bench/lib/footprint-probe.ts). */
interface ProbeReport {
  pid: number;
  argv: string[];
  usage: NodeJS.MemoryUsage;
  heap: { total_heap_size: number; total_physical_size: number; used_heap_size: number; malloced_memory: number; external_memory: number; number_of_native_contexts: number };
  spaces: Array<{ space: string; size: number; used: number; available: number; physical: number }>;
  threads: Record<string, number>;
  scripts: Record<string, { scripts: number; chars: number }>;
  snapshot?: Record<string, { count: number; bytes: number }>;
}

/** One process's breakdown. */
export interface ProcessFootprint {
  role: string;
  pid: number;
  smaps: { total: MemoryPart; parts: Record<PartName, MemoryPart> };
  probe?: ProbeReport;
}

/** The processes of one start: the primary first, then its children (workers) in pid order. */
function roles(primary: number): Array<{ role: string; pid: number }> {
  const children = [...processTree([primary])].filter((p) => p !== primary).sort((a, b) => a - b);
  return [{ role: 'primary', pid: primary }, ...children.map((pid, i) => ({ role: `worker ${i}`, pid }))];
}

/** The server under test (`npm start`'s command line plus the probe), and how to stop it. */
class Server {
  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
  ) {}

  static async start(o: { probe: string; dataDir: string; reportDir: string; workers: number; env: Record<string, string>; log: string; snapshot: boolean; nodeArgs: string[]; gcFirst: boolean }): Promise<Server> {
    const [port, consolePort, s3Port] = [await freePort(), await freePort(), await freePort()];
    const { openSync } = await import('node:fs');
    const out = openSync(o.log, 'a');
    const proc = spawn(process.execPath, ['--initial-old-space-size=256', ...o.nodeArgs, `--import=${pathToFileURL(o.probe).href}`, join(ROOT, 'bin/granary.js'), 'serve'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        GRANARY_DATA_DIR: o.dataDir,
        GRANARY_HOST: '127.0.0.1',
        GRANARY_PORT: String(port),
        GRANARY_CONSOLE_PORT: String(consolePort),
        GRANARY_S3_PORT: String(s3Port),
        GRANARY_WORKERS: String(o.workers),
        GRANARY_ACCESS_KEY: AK,
        GRANARY_SECRET_KEY: SK,
        GRANARY_LOG_LEVEL: 'warn',
        FOOTPRINT_DIR: o.reportDir,
        FOOTPRINT_SNAPSHOT: o.snapshot ? '1' : '0',
        FOOTPRINT_GC: o.gcFirst ? '1' : '0',
        ...o.env,
      },
      stdio: ['ignore', out, out],
    });
    const server = new Server(proc, port);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}); see ${o.log}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health/ready`).then((r) => r.ok, () => false);
      if (ok && roles(proc.pid ?? 0).length > o.workers) break;
      if (Date.now() > deadline) throw new Error(`the server was not ready within 60 s; see ${o.log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return server;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    await once(this.proc, 'exit');
  }
}

/** Signals the probe of `pid` and reads its report (waits up to 60 s: a heap snapshot takes a while). */
async function probe(pid: number, reportDir: string): Promise<ProbeReport | undefined> {
  const file = join(reportDir, `${pid}.json`);
  await rm(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 60_000;
  while (!existsSync(file)) {
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
  return JSON.parse(await readFile(file, 'utf8')) as ProbeReport;
}

/** Every process's breakdown: smaps of all first (the probes allocate), then the probes one by one. */
async function measure(primary: number, reportDir: string, gcFirst: boolean): Promise<ProcessFootprint[]> {
  if (gcFirst) {
    for (const r of roles(primary)) await probe(r.pid, reportDir);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const list = roles(primary).map((r) => ({ ...r, smaps: readSmaps(r.pid) }));
  const out: ProcessFootprint[] = [];
  for (const r of list) {
    const p = await probe(r.pid, reportDir);
    out.push({ ...r, ...(p ? { probe: p } : {}) });
  }
  return out;
}

const mb = (bytes: number | undefined): string => (bytes === undefined ? '—' : fmt(bytes / MB, 1));

/** The breakdown as a table: one column per process and one for the sum. */
function breakdownTable(procs: ProcessFootprint[]): string {
  const space = (p: ProcessFootprint, name: string): number | undefined => p.probe?.spaces.find((s) => s.space === name)?.physical;
  const rows: Array<[string, (p: ProcessFootprint) => number | undefined]> = [
    ['RSS', (p) => p.smaps.total.rss],
    ['PSS (shared pages divided)', (p) => p.smaps.total.pss],
    ['anonymous', (p) => p.smaps.total.anonymous],
    ...PARTS.filter((n) => n !== 'anonymous').map((n): [string, (p: ProcessFootprint) => number | undefined] => [`  ${n} (RSS)`, (p) => p.smaps.parts[n].rss]),
    ['V8 heap committed', (p) => p.probe?.heap.total_physical_size],
    ['  new space committed', (p) => space(p, 'new_space')],
    ['  old space committed', (p) => space(p, 'old_space')],
    ['  code space committed', (p) => space(p, 'code_space')],
    ['  large object spaces', (p) => (space(p, 'large_object_space') ?? 0) + (space(p, 'code_large_object_space') ?? 0) + (space(p, 'new_large_object_space') ?? 0)],
    ['V8 heap used', (p) => p.probe?.usage.heapUsed],
    ['external (Buffers, native)', (p) => p.probe?.usage.external],
    ['  array buffers', (p) => p.probe?.usage.arrayBuffers],
    ['V8 malloced', (p) => p.probe?.heap.malloced_memory],
    // Anonymous memory includes the brk heap's pages: the rest is malloc's (SQLite, libvips, Buffers), stacks, other isolates.
    ['native (anonymous − V8 heap)', (p) => (p.probe ? p.smaps.total.anonymous - p.probe.heap.total_physical_size : undefined)],
  ];
  const sum = (f: (p: ProcessFootprint) => number | undefined): number | undefined => {
    const values = procs.map(f);
    return values.every((v) => v === undefined) ? undefined : values.reduce<number>((s, v) => s + (v ?? 0), 0);
  };
  return table(
    ['MB', ...procs.map((p) => `${p.role} (${p.pid})`), 'sum'],
    rows.map(([label, f]) => [label, ...procs.map((p) => mb(f(p))), mb(sum(f))]),
  );
}

/** Loaded JavaScript by package, the largest first (source characters, thousands), per process. */
function scriptsTable(procs: ProcessFootprint[], top = 40): string {
  const totals = new Map<string, number>();
  for (const p of procs) for (const [pkg, s] of Object.entries(p.probe?.scripts ?? {})) totals.set(pkg, (totals.get(pkg) ?? 0) + s.chars);
  const pkgs = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([pkg]) => pkg);
  const all = (p: ProcessFootprint): { scripts: number; chars: number } =>
    Object.values(p.probe?.scripts ?? {}).reduce((s, v) => ({ scripts: s.scripts + v.scripts, chars: s.chars + v.chars }), { scripts: 0, chars: 0 });
  return table(
    ['loaded JS (k chars / scripts)', ...procs.map((p) => p.role)],
    [
      ['all', ...procs.map((p) => `${fmt(all(p).chars / 1000)} / ${all(p).scripts}`)],
      ...pkgs.map((pkg) => [pkg, ...procs.map((p) => {
        const s = p.probe?.scripts[pkg];
        return s ? `${fmt(s.chars / 1000)} / ${s.scripts}` : '';
      })]),
    ],
  );
}

/** Thread names per process. */
function threadsLine(procs: ProcessFootprint[]): string {
  return procs
    .map((p) => `${p.role}: ${Object.entries(p.probe?.threads ?? {}).map(([n, c]) => (c > 1 ? `${n}×${c}` : n)).join(', ')}`)
    .join('\n');
}

/** Heap snapshot by node type (self sizes, MB), per process. */
function snapshotTable(procs: ProcessFootprint[]): string {
  const types = new Map<string, number>();
  for (const p of procs) for (const [t, v] of Object.entries(p.probe?.snapshot ?? {})) types.set(t, (types.get(t) ?? 0) + v.bytes);
  const order = [...types.entries()].sort((a, b) => b[1] - a[1]).map(([t]) => t);
  return table(['heap snapshot, self MB', ...procs.map((p) => p.role)], order.map((t) => [t, ...procs.map((p) => mb(p.probe?.snapshot?.[t]?.bytes))]));
}

/** SQLite's figures for the data dir: database size, and the cache and mmap bounds a connection opens with. */
function sqliteNote(dataDir: string): string {
  const path = join(dataDir, 'meta.db');
  if (!existsSync(path)) return 'no meta.db';
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const pages = Number(db.pragma('page_count', { simple: true }));
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const cache = Number(db.pragma('cache_size', { simple: true }));
    const mmap = Number(db.pragma('mmap_size', { simple: true }) ?? 0);
    const objects = Number(db.prepare('SELECT count(*) FROM objects').pluck().get());
    const cacheText = cache < 0 ? `${fmt((-cache * 1024) / MB, 1)} MB` : `${cache} pages`;
    return `meta.db ${fmt((pages * pageSize) / MB, 1)} MB, ${fmt(objects)} objects; a new connection's cache_size ${cacheText} (better-sqlite3's default; Granary's own connections set GRANARY_SQLITE_CACHE_SIZE when it has the setting), mmap_size ${mmap}`;
  } finally {
    db.close();
  }
}

/** PSS of `pid` (/proc/<pid>/smaps_rollup), bytes; 0 when it is gone. */
function pssBytes(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m?.[1] !== undefined ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** RSS of every process of the tree sampled every `ms`: per-pid peak and the peak of the sum. */
class TreeSampler {
  private timer: NodeJS.Timeout | undefined;
  readonly peaks = new Map<number, number>();
  peakSum = 0;
  peakPssSum = 0;
  private samples = 0;

  constructor(
    private readonly primary: number,
    private readonly ms = 100,
  ) {}

  start(): this {
    this.timer = setInterval(() => this.sample(), this.ms);
    return this;
  }

  private sample(): void {
    let sum = 0;
    const pids = processTree([this.primary]);
    for (const pid of pids) {
      const v = rssBytes(pid) ?? 0;
      sum += v;
      this.peaks.set(pid, Math.max(this.peaks.get(pid) ?? 0, v));
    }
    this.peakSum = Math.max(this.peakSum, sum);
    // PSS (the node binary's shared pages counted once) every 5th sample: smaps_rollup walks the page tables.
    if (this.samples++ % 5 === 0) {
      let pss = 0;
      for (const pid of pids) pss += pssBytes(pid);
      this.peakPssSum = Math.max(this.peakPssSum, pss);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.sample();
  }
}

/** A form upload of `body` as `key` (fetch + FormData): for the objects the GET load reads. */
async function upload(port: number, token: string, key: string, body: Buffer): Promise<void> {
  const form = new FormData();
  form.set('token', token);
  form.set('key', key);
  form.set('file', new Blob([body]), key);
  const r = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: form });
  if (!r.ok) throw new Error(`upload of ${key}: ${r.status} ${await r.text()}`);
}

/** The bench's load steps against `server`, with the tree's RSS sampled. */
async function load(server: Server, seconds: number, wrk: string, log: (line: string) => void): Promise<Record<string, unknown>> {
  const token = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 7200 }).uploadToken(new qiniu.auth.digest.Mac(AK, SK));
  await upload(server.port, token, 'footprint/small.bin', contentBuffer(4 * KiB));
  await upload(server.port, token, 'footprint/medium.bin', contentBuffer(MiB));
  const sampler = new TreeSampler(server.proc.pid ?? 0).start();
  const steps: Record<string, unknown> = {};
  const durationMs = seconds * 1000;
  const port = server.port;
  for (const [name, run] of [
    ['upload 4 KiB ×16', () => wrkUpload({ kind: 'upload', port, token, keyPrefix: `load4k-${Date.now()}-`, size: 4 * KiB, concurrency: 16, durationMs }, wrk)],
    ['upload 1 MiB ×16', () => wrkUpload({ kind: 'upload', port, token, keyPrefix: `load1m-${Date.now()}-`, size: MiB, concurrency: 16, durationMs }, wrk)],
    ['GET 4 KiB ×32', () => wrkGet({ kind: 'get-rate', port, path: `/${BUCKET}/footprint/small.bin`, concurrency: 32, durationMs, expectBytes: 4 * KiB }, wrk)],
    ['GET 1 MiB ×8', () => wrkGet({ kind: 'get-rate', port, path: `/${BUCKET}/footprint/medium.bin`, concurrency: 8, durationMs, expectBytes: MiB }, wrk)],
  ] as const) {
    const before = sampler.peakSum;
    const r = await run();
    const rate = r.ok / (r.elapsedMs / 1000);
    log(`  ${name}: ${fmt(rate)} ops/s, ${r.errors} errors, p50 ${fmt(r.latency?.p50, 2)} ms; peak RSS of all so far ${mb(Math.max(before, sampler.peakSum))} MB`);
    steps[name] = { opsPerSec: rate, errors: r.errors, p50Ms: r.latency?.p50, p99Ms: r.latency?.p99 };
  }
  sampler.stop();
  const peaks = roles(server.proc.pid ?? 0).map((r) => ({ ...r, peakRss: sampler.peaks.get(r.pid) ?? 0 }));
  log(`  peak RSS under load: ${peaks.map((p) => `${p.role} ${mb(p.peakRss)}`).join(', ')}; of the sum ${mb(sampler.peakSum)} MB; peak PSS of the sum ${mb(sampler.peakPssSum)} MB`);
  return { steps, peakSumBytes: sampler.peakSum, peakPssSumBytes: sampler.peakPssSum, peaks };
}

/** Uploads `count` 1 KiB objects through the form-upload path (wrk, 64 connections, 10 s rounds). */
async function fill(server: Server, count: number, wrk: string, log: (line: string) => void): Promise<{ objects: number; seconds: number }> {
  const token = new qiniu.rs.PutPolicy({ scope: BUCKET, expires: 7200 }).uploadToken(new qiniu.auth.digest.Mac(AK, SK));
  const started = performance.now();
  let done = 0;
  for (let round = 0; done < count; round++) {
    const left = count - done;
    // A short last round: about 2,000 uploads/s here.
    const seconds = Math.max(1, Math.min(10, Math.ceil(left / 2000)));
    const r = await wrkUpload({ kind: 'upload', port: server.port, token, keyPrefix: `fill/r${round}-`, size: KiB, concurrency: 64, durationMs: seconds * 1000 }, wrk);
    if (r.errors > 0) throw new Error(`fill: ${r.errors} failed uploads; first: ${r.firstError ?? '?'}`);
    done += r.ok;
    log(`  filled ${fmt(done)} objects (${fmt(r.ok / (r.elapsedMs / 1000))} uploads/s)`);
  }
  return { objects: done, seconds: (performance.now() - started) / 1000 };
}

/** Transpiles the probe to `<dir>/footprint-probe.mjs` (it imports node builtins only). */
async function buildProbe(dir: string): Promise<string> {
  const source = await readFile(fileURLToPath(new URL('./lib/footprint-probe.ts', import.meta.url)), 'utf8');
  const out = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022 } });
  const file = join(dir, 'footprint-probe.mjs');
  await writeFile(file, out.outputText);
  return file;
}

/** Figures of one measurement for results: per process and summed, MB. */
function summary(procs: ProcessFootprint[]): Record<string, unknown> {
  const per = procs.map((p) => ({
    role: p.role,
    rssMB: p.smaps.total.rss / MB,
    pssMB: p.smaps.total.pss / MB,
    anonymousMB: p.smaps.total.anonymous / MB,
    heapCommittedMB: (p.probe?.heap.total_physical_size ?? 0) / MB,
    heapUsedMB: (p.probe?.usage.heapUsed ?? 0) / MB,
    newSpaceMB: (p.probe?.spaces.find((s) => s.space === 'new_space')?.physical ?? 0) / MB,
    externalMB: (p.probe?.usage.external ?? 0) / MB,
    parts: Object.fromEntries(PARTS.map((n) => [n, p.smaps.parts[n].rss / MB])),
  }));
  return { rssSumMB: per.reduce((s, p) => s + p.rssMB, 0), pssSumMB: per.reduce((s, p) => s + p.pssMB, 0), processes: per };
}

/** The whole phase (see the module comment). */
export async function footprint(o: FootprintOptions, log: (line: string) => void): Promise<Record<string, unknown>> {
  if (ensureDistBuilt()) log('  built dist/');
  if (ensureConsoleBuilt()) log('  built dist/console-ui/');
  const work = await mkdtemp(join(os.tmpdir(), 'granary-footprint-'));
  const dataDir = join(work, 'data');
  const reportDir = join(work, 'reports');
  await mkdir(dataDir);
  await mkdir(reportDir);
  const logFile = join(work, 'server.log');
  const results: Record<string, unknown> = { options: o, loadavg: os.loadavg() };
  let server: Server | undefined;
  try {
    const probeFile = await buildProbe(work);
    const start = (): Promise<Server> => Server.start({ probe: probeFile, dataDir, reportDir, workers: o.workers, env: o.env, log: logFile, snapshot: o.snapshot, nodeArgs: o.nodeArgs, gcFirst: o.gcFirst });
    if (o.seed > 0) {
      // One start first, on the empty data dir: the deployment marker (store/deployment.ts) is written, so the seeded
      // entries, whose blob has no file, do not fail the next start's check.
      await (await start()).stop();
      const perDir = 1000;
      const s = await seedListBucket(dataDir, BUCKET, AK, { big: o.seed % perDir, dirs: Math.floor(o.seed / perDir), perDir, flat: 0 });
      log(`  seeded ${fmt(s.keys)} entries into meta.db in ${fmt(s.ms / 1000, 1)} s`);
    } else {
      execFileSync(process.execPath, [join(ROOT, 'bin/granary.js'), 'bucket', 'create', BUCKET, '--data-dir', dataDir], {
        env: { ...process.env, GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK, GRANARY_LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
    }
    const needWrk = o.fill > 0 || o.loadSeconds > 0;
    const wrk = needWrk ? ensureWrk(log) : undefined;
    if (needWrk && !wrk?.path) throw new Error(`footprint: wrk is needed for --fill and --load (${wrk && 'reason' in wrk ? wrk.reason : ''})`);
    server = await start();
    if (o.fill > 0) {
      results.fill = await fill(server, o.fill, wrk?.path ?? 'wrk', log);
      await server.stop();
      const t = performance.now();
      server = await start();
      results.restartMs = performance.now() - t;
      log(`  restarted in ${fmt((performance.now() - t) / 1000, 1)} s`);
    }
    log(`  ${sqliteNote(dataDir)}`);
    const settle = async (): Promise<void> => new Promise((r) => setTimeout(r, o.idleSeconds * 1000));
    await settle();
    const idle = await measure(server.proc.pid ?? 0, reportDir, o.gcFirst);
    log(`  idle ${o.idleSeconds} s after the start (load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}):`);
    log(breakdownTable(idle));
    log(scriptsTable(idle));
    log(threadsLine(idle));
    if (o.snapshot) log(snapshotTable(idle));
    results.idle = summary(idle);
    if (o.loadSeconds > 0) {
      log(`  the bench's load, ${o.loadSeconds} s per step:`);
      results.load = await load(server, o.loadSeconds, wrk?.path ?? 'wrk', log);
      // The background work the load left (the scrubber reads the new objects) ends first.
      await new Promise((r) => setTimeout(r, o.settleSeconds * 1000));
      const after = await measure(server.proc.pid ?? 0, reportDir, o.gcFirst);
      log(`  idle ${o.settleSeconds} s after the load:`);
      log(breakdownTable(after));
      results.afterLoad = summary(after);
    }
    const dbSize = await stat(join(dataDir, 'meta.db')).then((s) => s.size, () => 0);
    results.metaDbBytes = dbSize;
    return results;
  } catch (err) {
    if (existsSync(logFile)) log(`  server log:\n${readFileSync(logFile, 'utf8').slice(-4000)}`);
    throw err;
  } finally {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** Options from `--name=value` arguments (see the module comment). */
export function footprintOptions(argv: string[], quick: boolean): FootprintOptions {
  const arg = (name: string): string | undefined => {
    const hit = argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
    return hit === undefined ? undefined : hit.includes('=') ? hit.slice(hit.indexOf('=') + 1) : '';
  };
  const num = (name: string, dflt: number): number => {
    const v = arg(name);
    if (v === undefined || v === '') return dflt;
    const n = Number(v.replace(/_/g, ''));
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: a number ≥ 0, got ${v}`);
    return n;
  };
  const env: Record<string, string> = {};
  for (const pair of (arg('env') ?? '').split(',').filter((p) => p !== '')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--env: NAME=VALUE pairs, got ${pair}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const loadArg = arg('load');
  return {
    workers: num('workers', 2),
    seed: num('seed', 0),
    fill: num('fill', 0),
    loadSeconds: loadArg === undefined ? 0 : loadArg === '' ? (quick ? 2 : 8) : num('load', 8),
    idleSeconds: num('idle', quick ? 3 : 30),
    settleSeconds: num('settle', quick ? 5 : 40),
    snapshot: arg('snapshot') !== undefined,
    gcFirst: arg('gc-first') !== undefined,
    env,
    nodeArgs: (arg('node-args') ?? '').split(' ').filter((a) => a !== ''),
  };
}

/** Phase `footprint` of `npm run bench` (bench/run.ts passes no options: the default start, idle and under load). */
export const run: BenchRun = async ({ quick, log }) => footprint(footprintOptions(['--load'], quick), log);

await runIfMain(import.meta.url, ({ quick, log, argv }) => footprint(footprintOptions(argv, quick), log));
