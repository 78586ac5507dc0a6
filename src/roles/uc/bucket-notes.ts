/**
 * Bucket tags, remark and index-page flag on the uc role (docs/development/kodo-protocol.md §8.6; buckets/tagging.ts,
 * buckets/bucket-notes.ts). Management credential first (the route table's auth step: 401 without one, before anything else), then the
 * parameters (400), then the bucket (631 missing, 403 another account's). Success without a result: 200 `{}`.
 * - `PUT /bucketTagging?bucket=<b>` with `{"Tags":[{"Key","Value"}]}` (JSON): replaces the tags;
 *   `GET /bucketTagging?bucket=<b>` → `{"Tags":[…]}`; `DELETE /bucketTagging?bucket=<b>` removes them
 *   (Go SDK `SetTagging`/`GetTagging`/`ClearTagging`; Python and PHP bucket tagging calls);
 * - `POST /noIndexPage?bucket=<b>&noIndexPage=<0|1>` (query or form; Java `BucketManager.setIndexPage`, Go
 *   `TurnOnIndexPage`/`TurnOffIndexPage`);
 * - `PUT /buckets/<b>?remark` with `{"remark":"…"}` (Go `SetRemark`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseRemark, setBucketRemark, setNoIndexPage } from '../../buckets/bucket-notes.js';
import { parseTagging, setBucketTags, taggingJson } from '../../buckets/tagging.js';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { bodyBuffer, params, requiredParam, sendEmpty, sendJson } from '../../http/wire.js';

/** The buffered body as text; 400 naming `what` when there is none (no body, or a Content-Type that streams). */
function bodyText(request: FastifyRequest, what: string): string {
  const body = bodyBuffer(request);
  if (!body || body.length === 0) throw Errors.badRequest(`${what}: a JSON body (Content-Type: application/json) is required`);
  return body.toString('utf8');
}

type Call = RouteCall<Granary, Caller>;

/** `PUT /bucketTagging`: the tags checked before the bucket. */
export async function putBucketTagging(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const name = requiredParam(params(request), 'bucket');
  const tags = parseTagging(bodyText(request, 'bucketTagging'));
  const bucket = await call.authorize(name);
  await setBucketTags(g, bucket.name, tags);
  return sendEmpty(reply);
}

/** `GET /bucketTagging`: the bucket authorised by the auth step. */
export function getBucketTagging(call: Call, _request: FastifyRequest, reply: FastifyReply): unknown {
  return sendJson(reply, 200, taggingJson(call.bucket.settings.tags));
}

/** `DELETE /bucketTagging`: the bucket authorised by the auth step. */
export async function deleteBucketTagging(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await setBucketTags(call.g, call.bucket.name, []);
  return sendEmpty(reply);
}

/** `POST /noIndexPage`: the flag checked before the bucket. */
export async function noIndexPage(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const p = params(request);
  const flag = requiredParam(p, 'noIndexPage');
  if (flag !== '0' && flag !== '1') throw Errors.badRequest(`noIndexPage must be 0 or 1, got ${JSON.stringify(flag)}`);
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await setNoIndexPage(g, bucket.name, flag === '1');
  return sendEmpty(reply);
}

/** `PUT /buckets/:bucket`: the remark checked before the bucket. */
export async function putBucketRemark(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  if (!params(request).has('remark')) throw Errors.badRequest('expected PUT /buckets/<bucket>?remark');
  const remark = parseRemark(bodyText(request, 'remark'));
  const bucket = await call.authorize((request.params as { bucket: string }).bucket);
  await setBucketRemark(g, bucket.name, remark);
  return sendEmpty(reply);
}
