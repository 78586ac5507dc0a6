/**
 * Runs a parsed pipeline: each stage's output is the next stage's input; a JSON result ends the pipeline.
 * Each stage runs in its command's bounded pool (`FopCommand.pool`): `image` (libvips, GRANARY_FOP_CONCURRENCY
 * slots), `video` (subprocesses, GRANARY_VIDEO_CONCURRENCY) and `model` (moderation, 1), so one heavy request
 * cannot starve uploads and downloads.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Errors } from '../errors.js';
import { commandOf } from './registry.js';
import type { FopPools } from './pools.js';
import type { FopContext, FopResult, FopSource, FopStage } from './types.js';
/** Wraps a stage's in-memory output as the next stage's source. */
export function bufferSource(body: Buffer, contentType: string, ctx: FopContext): FopSource {
  let path: Promise<string> | undefined;
  return {
    contentType,
    size: body.length,
    bytes: async () => body,
    file: () =>
      (path ??= (async () => {
        const p = ctx.tempFile('');
        await writeFile(p, body);
        return p;
      })()),
  };
}

/** Wraps a stage's temp-file output as the next stage's source. */
export function fileSource(file: string, size: number, contentType: string, ctx: FopContext): FopSource {
  return {
    contentType,
    size,
    bytes: async () => {
      if (size > ctx.limits.maxSourceBytes) {
        throw Errors.imageTooLarge(`fop: intermediate result is ${size} bytes, the limit is ${ctx.limits.maxSourceBytes}`);
      }
      return readFile(file);
    },
    file: async () => file,
  };
}

/** The index of the stage whose failure `err` is (set by runPipeline; persistent jobs report it as `errorIndex`). */
export function failedStageOf(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null ? (err as { fopStage?: number }).fopStage : undefined;
}

/** Runs `stages` on `source`; a JSON-producing stage that is not the last is a 400. A thrown error carries its stage (failedStageOf). */
export async function runPipeline(stages: FopStage[], source: FopSource, ctx: FopContext, pools: Pick<FopPools, 'run'>): Promise<FopResult> {
  let input = source;
  let current: FopResult | undefined;
  for (const [i, stage] of stages.entries()) {
    if (current) {
      if ('json' in current) throw Errors.badRequest(`${stages[i - 1]?.name ?? 'fop'}: its JSON output cannot be processed further`);
      input = 'body' in current ? bufferSource(current.body, current.contentType, ctx) : fileSource(current.file, current.size, current.contentType, ctx);
    }
    const cmd = commandOf(stage.name);
    if (!cmd) throw Errors.badRequest(`${stage.name}: unknown command`);
    if (ctx.signal.aborted) throw Errors.fopFailed(`${stage.name}: processing timed out`);
    const stageInput = input;
    try {
      current = await pools.run(cmd.pool ?? 'image', () => cmd.run(stageInput, stage.params, ctx));
    } catch (err) {
      if (typeof err === 'object' && err !== null) (err as { fopStage?: number }).fopStage ??= i;
      throw err;
    }
  }
  if (!current) throw Errors.badRequest('fop: empty pipeline');
  return current;
}
