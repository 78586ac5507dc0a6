/**
 * The load generator of phases `upload` and `small`: wrk (C, https://github.com/wg/wrk; Debian package `wrk`) with
 * the script lib/form-upload.lua (uploads) or lib/get.lua (GETs), run by the bench process itself, one wrk process
 * per round. The issue's upload targets were measured with `wrk -t2 -c16`; on this 2-core machine the Node client (client.ts) spends ~3× wrk's CPU per upload
 * (4 KiB: 0.2–0.3 core against 0.06–0.11), which it takes from the servers under test, unevenly.
 *
 * `wrkUpload` and `wrkGet` take the same UploadJob / GetRateJob as the Node client and answer the same JobResult, so
 * a phase measures and reports both alike. `ensureWrk` finds wrk on PATH or installs it (root only).
 */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findOnPath } from '../../src/fops/tools.js';
import type { GetRateJob, JobResult, UploadJob } from './jobs.js';
import { reapedChildrenCpuSeconds } from './proc.js';

/** The wrk script: multipart form uploads under distinct keys; prints one `JSON {…}` line at the end. */
export const FORM_UPLOAD_LUA = fileURLToPath(new URL('./form-upload.lua', import.meta.url));
/** The wrk script of phase `small`: GETs of one path, checked in aggregate; prints one `JSON {…}` line at the end. */
export const GET_LUA = fileURLToPath(new URL('./get.lua', import.meta.url));

/** wrk threads (`-t`), as in the issue's measurements: one per core of this machine. */
const THREADS = 2;
/** wrk's per-request timeout (its default, 2 s, could cut a durable upload stalled by the disk short: an error). */
const TIMEOUT = '10s';

/** What form-upload.lua's and get.lua's done() print (latencies and duration in µs; `bytes` read: get.lua only). */
interface WrkReport {
  requests: number;
  non2xx: number;
  firstError: string | null;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
  duration: number;
  bytes?: number;
}

/**
 * Makes wrk available: found on PATH, or, when it is not and this process runs as root, installed with
 * `apt-get install -y --no-install-recommends wrk` (after an `apt-get update` when the first try fails: no package
 * lists yet). Progress goes to `log`. Returns wrk's path, or undefined and why (the caller falls back).
 */
export function ensureWrk(log: (line: string) => void): { path: string } | { path?: undefined; reason: string } {
  const found = findOnPath('wrk');
  if (found) return { path: found };
  if (process.getuid?.() !== 0) return { reason: 'wrk is not on PATH and this process is not root (to install it: apt-get install wrk)' };
  const apt = (args: string[]): { ok: boolean; output: string } => {
    const r = spawnSync('apt-get', args, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 300_000 });
    return { ok: r.status === 0, output: `${r.error?.message ?? ''}${r.stdout ?? ''}${r.stderr ?? ''}` };
  };
  const install = ['install', '-y', '--no-install-recommends', 'wrk'];
  log(`  wrk is not on PATH: apt-get ${install.join(' ')}…`);
  let r = apt(install);
  if (!r.ok) {
    log('  that failed; apt-get update, then again…');
    r = apt(['update']).ok ? apt(install) : r;
  }
  const path = findOnPath('wrk');
  if (r.ok && path) return { path };
  if (r.ok) return { reason: `apt-get installed wrk, but it is not on PATH (${process.env.PATH ?? ''})` };
  return { reason: `installing wrk failed: ${r.output.trim().split('\n').slice(-3).join(' / ')}` };
}

/**
 * Runs one UploadJob with wrk: `wrk -t2 -c<concurrency> -d<s>s --timeout 10s -s form-upload.lua
 * http://127.0.0.1:<port>/ -- <token> <size> <keyPrefix>`. wrk takes whole seconds: `durationMs` is rounded (at
 * least 1 s; `--quick`'s 0.4 s warm-up runs 1 s); `elapsedMs` is wrk's own measured duration. Uploads in flight
 * when wrk stops are dropped unanswered and not counted (the Node client lets them finish).
 *
 * Result (JobResult, as the Node client's): `ok` = answers 2xx; `errors` = other answers plus wrk's connect, read,
 * write errors and timeouts, `firstError` naming the first answer's status and body and/or the socket error counts;
 * `bytes` = ok × size; `latency` of one upload in ms (p50, p99, mean, max: wrk's histogram); `clientCores` = wrk's
 * CPU seconds (user + system, both threads) over its lifetime (see runWrk). Rejects when wrk cannot start, exits
 * non-zero or prints no report.
 */
export async function wrkUpload(job: UploadJob, wrk = 'wrk'): Promise<JobResult> {
  const seconds = Math.max(1, Math.round(job.durationMs / 1000));
  const args = [`-t${Math.min(THREADS, job.concurrency)}`, `-c${job.concurrency}`, `-d${seconds}s`, '--timeout', TIMEOUT, '-s', FORM_UPLOAD_LUA];
  const run = await runWrk(wrk, [...args, `http://127.0.0.1:${job.port}/`, '--', job.token, String(job.size), job.keyPrefix], seconds);
  return toResult(run.report, job.size, run.cpuSeconds, run.wallSeconds);
}

/**
 * Runs one GetRateJob with wrk: `wrk -t1 -c<concurrency> -d<s>s --timeout 10s -s get.lua
 * http://127.0.0.1:<port><path>` — one wrk thread, which keeps up with ~27,000 answers/s of 4 KiB here at ~0.3
 * core and leaves the rest of this 2-core machine to the servers (two threads took ~0.8 core). `durationMs` is
 * rounded to whole seconds as in wrkUpload; `job.client` (the Node client's choice) does not apply.
 *
 * Result as wrkUpload's, with `ok` = answers with a status below 400 and `bytes` = ok × expectBytes. get.lua reads
 * no answer in Lua (to keep wrk light), so the bodies are checked in aggregate: fewer bytes read than
 * `requests × expectBytes` (bodies alone) counts every answer as an error.
 */
export async function wrkGet(job: GetRateJob, wrk = 'wrk'): Promise<JobResult> {
  const seconds = Math.max(1, Math.round(job.durationMs / 1000));
  const args = ['-t1', `-c${job.concurrency}`, `-d${seconds}s`, '--timeout', TIMEOUT, '-s', GET_LUA, `http://127.0.0.1:${job.port}${job.path}`];
  const run = await runWrk(wrk, args, seconds);
  const w = run.report;
  const result = toResult(w, job.expectBytes, run.cpuSeconds, run.wallSeconds);
  if (w.bytes !== undefined && w.bytes < w.requests * job.expectBytes) {
    result.errors = w.requests;
    result.ok = 0;
    result.bytes = 0;
    result.firstError = `wrk read ${w.bytes} bytes in ${w.requests} answers, short of ${job.expectBytes}-byte bodies${result.firstError ? `; ${result.firstError}` : ''}`;
  }
  return result;
}

/**
 * Spawns wrk with `args` (a run of `seconds`) and parses the `JSON {…}` line its script's done() prints.
 * `cpuSeconds`: wrk's CPU (user + system, all threads), read once wrk has exited as the cutime + cstime this
 * process gained when Node reaped it — exact, provided no other child of the bench exits during the run (none does
 * in the phases that use wrk). Rejects when wrk cannot start, exits non-zero or prints no report.
 */
function runWrk(wrk: string, args: string[], seconds: number): Promise<{ report: WrkReport; cpuSeconds: number; wallSeconds: number }> {
  return new Promise((resolve, reject) => {
    const cpu0 = reapedChildrenCpuSeconds(process.pid);
    const start = performance.now();
    const child = spawn(wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    // wrk stops itself after `seconds`; this only guards against a hang.
    const guard = setTimeout(() => child.kill('SIGKILL'), (seconds + 60) * 1000);
    child.on('error', (err) => {
      clearTimeout(guard);
      reject(new Error(`wrk could not start: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      const wallSeconds = (performance.now() - start) / 1000;
      const cpuSeconds = reapedChildrenCpuSeconds(process.pid) - cpu0;
      const line = stdout.split('\n').find((l) => l.startsWith('JSON '));
      if (code !== 0 || !line) {
        const out = `${stderr}${stdout}`.trim().split('\n').slice(-5).join(' / ');
        return reject(new Error(`wrk ${args.join(' ')}: exit ${signal ?? code}${line ? '' : ', no report'}: ${out}`));
      }
      try {
        resolve({ report: JSON.parse(line.slice('JSON '.length)) as WrkReport, cpuSeconds, wallSeconds });
      } catch (err) {
        reject(new Error(`wrk's report is not JSON (${(err as Error).message}): ${line}`));
      }
    });
  });
}

/** wrk's report as a JobResult (see wrkUpload). */
function toResult(w: WrkReport, size: number, cpuSeconds: number, wallSeconds: number): JobResult {
  const ok = w.requests - w.non2xx;
  const socket = w.connect + w.read + w.write + w.timeout;
  const result: JobResult = {
    ok,
    errors: w.non2xx + socket,
    bytes: ok * size,
    elapsedMs: w.duration / 1000,
    clientCores: wallSeconds > 0 ? cpuSeconds / wallSeconds : 0,
  };
  const problems = [
    ...(w.firstError !== null ? [`${w.non2xx} answers not 2xx, the first ${w.firstError}`] : []),
    ...(socket > 0 ? [`wrk: ${w.connect} connect, ${w.read} read, ${w.write} write errors, ${w.timeout} timeouts (> ${TIMEOUT})`] : []),
  ];
  if (problems.length > 0) result.firstError = problems.join('; ');
  if (w.requests > 0) result.latency = { p50: w.p50 / 1000, p99: w.p99 / 1000, mean: w.mean / 1000, max: w.max / 1000 };
  return result;
}
