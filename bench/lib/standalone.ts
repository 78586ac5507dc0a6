/**
 * What the processing benches (bench/images.ts, jobs.ts, nrop.ts, video.ts) share: their options, the
 * environment of the Granary child they start, and running one on its own (`npx tsx bench/<name>.ts [--quick]`).
 * bench/run.ts calls their `run` after the core phases.
 */
import { fileURLToPath } from 'node:url';

/** Options of a processing bench. */
export interface BenchOptions {
  /** Short phases, to try the harness. */
  quick: boolean;
  log: (line: string) => void;
}

/** A processing bench: returns its figures (units in the field names). */
export type BenchRun = (opts: BenchOptions) => Promise<Record<string, unknown>>;

/** The environment of a bench's Granary child: loopback, port 0, fixed root keys, quiet logs, one bucket. */
export function benchServerEnv(dataDir: string, keys: { accessKey: string; secretKey: string; bucket: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    GRANARY_PORT: '0',
    GRANARY_HOST: '127.0.0.1',
    GRANARY_DATA_DIR: dataDir,
    GRANARY_ACCESS_KEY: keys.accessKey,
    GRANARY_SECRET_KEY: keys.secretKey,
    GRANARY_LOG_LEVEL: 'warn',
    BENCH_BUCKET: keys.bucket,
    ...extra,
  };
}

/** Runs `run` and prints its figures when the module at `metaUrl` is the process's entry point. */
export async function runIfMain(metaUrl: string, run: (opts: BenchOptions & { argv: string[] }) => Promise<Record<string, unknown>>): Promise<void> {
  if (!process.argv[1] || fileURLToPath(metaUrl) !== process.argv[1]) return;
  const argv = process.argv.slice(2);
  const figures = await run({ quick: argv.includes('--quick'), log: (line) => console.log(line), argv });
  console.log(JSON.stringify(figures, null, 2));
}
