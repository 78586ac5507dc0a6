/**
 * Bucket routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2): mkbucketv3 (614; Kodo's `the bucket already exists and
 * you own it.` for the caller's own bucket), buckets (GET and POST, v4 shape with `apiVersion=v4`), drop, private
 * (query or form), image/unimage (mirror source), nrop enable (Granary's), v2/bucketInfo (612 for a bucket that does
 * not exist, as Kodo), v2/v3 domains. Success without a result answers 200 `{}`.
 * Management credential required.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeBucket, mayAccess } from '../../auth/authorize.js';
import {
  bucketInfo,
  clearBucketSource,
  createBucket,
  dropBucket,
  setBucketNrop,
  setBucketPrivate,
  setBucketSource,
} from '../../buckets/buckets.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import { decodeParam, pathSegments } from '../entry.js';
import { params, rawUrlOf, READ_METHODS, requiredParam, requireManagement, sendEmpty, sendJson } from '../http.js';


function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

/** Registers the bucket routes. */
export function registerBuckets(app: FastifyInstance, g: Granary): void {
  const create = async (request: FastifyRequest) => {
    const caller = requireManagement(g, request);
    const region = (request.params as { region?: string }).region;
    await createBucket(g, pathParam(request, 'bucket'), caller.accessKey, region);
  };
  app.post('/mkbucketv3/:bucket', async (request, reply) => {
    await create(request);
    return sendEmpty(reply);
  });
  app.post('/mkbucketv3/:bucket/region/:region', async (request, reply) => {
    await create(request);
    return sendEmpty(reply);
  });

  app.route({
    method: READ_METHODS,
    url: '/buckets',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const all = (await g.meta.listBuckets()).filter((b) => mayAccess(g, caller.accessKey, b));
      if (params(request).get('apiVersion') === 'v4') {
        return sendJson(reply, 200, {
          next_marker: '',
          is_truncated: false,
          buckets: all.map((b) => ({
            name: b.name,
            region: b.region,
            private: b.private,
            ctime: new Date(b.ctime * 1000).toISOString(),
          })),
        });
      }
      return sendJson(reply, 200, all.map((b) => b.name));
    },
  });

  app.post('/drop/:bucket', async (request, reply) => {
    const caller = requireManagement(g, request);
    const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
    await dropBucket(g, bucket.name);
    return sendEmpty(reply);
  });

  app.post('/private', async (request, reply) => {
    const caller = requireManagement(g, request);
    const p = params(request);
    const flag = requiredParam(p, 'private');
    if (flag !== '0' && flag !== '1') throw Errors.badRequest('private must be 0 or 1');
    const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(p, 'bucket'));
    await setBucketPrivate(g, bucket.name, flag === '1');
    return sendEmpty(reply);
  });

  // `POST /image/<bucket>/from/<EncodedURL>[/host/<EncodedHost>]` (§8.6): 200 empty; 400 bad URL, host or
  // base64; 631 missing bucket; 403 another account's bucket.
  app.post('/image/*', async (request, reply) => {
    const caller = requireManagement(g, request);
    const [name, from, encodedUrl, ...rest] = pathSegments(rawUrlOf(request)).slice(1);
    if (!name || from !== 'from') throw Errors.badRequest('expected /image/<bucket>/from/<EncodedURL>[/host/<EncodedHost>]');
    const url = decodeParam(encodedUrl, 'EncodedURL');
    let host: string | undefined;
    for (let i = 0; i < rest.length; i += 2) {
      if (rest[i] === 'host') host = decodeParam(rest[i + 1], 'host');
      else throw Errors.badRequest(`unknown image parameter ${rest[i]}`);
    }
    const bucket = await authorizeBucket(g, caller.accessKey, name);
    await setBucketSource(g, bucket.name, url, host);
    return sendEmpty(reply);
  });

  // `POST /unimage/<bucket>` (§8.6): 200 empty (also when no source was set); 631 missing; 403 foreign bucket.
  app.post('/unimage/:bucket', async (request, reply) => {
    const caller = requireManagement(g, request);
    const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
    await clearBucketSource(g, bucket.name);
    return sendEmpty(reply);
  });

  // `POST /nrop/<bucket>/enable/<1|0>` (Granary's): switches the `nrop` fop (§10.4) for the bucket. 200 `{}`;
  // 400 a value other than 0 or 1; 631 missing bucket; 403 another account's bucket.
  app.post('/nrop/:bucket/enable/:flag', async (request, reply) => {
    const caller = requireManagement(g, request);
    const flag = pathParam(request, 'flag');
    if (flag !== '0' && flag !== '1') throw Errors.badRequest('nrop enable must be 0 or 1');
    const bucket = await authorizeBucket(g, caller.accessKey, pathParam(request, 'bucket'));
    await setBucketNrop(g, bucket.name, flag === '1');
    return sendJson(reply, 200, {});
  });

  app.route({
    method: READ_METHODS,
    url: '/v2/bucketInfo',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(params(request), 'bucket')).catch((err: unknown) => {
        // Kodo answers 612 (not 631) for the info of a bucket that does not exist; the SDKs' tests expect it.
        throw isKodoError(err, 'noSuchBucket') ? Errors.noSuchBucketInfo() : err;
      });
      return sendJson(reply, 200, bucketInfo(bucket));
    },
  });

  app.route({
    method: READ_METHODS,
    url: '/v2/domains',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(params(request), 'tbl'));
      return sendJson(reply, 200, (await g.meta.domainsOf(bucket.name)).map((d) => d.domain));
    },
  });

  app.route({
    method: READ_METHODS,
    url: '/v3/domains',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      const bucket = await authorizeBucket(g, caller.accessKey, requiredParam(params(request), 'tbl'));
      const domains = await g.meta.domainsOf(bucket.name);
      return sendJson(
        reply,
        200,
        domains.map((d) => ({
          domain: d.domain,
          tbl: d.bucket,
          owner: caller.accessKey,
          ctime: d.ctime,
          utime: d.ctime,
          antileech: { no_refer: false, anti_leech_mode: 0, anti_leech_used: false, source_enabled: false },
          domainType: 0,
        })),
      );
    },
  });
}
