/**
 * A/B of two versions of Granary on the same bench phases, in alternating runs.
 *
 *   npx tsx bench/ab.ts <git-ref> [--runs=3] [run.ts options, e.g. --only=resumable --workers=2]
 *
 * Version A is `<git-ref>`, checked out into a temporary git worktree (sharing this checkout's node_modules);
 * version B is this working tree, uncommitted changes included. Each of the `--runs` rounds runs `bench/run.ts`
 * with the given options once per version, the order alternating (A B, B A, A B, …): this VM's speed drifts by
 * ±30% within a minute and its disk's by more, so one run of each, or a run against a figure in the README, cannot
 * tell a 10% change from noise (bench/README.md "Comparing two versions").
 *
 * Output: for every metric of the summary table whose Granary column is a number (the first number of the cell:
 * ops/s, MB/s, ms, …), the per-run values of A and B, their medians and B / A. The runs' full output goes to
 * `<tmp>/ab-<n>-<A|B>.log` (paths printed). This tree's bench/results.json is restored at the end.
 */
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, table } from './lib/table.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const ref = args.find((a) => !a.startsWith('--'));
const runsArg = args.find((a) => a.startsWith('--runs='));
const runs = runsArg ? Number(runsArg.slice('--runs='.length)) : 3;
const passThrough = args.filter((a) => a !== ref && a !== runsArg);
if (!ref || !Number.isInteger(runs) || runs < 1) {
  process.stderr.write('usage: npx tsx bench/ab.ts <git-ref> [--runs=N] [bench/run.ts options]\n');
  process.exit(2);
}

type Version = 'A' | 'B';
/** metric → the Granary figure of each run, per version. */
const figures = new Map<string, Record<Version, number[]>>();

/** The first number of a summary cell ("1,854", "13.9 / 16.5, 1%", "0.29× fs"), or undefined. */
function leadingNumber(cell: unknown): number | undefined {
  const m = typeof cell === 'string' ? /^\s*(-?[\d,]*\.?\d+)/.exec(cell) : undefined;
  return m?.[1] !== undefined ? Number(m[1].replace(/,/g, '')) : undefined;
}

/** Runs bench/run.ts in `tree` with the pass-through options; its output goes to `logPath`. */
function runBench(tree: string, logPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = createWriteStream(logPath);
    const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), ['bench/run.ts', ...passThrough], { cwd: tree, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', reject);
    child.on('close', (code) => {
      log.end();
      if (code === 0) resolve();
      else reject(new Error(`bench/run.ts in ${tree} exited with ${code}; see ${logPath}`));
    });
  });
}

async function collect(tree: string, version: Version): Promise<void> {
  const doc = JSON.parse(await readFile(join(tree, 'bench', 'results.json'), 'utf8')) as { summary?: Array<Record<string, unknown>> };
  let parent = '';
  for (const row of doc.summary ?? []) {
    if (typeof row.metric !== 'string') continue;
    // An indented row details the row above it ("  mkfile call: …" under each resumable mode): named after both.
    const indented = row.metric.startsWith(' ');
    if (!indented) parent = row.metric;
    const value = leadingNumber(row.granary);
    if (value === undefined) continue;
    const name = indented ? `${parent.replace(/ \(.*$/, '')} › ${row.metric.trim()}` : row.metric;
    const entry = figures.get(name) ?? { A: [], B: [] };
    entry[version].push(value);
    figures.set(name, entry);
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const ownResults = join(root, 'bench', 'results.json');
const savedResults = await readFile(ownResults, 'utf8').catch(() => undefined);
const tmp = await mkdtemp(join(os.tmpdir(), 'granary-ab-'));
const worktree = join(tmp, 'A');
execFileSync('git', ['worktree', 'add', '--detach', worktree, ref], { cwd: root, stdio: 'ignore' });
try {
  await symlink(join(root, 'node_modules'), join(worktree, 'node_modules'));
  const trees: Record<Version, string> = { A: worktree, B: root };
  process.stdout.write(`A = ${ref} (${execFileSync('git', ['rev-parse', '--short', ref], { cwd: root }).toString().trim()}), B = this tree; ${runs} runs of bench/run.ts ${passThrough.join(' ')}\n`);
  for (let i = 0; i < runs; i++) {
    const order: Version[] = i % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
    for (const v of order) {
      const logPath = join(tmp, `ab-${i + 1}-${v}.log`);
      const started = Date.now();
      await runBench(trees[v], logPath);
      await collect(trees[v], v);
      process.stdout.write(`  run ${i + 1} ${v}: ${fmt((Date.now() - started) / 1000)} s (${logPath})\n`);
    }
  }
  const rows = [...figures].map(([metric, f]) => {
    const a = median(f.A);
    const b = median(f.B);
    return [metric, f.A.map((x) => fmt(x, 1)).join(' '), f.B.map((x) => fmt(x, 1)).join(' '), fmt(a, 1), fmt(b, 1), a ? `${fmt(b / a, 2)}×` : ''];
  });
  process.stdout.write(`\n${table(['metric (Granary column)', 'A runs', 'B runs', 'A median', 'B median', 'B / A'], rows)}\n`);
  process.stdout.write('Figures are the first number of each summary cell (for "mean / max" cells, the mean).\n');
} finally {
  execFileSync('git', ['worktree', 'remove', '--force', worktree], { cwd: root, stdio: 'ignore' });
  if (savedResults !== undefined) await writeFile(ownResults, savedResults);
  process.stdout.write(`Logs kept in ${tmp}\n`);
}
