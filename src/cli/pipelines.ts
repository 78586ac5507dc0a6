/** `pipeline create|list`: named queues of persistent processing. */
import type { Command } from 'commander';
import { listPipelines, parseConcurrency, putPipeline } from '../jobs/pipelines.js';
import { offline, withDataDir, type Opts } from './context.js';

/** Adds `pipeline …`. */
export function addPipelineCommands(program: Command): void {
  const pipeline = program.command('pipeline').description('job pipelines (named queues of persistent processing)');
  withDataDir(pipeline.command('create <name>').description('create a pipeline, or change its concurrency'))
    .option('--concurrency <n>', 'jobs of it running at once, 0..64 (0 pauses it; default GRANARY_JOB_CONCURRENCY)')
    .action((name: string, opts: Opts) =>
      offline(opts, async (g) => {
        const concurrency = opts.concurrency === undefined ? undefined : parseConcurrency(opts.concurrency);
        const { result, pipeline: p } = await putPipeline(g, name, concurrency);
        process.stdout.write(`${result} pipeline ${p.name} (concurrency ${p.concurrency})\n`);
      }),
    );
  withDataDir(pipeline.command('list').description('list pipelines: name and concurrency')).action(
    (opts: Opts) =>
      offline(opts, async (g) => {
        for (const p of await listPipelines(g)) process.stdout.write(`${p.name}\t${p.concurrency}\n`);
      }),
  );

}
