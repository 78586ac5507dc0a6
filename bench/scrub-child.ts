/**
 * One measured read of a whole Granary data dir, in a process of its own (phase `scrub` of bench/run.ts, forked
 * through lib/child.ts `runOneShot`). Two modes:
 *
 * - `scrub <dataDir>`: `granary scrub --data-dir <dataDir> --json`, through the CLI's own entry point (`main` of
 *   src/cli.ts, what bin/granary.js calls): opens the stores, runs `scrubPass` over every blob, prints its report.
 * - `raw <dataDir>`: the floor — every file under `<dataDir>/blobs`, one after another, read with
 *   `fs.createReadStream` in 512 KiB chunks (Granary's own blob read size) and the bytes dropped.
 *
 * Modules are loaded before the clock starts, so both figures leave out Node's start-up. Sends
 * `{type: 'result', ms, bytes, files, cpuSeconds, report}` and stays alive until the parent disconnects, so the
 * parent can still read this process's /proc entries.
 */
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { main } from '../src/cli.js';

const RAW_CHUNK_BYTES = 512 * 1024;

async function* files(dir: string): AsyncGenerator<string> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* files(path);
    else if (e.isFile()) yield path;
  }
}

/** Reads every blob file, sequentially; returns the byte and file counts. */
async function rawRead(dataDir: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let count = 0;
  for await (const path of files(join(dataDir, 'blobs'))) {
    for await (const chunk of createReadStream(path, { highWaterMark: RAW_CHUNK_BYTES })) bytes += (chunk as Buffer).length;
    count++;
  }
  return { bytes, files: count };
}

/** Runs the CLI's scrub with its stdout captured (one JSON line); returns its report. */
async function scrub(dataDir: string): Promise<{ bytes: number; files: number; report: Record<string, unknown> }> {
  let out = '';
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array): boolean => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof process.stdout.write;
  try {
    await main(['node', 'granary', 'scrub', '--data-dir', dataDir, '--json']);
  } finally {
    process.stdout.write = write;
  }
  if (process.exitCode !== undefined && process.exitCode !== 0) throw new Error(`granary scrub exited ${process.exitCode}: ${out.slice(0, 500)}`);
  const report = JSON.parse(out) as { blobs: number; bytes: number; corrupt: unknown[] };
  if (report.corrupt.length > 0) throw new Error(`granary scrub found corrupt entries: ${out.slice(0, 500)}`);
  return { bytes: report.bytes, files: report.blobs, report };
}

const [mode, dataDir] = process.argv.slice(2);
try {
  if (!dataDir || (mode !== 'scrub' && mode !== 'raw')) throw new Error('usage: scrub-child.js scrub|raw <dataDir>');
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  const r = mode === 'scrub' ? await scrub(dataDir) : await rawRead(dataDir);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  process.send?.({ type: 'result', ms, cpuSeconds: (cpu.user + cpu.system) / 1e6, ...r });
} catch (err) {
  process.send?.({ type: 'result', error: err instanceof Error ? err.message : String(err) });
}
process.on('disconnect', () => process.exit(0));
