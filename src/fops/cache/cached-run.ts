/**
 * Fops on download URLs through the derived-result cache (fop-cache.ts): a result is identified by the bucket,
 * the source object's hash and the pipeline text, so overwriting the object (a new hash) gives a fresh result,
 * and the same pipeline on the same bytes is computed once. JSON results (imageInfo, exif, …) are never cached.
 * Concurrent identical requests share one computation. No HTTP here: roles/io/fop.ts serves the outcome.
 */
import { createHash } from 'node:crypto';
import type { Granary } from '../../context.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { executeFops, type FopRun } from '../execute.js';
import { commandOf } from '../registry.js';
import type { FopStage } from '../types.js';
import type { CacheHit } from './fop-cache.js';

/**
 * What a fop request produced:
 * - `json`: a JSON document (never cached);
 * - `file`: an open cache entry (`cache` says whether this request computed it: `miss`, or not: `hit`);
 * - `direct`: a run's own result, not cached (cache disabled, or larger than the whole cache): serve
 *   `run.result`, then `run.dispose()`.
 */
export type FopOutcome =
  | { kind: 'json'; json: unknown }
  | { kind: 'file'; cache: 'hit' | 'miss'; hit: CacheHit }
  | { kind: 'direct'; run: FopRun };

/** The strong ETag of a non-JSON fop result: the source hash and a digest of the pipeline text (quoted). */
export function fopEtag(sourceHash: string, pipeline: string): string {
  return `"${sourceHash}.${createHash('sha256').update(pipeline).digest('hex').slice(0, 20)}"`;
}

/** The cache id of a result: SHA-256 (hex) of bucket, source hash and pipeline text. */
export function fopCacheId(bucket: string, sourceHash: string, pipeline: string): string {
  return createHash('sha256').update(`${bucket}\n${sourceHash}\n${pipeline}`).digest('hex');
}

/** Whether a cached result for this request exists (for a 304 without any work). */
export function isCached(g: Granary, bucket: BucketRecord, rec: ObjectRecord, pipeline: string): boolean {
  return g.fopCache?.has(fopCacheId(bucket.name, rec.hash, pipeline)) ?? false;
}

type Shared = { kind: 'json'; json: unknown } | { kind: 'stored' } | { kind: 'uncached'; run: FopRun };

/**
 * Runs `stages` (parsed from `pipeline`) on `rec`, through the cache. Throws the run's Kodo errors (shared by
 * the concurrent requests of one computation).
 */
export async function runCached(g: Granary, bucket: BucketRecord, rec: ObjectRecord, pipeline: string, stages: FopStage[]): Promise<FopOutcome> {
  const cache = g.fopCache;
  // A result that depends on the moment (pm3u8's signed URLs) is computed for each request.
  if (stages.some((s) => commandOf(s.name)?.volatile === true)) return { kind: 'direct', run: await executeFops(g, bucket, rec, stages) };
  if (!cache?.enabled) return { kind: 'direct', run: await executeFops(g, bucket, rec, stages) };
  const id = fopCacheId(bucket.name, rec.hash, pipeline);
  const hit = await cache.get(id);
  if (hit) return { kind: 'file', cache: 'hit', hit };
  let computed = false;
  const shared = await cache.singleFlight(id, async (): Promise<Shared> => {
    computed = true;
    const run = await executeFops(g, bucket, rec, stages);
    const { result } = run;
    if ('json' in result) {
      await run.dispose();
      return { kind: 'json', json: result.json };
    }
    const stored = await cache
      .put(id, 'body' in result ? { body: result.body } : { file: result.file }, result.contentType)
      .catch(() => false);
    if (!stored) return { kind: 'uncached', run };
    await run.dispose();
    return { kind: 'stored' };
  });
  if (shared.kind === 'json') return shared;
  if (shared.kind === 'uncached') {
    // Only the computing request may use (and dispose) that run; the others compute their own.
    return computed ? { kind: 'direct', run: shared.run } : { kind: 'direct', run: await executeFops(g, bucket, rec, stages) };
  }
  const entry = await cache.get(id);
  if (entry) return { kind: 'file', cache: computed ? 'miss' : 'hit', hit: entry };
  // Evicted between the store and this read (a cache far too small for its load): compute uncached.
  return { kind: 'direct', run: await executeFops(g, bucket, rec, stages) };
}
