/**
 * The in-process half of the memory breakdown (bench/footprint.ts): preloaded into every process of a Granary
 * start (`node --import=<this file, transpiled> bin/granary.js serve`; cluster workers inherit the primary's node
 * flags), it changes nothing until the process receives SIGUSR2 (Granary handles no SIGUSR2 itself). Then it
 * writes `<FOOTPRINT_DIR>/<pid>.json` (written to a temp name, then renamed: a reader never sees half a file):
 *
 * - `usage`: `process.memoryUsage()` (rss, heapTotal, heapUsed, external, arrayBuffers; bytes), read first;
 * - `heap`: `v8.getHeapStatistics()` (total/used/malloced/external bytes, native contexts…);
 * - `spaces`: `v8.getHeapSpaceStatistics()` per space (`new_space`, `old_space`, `code_space`…; size, used and
 *   available bytes, `physical` = committed pages);
 * - `scripts`: the JavaScript loaded into the main isolate (the inspector's `Debugger.scriptParsed` for every
 *   script, replayed by `Debugger.enable`), grouped by package (`node_modules/<pkg>`, `granary:<top dir of dist>`,
 *   `node:internal`) with the count and the source characters: what the heap's code, source strings and
 *   metadata scale with;
 * - `threads`: the names of the process's threads (/proc/self/task/<tid>/comm: V8 platform workers, libuv pool,
 *   worker_threads, libvips);
 * - with FOOTPRINT_SNAPSHOT=1, `snapshot`: a heap snapshot's nodes summed by type (code, strings, closures…, self
 *   sizes), the snapshot itself deleted.
 *
 * The memory figures are read before anything else (the inspector session and the snapshot allocate). Only the
 * main thread listens (signals reach no worker thread). Linux only (/proc).
 */
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread } from 'node:worker_threads';

/** Package a script URL belongs to: `sharp`, `@aws-sdk/client-s3`, `granary:s3api`, `node:internal`… */
export function packageOf(url: string): string {
  if (url.startsWith('node:')) return 'node:internal';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? url);
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) {
    const rest = url.slice(dist + '/dist/'.length).split('/');
    return `granary:${rest.length > 1 ? rest[0] : '(top)'}`;
  }
  return url === '' ? '(eval)' : url.startsWith('wasm://') ? 'wasm' : '(other)';
}

/** Scripts of the main isolate grouped by package: count and source characters. */
async function loadedScripts(): Promise<Record<string, { scripts: number; chars: number }>> {
  const session = new Session();
  session.connect();
  const byPackage: Record<string, { scripts: number; chars: number }> = {};
  session.on('Debugger.scriptParsed', ({ params }) => {
    const p = packageOf(params.url);
    const entry = (byPackage[p] ??= { scripts: 0, chars: 0 });
    entry.scripts++;
    entry.chars += params.length ?? 0;
  });
  try {
    await session.post('Debugger.enable');
    await session.post('Debugger.disable');
  } finally {
    session.disconnect();
  }
  return byPackage;
}

/** Thread names (comm) of this process, counted. */
function threads(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    let name = '?';
    try {
      name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    } catch {
      // The thread ended meanwhile.
    }
    out[name] = (out[name] ?? 0) + 1;
  }
  return out;
}

/** A heap snapshot written to `dir`, read back and summed by node type (self sizes, bytes), then removed. */
function snapshotByType(dir: string): Record<string, { count: number; bytes: number }> {
  const file = v8.writeHeapSnapshot(join(dir, `${process.pid}.heapsnapshot`));
  try {
    const snap = JSON.parse(readFileSync(file, 'utf8')) as {
      snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
      nodes: number[];
      strings: string[];
    };
    const fields = snap.snapshot.meta.node_fields;
    const typeNames = snap.snapshot.meta.node_types[0];
    const width = fields.length;
    const typeAt = fields.indexOf('type');
    const sizeAt = fields.indexOf('self_size');
    const nameAt = fields.indexOf('name');
    const out: Record<string, { count: number; bytes: number }> = {};
    for (let i = 0; i < snap.nodes.length; i += width) {
      let type = typeNames[snap.nodes[i + typeAt] ?? 0] ?? '?';
      // Objects by constructor would be thousands of rows: the big built-in kinds only.
      if (type === 'object') {
        const name = snap.strings[snap.nodes[i + nameAt] ?? 0] ?? '';
        if (name === 'Object' || name === 'Array' || name === 'Map' || name === 'Set' || name === 'system / Context') type = `object:${name}`;
      }
      const entry = (out[type] ??= { count: 0, bytes: 0 });
      entry.count++;
      entry.bytes += snap.nodes[i + sizeAt] ?? 0;
    }
    return out;
  } finally {
    rmSync(file, { force: true });
  }
}

/** V8's full collection, as an idle server could run it (FOOTPRINT_GC=1: what it would give back). */
function collect(): void {
  v8.setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

async function report(dir: string): Promise<void> {
  if (process.env.FOOTPRINT_GC === '1') collect();
  const usage = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  const spaces = v8.getHeapSpaceStatistics().map((s) => ({
    space: s.space_name,
    size: s.space_size,
    used: s.space_used_size,
    available: s.space_available_size,
    physical: s.physical_space_size,
  }));
  const out: Record<string, unknown> = { pid: process.pid, argv: process.argv.slice(1), execArgv: process.execArgv, usage, heap, spaces, threads: threads() };
  out.scripts = await loadedScripts();
  if (process.env.FOOTPRINT_SNAPSHOT === '1') out.snapshot = snapshotByType(dir);
  const tmp = join(dir, `.${process.pid}.json.tmp`);
  writeFileSync(tmp, JSON.stringify(out));
  renameSync(tmp, join(dir, `${process.pid}.json`));
}

const dir = process.env.FOOTPRINT_DIR;
if (isMainThread && dir) {
  process.on('SIGUSR2', () => {
    report(dir).catch((err: unknown) => process.stderr.write(`footprint probe: ${(err as Error).message}\n`));
  });
}
