/**
 * Fops on download URLs (protocol.md §10.1): reads the (already authorised) object, runs the pipeline and
 * sends the result: JSON with `Cache-Control: no-store`, images with their content type.
 */
import type { FastifyReply } from 'fastify';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { parsePipeline } from '../../fops/registry.js';
import { runPipeline } from '../../fops/run.js';
import type { FopLimits } from '../../fops/types.js';
import type { ObjectRecord } from '../../store/meta.js';

/** Seconds one libvips operation may run. */
const FOP_TIMEOUT_SECONDS = 30;

export async function serveFop(g: Granary, rec: ObjectRecord, pipeline: string, isPrivate: boolean, reply: FastifyReply): Promise<FastifyReply> {
  const stages = parsePipeline(pipeline);
  const max = g.config.fopMaxSourceBytes;
  if (rec.fsize > max) throw Errors.imageTooLarge(`${stages[0]?.name ?? 'fop'}: source is ${rec.fsize} bytes, the limit is ${max}`);
  const source = await g.blobs.readSmall(rec.blobId, rec.fsize);
  const limits: FopLimits = { maxSide: g.config.fopMaxSide, maxPixels: g.config.fopMaxPixels, timeoutSeconds: FOP_TIMEOUT_SECONDS };
  const result = await runPipeline(stages, source, rec.mimeType, limits);
  if ('json' in result) {
    return reply.code(200).header('content-type', 'application/json').header('cache-control', 'no-store').send(JSON.stringify(result.json));
  }
  reply.code(200).header('content-type', result.contentType).header('content-length', String(result.body.length));
  reply.header('cache-control', isPrivate ? 'private, max-age=0' : 'public, max-age=31536000');
  return reply.send(result.body);
}
