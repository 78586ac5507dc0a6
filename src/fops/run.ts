/**
 * Runs a parsed pipeline: each stage's output is the next stage's input; a JSON result ends the pipeline.
 * Image work goes through one process-wide semaphore (size = cores).
 */
import { availableParallelism } from 'node:os';
import sharp from 'sharp';
import { Errors } from '../errors.js';
import { commandOf } from './registry.js';
import { Semaphore } from './semaphore.js';
import type { FopLimits, FopResult, FopStage } from './types.js';

const slots = new Semaphore(Math.max(1, availableParallelism()));
let configured = false;

/** libvips settings, once per process: one thread per operation (the semaphore provides parallelism), no cache. */
export function configureImageWork(): void {
  if (configured) return;
  configured = true;
  sharp.concurrency(1);
  sharp.cache(false);
}

/** Runs `stages` on `source`; a JSON-producing stage that is not the last is a 400. */
export async function runPipeline(stages: FopStage[], source: Buffer, contentType: string, limits: FopLimits): Promise<FopResult> {
  configureImageWork();
  return slots.run(async () => {
    let current: FopResult = { body: source, contentType };
    for (const [i, stage] of stages.entries()) {
      if (!('body' in current)) throw Errors.badRequest(`${stages[i - 1]?.name ?? 'fop'}: its JSON output cannot be processed further`);
      const cmd = commandOf(stage.name);
      if (!cmd) throw Errors.badRequest(`${stage.name}: unknown command`);
      current = await cmd.run(current.body, stage.params, limits);
    }
    return current;
  });
}
