/**
 * Pipelines: named job queues, each with its own concurrency (jobs of it running at once; 0 pauses it).
 * `0.default` always exists (created at start with GRANARY_JOB_CONCURRENCY) and takes the jobs that name no
 * pipeline. Names: 1–64 characters of `[A-Za-z0-9._-]`. Created and listed with the CLI (`granary pipeline
 * create|list`) and the management calls `POST /pipelines/<name>[?concurrency=n]` and `GET /pipelines`.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { PipelineRecord } from '../ports/job-queue.js';

/** The shared default pipeline. */
export const DEFAULT_PIPELINE = '0.default';

const NAME_RE = /^[A-Za-z0-9._-]{1,64}$/;
/** Largest concurrency of one pipeline. */
export const MAX_PIPELINE_CONCURRENCY = 64;

/** 400 unless `name` is a valid pipeline name. */
export function checkPipelineName(name: string): void {
  if (!NAME_RE.test(name)) throw Errors.badPipelineName(`${JSON.stringify(name.slice(0, 80))}: 1-64 characters of A-Z a-z 0-9 . _ -`);
}

/** Parses a concurrency text: an integer 0..64, else 400. */
export function parseConcurrency(text: string): number {
  const n = /^\d{1,3}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_PIPELINE_CONCURRENCY) {
    throw Errors.badRequest(`concurrency must be an integer from 0 to ${MAX_PIPELINE_CONCURRENCY}`);
  }
  return n;
}

/** Makes sure `0.default` exists (at start; also before listing). */
export async function ensureDefaultPipeline(g: Granary): Promise<void> {
  await g.jobs.ensurePipeline(DEFAULT_PIPELINE, g.config.jobConcurrency, g.clock.nowMs());
}

/**
 * Creates a pipeline (concurrency `concurrency`, default GRANARY_JOB_CONCURRENCY) or, when it exists, changes its
 * concurrency (unchanged when undefined). A running worker picks the change up at once.
 */
export async function putPipeline(g: Granary, name: string, concurrency?: number): Promise<{ result: 'created' | 'updated'; pipeline: PipelineRecord }> {
  checkPipelineName(name);
  const existing = await g.jobs.getPipeline(name);
  const value = concurrency ?? existing?.concurrency ?? g.config.jobConcurrency;
  const result = await g.jobs.putPipeline(name, value, g.clock.nowMs());
  return { result, pipeline: (await g.jobs.getPipeline(name)) as PipelineRecord };
}

/** Every pipeline (`0.default` included). */
export async function listPipelines(g: Granary): Promise<PipelineRecord[]> {
  await ensureDefaultPipeline(g);
  return g.jobs.listPipelines();
}
