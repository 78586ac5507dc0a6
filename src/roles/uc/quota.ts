/**
 * Bucket quota routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2 `putBucketQuota`/`getBucketQuota`); management
 * credential required, the bucket authorised like every bucket route (631 missing, 403 another account's).
 * - `POST /setbucketquota/<bucket>/size/<n>/count/<n>`: `size` in bytes, `count` in files; 0 leaves a limit as it
 *   is, -1 removes it (the Node SDK always sends both, 0 for one it was not given; either alone is accepted too).
 *   200 empty body; 400 naming the bad field.
 * - `GET|POST /getbucketquota/<bucket>`: 200 `{"size": n, "count": n}`, -1 for no limit.
 * Enforcement happens at every commit (buckets/quota.ts).
 */
import type { FastifyInstance } from 'fastify';
import { authorizeBucket } from '../../auth/authorize.js';
import { parseQuotaPath, quotaOf, setBucketQuota } from '../../buckets/quota.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { pathSegments } from '../entry.js';
import { rawUrlOf, READ_METHODS, requireManagement, sendEmpty, sendJson } from '../http.js';

/** Registers the quota routes. */
export function registerQuota(app: FastifyInstance, g: Granary): void {
  app.post('/setbucketquota/*', async (request, reply) => {
    const caller = requireManagement(g, request);
    const [bucket, ...rest] = pathSegments(rawUrlOf(request)).slice(1);
    if (!bucket) throw Errors.badRequest('expected /setbucketquota/<bucket>/size/<bytes>/count/<files>');
    const change = parseQuotaPath(rest);
    const b = await authorizeBucket(g, caller.accessKey, bucket);
    await setBucketQuota(g, b.name, change);
    return sendEmpty(reply);
  });

  app.route({
    method: READ_METHODS,
    url: '/getbucketquota/:bucket',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const name = (request.params as { bucket?: string }).bucket;
      if (!name) throw Errors.badRequest('expected /getbucketquota/<bucket>');
      const b = await authorizeBucket(g, caller.accessKey, name);
      return sendJson(reply, 200, quotaOf(b));
    },
  });
}
