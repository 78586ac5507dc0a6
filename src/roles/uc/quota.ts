/**
 * Bucket quota routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2 `putBucketQuota`/`getBucketQuota`); management
 * credential (the route table's auth step, src/routes/kodo-uc.ts), the bucket authorised like every bucket route (631 missing, 403 another account's).
 * - `POST /setbucketquota/<bucket>/size/<n>/count/<n>`: `size` in bytes, `count` in files; 0 leaves a limit as it
 *   is, -1 removes it (the Node SDK always sends both, 0 for one it was not given; either alone is accepted too).
 *   200 empty body; 400 naming the bad field.
 * - `GET|POST /getbucketquota/<bucket>`: 200 `{"size": n, "count": n}`, -1 for no limit.
 * Enforcement happens at every commit (buckets/quota.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseQuotaPath, quotaOf, setBucketQuota } from '../../buckets/quota.js';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { pathSegments } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf, sendEmpty, sendJson } from '../../http/wire.js';

type Call = RouteCall<Granary, Caller>;

/** `POST /setbucketquota/*`: the quota path checked before the bucket. */
export async function setBucketQuotaRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const [bucket, ...rest] = pathSegments(rawUrlOf(request)).slice(1);
  if (!bucket) throw Errors.badRequest('expected /setbucketquota/<bucket>/size/<bytes>/count/<files>');
  const change = parseQuotaPath(rest);
  const b = await call.authorize(bucket);
  await setBucketQuota(g, b.name, change);
  return sendEmpty(reply);
}

/** `GET|POST /getbucketquota/:bucket`. */
export async function getBucketQuota(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const name = (request.params as { bucket?: string }).bucket;
  if (!name) throw Errors.badRequest('expected /getbucketquota/<bucket>');
  const b = await call.authorize(name);
  return sendJson(reply, 200, quotaOf(b));
}
