/**
 * Bucket tags, remark and index-page flag on the uc role (docs/development/kodo-protocol.md §8.6; buckets/tagging.ts,
 * buckets/bucket-notes.ts). Management credential first (401 without one, before anything else), then the
 * parameters (400), then the bucket (631 missing, 403 another account's). Success without a result: 200 `{}`.
 * - `PUT /bucketTagging?bucket=<b>` with `{"Tags":[{"Key","Value"}]}` (JSON): replaces the tags;
 *   `GET /bucketTagging?bucket=<b>` → `{"Tags":[…]}`; `DELETE /bucketTagging?bucket=<b>` removes them
 *   (Go SDK `SetTagging`/`GetTagging`/`ClearTagging`; Python and PHP bucket tagging calls);
 * - `POST /noIndexPage?bucket=<b>&noIndexPage=<0|1>` (query or form; Java `BucketManager.setIndexPage`, Go
 *   `TurnOnIndexPage`/`TurnOffIndexPage`);
 * - `PUT /buckets/<b>?remark` with `{"remark":"…"}` (Go `SetRemark`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeBucket } from '../../auth/authorize.js';
import { parseRemark, setBucketRemark, setNoIndexPage } from '../../buckets/bucket-notes.js';
import { parseTagging, setBucketTags, taggingJson } from '../../buckets/tagging.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { bodyBuffer, params, requiredParam, requireManagement, sendEmpty, sendJson } from '../http.js';

/** The buffered body as text; 400 naming `what` when there is none (no body, or a Content-Type that streams). */
function bodyText(request: FastifyRequest, what: string): string {
  const body = bodyBuffer(request);
  if (!body || body.length === 0) throw Errors.badRequest(`${what}: a JSON body (Content-Type: application/json) is required`);
  return body.toString('utf8');
}

/** Registers the bucket tags, remark and index-page routes. */
export function registerBucketNotes(app: FastifyInstance, g: Granary): void {
  app.put('/bucketTagging', async (request, reply) => {
    const caller = requireManagement(g, request);
    const name = requiredParam(params(request), 'bucket');
    const tags = parseTagging(bodyText(request, 'bucketTagging'));
    const bucket = await authorizeBucket(g, caller.accessKey, name);
    await setBucketTags(g, bucket.name, tags);
    return sendEmpty(reply);
  });

  app.get('/bucketTagging', async (request, reply) => {
    const caller = requireManagement(g, request);
    const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(params(request), 'bucket'));
    return sendJson(reply, 200, taggingJson(bucket.settings.tags));
  });

  app.delete('/bucketTagging', async (request, reply) => {
    const caller = requireManagement(g, request);
    const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(params(request), 'bucket'));
    await setBucketTags(g, bucket.name, []);
    return sendEmpty(reply);
  });

  app.post('/noIndexPage', async (request, reply) => {
    const caller = requireManagement(g, request);
    const p = params(request);
    const flag = requiredParam(p, 'noIndexPage');
    if (flag !== '0' && flag !== '1') throw Errors.badRequest(`noIndexPage must be 0 or 1, got ${JSON.stringify(flag)}`);
    const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(p, 'bucket'));
    await setNoIndexPage(g, bucket.name, flag === '1');
    return sendEmpty(reply);
  });

  app.put('/buckets/:bucket', async (request, reply) => {
    const caller = requireManagement(g, request);
    if (!params(request).has('remark')) throw Errors.badRequest('expected PUT /buckets/<bucket>?remark');
    const remark = parseRemark(bodyText(request, 'remark'));
    const bucket = await authorizeBucket(g, caller.accessKey, (request.params as { bucket: string }).bucket);
    await setBucketRemark(g, bucket.name, remark);
    return sendEmpty(reply);
  });
}
