/**
 * Bucket routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2): mkbucketv3 (614; Kodo's `the bucket already exists and
 * you own it.` for the caller's own bucket), buckets (GET and POST, v4 shape with `apiVersion=v4`), drop, private
 * (query or form), image/unimage (mirror source), nrop enable (Granary's), v2/bucketInfo (612 for a bucket that does
 * not exist, as Kodo), v2/v3 domains. Success without a result answers 200 `{}`.
 * Management credential (the route table's auth step, src/routes/uc.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess, VISIBLE } from '../../auth/authorize.js';
import type { Caller } from '../../auth/management.js';
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
import type { RouteCall } from '../../http/route-call.js';
import { decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';
import { params, rawUrlOf, requiredParam, sendEmpty, sendJson } from '../../http/wire.js';

function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

type Call = RouteCall<Granary, Caller>;

/** `POST /mkbucketv3/:bucket[/region/:region]`: creates the bucket, owned by the caller. */
export async function mkbucket(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const region = (request.params as { region?: string }).region;
  await createBucket(call.g, pathParam(request, 'bucket'), call.caller.accessKey, region);
  return sendEmpty(reply);
}

/** `GET|POST /buckets[?apiVersion=v4]`: the caller's buckets (every bucket for the root key). */
export async function listBuckets(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { g } = call;
  const all = (await g.meta.listBuckets()).filter((b) => mayAccess(g, call.caller.accessKey, b, { action: VISIBLE }));
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
}

/** `POST /drop/:bucket` (the bucket authorised by the auth step). */
export async function drop(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  await dropBucket(call.g, call.bucket.name);
  return sendEmpty(reply);
}

/** `POST /private?bucket=&private=<0|1>` (query or form): the flag checked (400) before the bucket. */
export async function setPrivate(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const p = params(request);
  const flag = requiredParam(p, 'private');
  if (flag !== '0' && flag !== '1') throw Errors.badRequest('private must be 0 or 1');
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await setBucketPrivate(call.g, bucket.name, flag === '1');
  return sendEmpty(reply);
}

/**
 * `POST /image/<bucket>/from/<EncodedURL>[/host/<EncodedHost>]` (§8.6): 200 empty; 400 bad URL, host or base64;
 * 631 missing bucket; 403 another account's bucket.
 */
export async function image(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const [name, from, encodedUrl, ...rest] = pathSegments(rawUrlOf(request)).slice(1);
  if (!name || from !== 'from') throw Errors.badRequest('expected /image/<bucket>/from/<EncodedURL>[/host/<EncodedHost>]');
  const url = decodeParam(encodedUrl, 'EncodedURL');
  let host: string | undefined;
  for (let i = 0; i < rest.length; i += 2) {
    if (rest[i] === 'host') host = decodeParam(rest[i + 1], 'host');
    else throw Errors.badRequest(`unknown image parameter ${rest[i]}`);
  }
  const bucket = await call.authorize(name);
  await setBucketSource(call.g, bucket.name, url, host);
  return sendEmpty(reply);
}

/** `POST /unimage/<bucket>` (§8.6): 200 empty (also when no source was set); 631 missing; 403 foreign bucket. */
export async function unimage(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  await clearBucketSource(call.g, call.bucket.name);
  return sendEmpty(reply);
}

/**
 * `POST /nrop/<bucket>/enable/<1|0>` (Granary's): switches the `nrop` fop (§10.4) for the bucket. 200 `{}`; 400 a
 * value other than 0 or 1 (checked before the bucket); 631 missing bucket; 403 another account's bucket.
 */
export async function nrop(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const flag = pathParam(request, 'flag');
  if (flag !== '0' && flag !== '1') throw Errors.badRequest('nrop enable must be 0 or 1');
  const bucket = await call.authorize(pathParam(request, 'bucket'));
  await setBucketNrop(call.g, bucket.name, flag === '1');
  return sendJson(reply, 200, {});
}

/** `GET|POST /v2/bucketInfo?bucket=`: 612 (not 631) for a bucket that does not exist, as Kodo answers. */
export async function bucketInfoRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const bucket = await call.authorize(requiredParam(params(request), 'bucket')).catch((err: unknown) => {
    // Kodo answers 612 (not 631) for the info of a bucket that does not exist; the SDKs' tests expect it.
    throw isKodoError(err, 'noSuchBucket') ? Errors.noSuchBucketInfo() : err;
  });
  return sendJson(reply, 200, bucketInfo(bucket));
}

/** `GET|POST /v2/domains?tbl=` (the bucket authorised by the auth step): the bound domains. */
export async function domainsV2(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  return sendJson(reply, 200, (await call.g.meta.domainsOf(call.bucket.name)).map((d) => d.domain));
}

/** `GET|POST /v3/domains?tbl=` (the bucket authorised by the auth step): the bound domains, v3 shape. */
export async function domainsV3(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const domains = await call.g.meta.domainsOf(call.bucket.name);
  return sendJson(
    reply,
    200,
    domains.map((d) => ({
      domain: d.domain,
      tbl: d.bucket,
      owner: call.caller.accessKey,
      ctime: d.ctime,
      utime: d.ctime,
      antileech: { no_refer: false, anti_leech_mode: 0, anti_leech_used: false, source_enabled: false },
      domainType: 0,
    })),
  );
}
