/**
 * Fops on download URLs (docs/development/kodo-protocol.md §10.1): runs the pipeline on the (already authorised) object through the
 * derived-result cache (fops/cache/cached-run.ts) and sends the result:
 * - JSON: `Cache-Control: no-store`, never cached;
 * - images and other bytes: the content type, `Content-Length`, a strong `ETag` (source hash + pipeline),
 *   `Cache-Control` like downloads (the bucket's max-age; bucket-settings.ts), `X-Granary-Cache: hit|miss`
 *   (`bypass` when the cache is off or the result does not fit it), streamed from the cache file; `If-None-Match` → 304;
 * - a failure of a pipeline carrying `/ignore-error/1` (bad image, limits, decoding): the original object,
 *   `Cache-Control: no-store`, `X-Granary-Fop-Ignored-Error: <status>`.
 */
import { createReadStream } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { fopEtag, isCached, runCached } from '../../fops/cache/cached-run.js';
import { ignoresErrors, parsePipeline } from '../../fops/registry.js';
import { readObject } from '../../objects/verified-read.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { downloadCacheControl } from './bucket-settings.js';
import { notModified } from '../../http/range.js';

const CACHE_HEADER = 'x-granary-cache';

/** Serves the fop `pipeline` (percent-decoded query text) on `rec`. Throws Kodo errors (4xx JSON). */
export async function serveFop(
  g: Granary,
  bucket: BucketRecord,
  rec: ObjectRecord,
  pipeline: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const stages = parsePipeline(pipeline);
  const etag = fopEtag(rec.hash, pipeline);
  const isHead = request.method === 'HEAD';
  const cacheHeaders = (cache: string): FastifyReply => {
    g.metrics?.fopCache.inc({ result: cache });
    return reply
      .header('etag', etag)
      .header('cache-control', downloadCacheControl(g, bucket, request))
      .header(CACHE_HEADER, cache);
  };
  const imageHeaders = (contentType: string, cache: string): FastifyReply => cacheHeaders(cache).header('content-type', contentType);
  const unchanged = notModified({ 'if-none-match': request.headers['if-none-match'] }, etag.slice(1, -1), 0);

  // A result we hold is not recomputed to answer a revalidation.
  if (unchanged && isCached(g, bucket, rec, pipeline)) return cacheHeaders('hit').code(304).send();

  let outcome;
  try {
    outcome = await runCached(g, bucket, rec, pipeline, stages);
  } catch (err) {
    if (!ignoresErrors(stages) || !isKodoError(err)) throw err;
    return serveOriginal(g, rec, err.status, isHead, reply);
  }
  if (outcome.kind === 'json') {
    return reply.code(200).header('content-type', 'application/json').header('cache-control', 'no-store').send(JSON.stringify(outcome.json));
  }
  if (outcome.kind === 'file') {
    const { hit } = outcome;
    imageHeaders(hit.contentType, outcome.cache);
    if (unchanged || isHead) {
      if ('stream' in hit) hit.stream.destroy();
      return unchanged ? reply.removeHeader('content-type').code(304).send() : reply.code(200).header('content-length', String(hit.size)).send();
    }
    return reply.code(200).header('content-length', String(hit.size)).send('body' in hit ? hit.body : hit.stream);
  }
  const { run } = outcome;
  const { result } = run;
  if ('json' in result) {
    await run.dispose();
    return reply.code(200).header('content-type', 'application/json').header('cache-control', 'no-store').send(JSON.stringify(result.json));
  }
  imageHeaders(result.contentType, 'bypass');
  if (unchanged || isHead) {
    await run.dispose();
    const size = 'body' in result ? result.body.length : result.size;
    return unchanged ? reply.removeHeader('content-type').code(304).send() : reply.code(200).header('content-length', String(size)).send();
  }
  if ('body' in result) {
    await run.dispose();
    return reply.code(200).header('content-length', String(result.body.length)).send(result.body);
  }
  const stream = createReadStream(result.file);
  stream.once('close', () => void run.dispose());
  return reply.code(200).header('content-length', String(result.size)).send(stream);
}

/** The original object instead of a failed fop with `/ignore-error/1`. */
async function serveOriginal(g: Granary, rec: ObjectRecord, status: number, isHead: boolean, reply: FastifyReply): Promise<FastifyReply> {
  reply
    .code(200)
    .header('content-type', rec.mimeType)
    .header('content-length', String(rec.fsize))
    .header('cache-control', 'no-store')
    .header('x-granary-fop-ignored-error', String(status));
  return isHead ? reply.send() : reply.send(readObject(g, rec));
}
