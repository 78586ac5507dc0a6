/** `granary scrub`: checks every stored blob against its checksums (objects/scrub.ts); exit status 2 when corrupt. */
import type { Command } from 'commander';
import { scrubPass } from '../objects/scrub.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `scrub`. */
export function addScrubCommand(program: Command): void {
  withDataDir(program.command('scrub').description('check every stored blob against its checksums and report corrupt entries (exit status 2 when any)'))
    .option('--rate <bytes>', 'read at most this many bytes per second (default: as fast as the disk allows)')
    .option('--json', 'print the report as one JSON document')
    .action((opts: Opts & { json?: boolean }) =>
      offline(opts, async (g) => {
        const rate = opts.rate === undefined ? undefined : Number(opts.rate);
        if (rate !== undefined && (!Number.isSafeInteger(rate) || rate < 1)) throw new Error('--rate must be a positive integer (bytes per second)');
        const started = Date.now();
        const r = await scrubPass(g, rate ? { bytesPerSecond: rate } : {});
        const seconds = (Date.now() - started) / 1000;
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ blobs: r.blobs, bytes: r.bytes, upgraded: r.upgraded, seconds, corrupt: r.corrupt })}\n`);
        } else {
          for (const f of r.corrupt) {
            const what = f.bucket !== undefined ? `${f.bucket}:${f.key ?? ''}` : `blob ${f.blobId}`;
            process.stdout.write(`corrupt\t${what}\t${f.reason}\n`);
          }
          const mbps = seconds > 0 ? (r.bytes / 1e6 / seconds).toFixed(1) : '-';
          process.stdout.write(
            `scrubbed ${r.blobs} blobs, ${r.bytes} bytes in ${seconds.toFixed(1)} s (${mbps} MB/s): ${r.corrupt.length} corrupt, ${r.upgraded} given checksums\n`,
          );
        }
        if (r.corrupt.length > 0) process.exitCode = 2;
      }),
    );
}
