/**
 * Fops on download URLs (protocol.md §10.1): runs the pipeline on the (already authorised) object through
 * fops/execute.ts and sends the result: JSON with `Cache-Control: no-store`, images (in memory or a temp file)
 * with their content type.
 */
import { createReadStream } from 'node:fs';
import type { FastifyReply } from 'fastify';
import type { Granary } from '../../context.js';
import { executeFops } from '../../fops/execute.js';
import { parsePipeline } from '../../fops/registry.js';
import type { BucketRecord, ObjectRecord } from '../../store/meta.js';

export async function serveFop(g: Granary, bucket: BucketRecord, rec: ObjectRecord, pipeline: string, reply: FastifyReply): Promise<FastifyReply> {
  const stages = parsePipeline(pipeline);
  const run = await executeFops(g, bucket, rec, stages);
  const { result } = run;
  if ('json' in result) {
    await run.dispose();
    return reply.code(200).header('content-type', 'application/json').header('cache-control', 'no-store').send(JSON.stringify(result.json));
  }
  reply.code(200).header('content-type', result.contentType);
  reply.header('cache-control', bucket.private ? 'private, max-age=0' : 'public, max-age=31536000');
  if ('body' in result) {
    await run.dispose();
    return reply.header('content-length', String(result.body.length)).send(result.body);
  }
  const stream = createReadStream(result.file);
  stream.once('close', () => void run.dispose());
  return reply.header('content-length', String(result.size)).send(stream);
}
