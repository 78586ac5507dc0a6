/**
 * Bench of the transfer CLI (issue 16): 1,000 files of 4 KiB, then one 256 MiB file, uploaded to a Granary child
 * by `granary put` (the real command: form uploads 8 files at a time; the large file as a v2 multipart upload with
 * 4 parts in flight) and by the official SDK called one file at a time (bench/transfer-sdk.ts), in the same run,
 * alternating (SDK then CLI, per data set) on fresh keys. Each figure is the wall time of the whole process,
 * start-up included (what a user waits for), and the tool's own time from its first upload to its last.
 * `--quick`: 200 files and 64 MiB.
 *
 * Standalone: `npx tsx bench/transfer.ts [--quick]` prints the figures as JSON; `npm run bench -- --only=transfer`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transpileForBench } from './lib/build.js';
import { startServer } from './lib/child.js';
import { benchServerEnv, runIfMain } from './lib/standalone.js';

const AK = 'bench-ak';
const SK = 'bench-sk';
const BUCKET = 'transfer-bench';
const MiB = 1024 * 1024;

/** Runs `node <args>` to its end; answers wall seconds and stdout (throws on a non-zero exit). */
function timed(args: string[], env: Record<string, string>): Promise<{ seconds: number; stdout: string }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr.slice(-1000)}`));
      else resolve({ seconds: (performance.now() - t0) / 1000, stdout });
    });
  });
}

export async function run(opts: { quick: boolean; log: (line: string) => void }): Promise<Record<string, unknown>> {
  const { log } = opts;
  const smallCount = opts.quick ? 200 : 1000;
  const largeSize = (opts.quick ? 64 : 256) * MiB;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const buildDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-transfer-build-'));
  const dataDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-transfer-data-'));
  const filesDir = await mkdtemp(join(os.tmpdir(), 'granary-bench-transfer-files-'));
  try {
    await transpileForBench(root, buildDir);
    const cliEntry = join(buildDir, 'cli-entry.js');
    await writeFile(cliEntry, "import { main } from './src/cli.js';\nawait main(process.argv);\n");
    const small = join(filesDir, 'small');
    for (let d = 0; d < 10; d++) await mkdir(join(small, `d${d}`), { recursive: true });
    for (let i = 0; i < smallCount; i++) await writeFile(join(small, `d${i % 10}`, `f${i}.bin`), randomBytes(4096));
    const large = join(filesDir, 'large');
    await mkdir(large);
    await writeFile(join(large, 'large.bin'), randomBytes(largeSize));

    const server = await startServer(buildDir, 'granary-server', benchServerEnv(dataDir, { accessKey: AK, secretKey: SK, bucket: BUCKET }));
    const host = `127.0.0.1:${server.port}`;
    const configDir = join(filesDir, 'config');
    const env = { GRANARY_CONFIG_DIR: configDir };
    try {
      await timed([cliEntry, 'remote', 'add', 'bench', '--ak', AK, '--sk', SK, '--uc-host', host], env);
      const sdk = async (dir: string, prefix: string): Promise<{ wall: number; own: number }> => {
        const r = await timed([join(buildDir, 'bench', 'transfer-sdk.js'), dir, host, AK, SK, BUCKET, prefix], {});
        return { wall: r.seconds, own: (JSON.parse(r.stdout) as { seconds: number }).seconds };
      };
      const cli = async (dir: string, prefix: string): Promise<{ wall: number; own: number }> => {
        const r = await timed([cliEntry, 'put', dir, `bench:${BUCKET}/${prefix}`, '--json'], env);
        const summary = r.stdout
          .split('\n')
          .filter((l) => l.includes('"event":"summary"'))
          .map((l) => JSON.parse(l) as { seconds: number; failed: number; copied: number })[0];
        if (!summary || summary.failed > 0) throw new Error(`granary put failed: ${r.stdout.slice(-500)}`);
        return { wall: r.seconds, own: summary.seconds };
      };
      const line = (what: string, x: { wall: number; own: number }, unit: (s: number) => string): void =>
        log(`${what}: ${x.wall.toFixed(2)} s wall (${unit(x.wall)}), ${x.own.toFixed(2)} s from first to last upload (${unit(x.own)})`);
      const filesPerSecond = (s: number): string => `${(smallCount / s).toFixed(0)} files/s`;
      const mbPerSecond = (s: number): string => `${(largeSize / 1e6 / s).toFixed(1)} MB/s`;

      const sdkSmall = await sdk(small, 'sdk-small/');
      line(`SDK, ${smallCount} × 4 KiB one at a time`, sdkSmall, filesPerSecond);
      const cliSmall = await cli(small, 'cli-small');
      line(`granary put, ${smallCount} × 4 KiB`, cliSmall, filesPerSecond);
      const sdkLarge = await sdk(large, 'sdk-large/');
      line(`SDK, ${largeSize / MiB} MiB (resumable v2, sequential parts)`, sdkLarge, mbPerSecond);
      const cliLarge = await cli(large, 'cli-large');
      line(`granary put, ${largeSize / MiB} MiB (v2, 4 parts in flight)`, cliLarge, mbPerSecond);
      log(`speed-up, wall: small files ${(sdkSmall.wall / cliSmall.wall).toFixed(2)}×, large file ${(sdkLarge.wall / cliLarge.wall).toFixed(2)}×`);
      return {
        smallFiles: smallCount,
        smallFileBytes: 4096,
        largeFileBytes: largeSize,
        sdkSmallWallSeconds: sdkSmall.wall,
        sdkSmallOwnSeconds: sdkSmall.own,
        cliSmallWallSeconds: cliSmall.wall,
        cliSmallOwnSeconds: cliSmall.own,
        sdkLargeWallSeconds: sdkLarge.wall,
        sdkLargeOwnSeconds: sdkLarge.own,
        cliLargeWallSeconds: cliLarge.wall,
        cliLargeOwnSeconds: cliLarge.own,
        smallSpeedup: sdkSmall.wall / cliSmall.wall,
        largeSpeedup: sdkLarge.wall / cliLarge.wall,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await Promise.all([buildDir, dataDir, filesDir].map((d) => rm(d, { recursive: true, force: true })));
  }
}

await runIfMain(import.meta.url, run);
