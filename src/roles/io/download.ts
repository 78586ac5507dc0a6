/**
 * Downloads (docs/development/kodo-protocol.md §11): `GET|HEAD /<bucket>/<key>` path-style on any host, and `GET|HEAD /<key>` on a
 * domain bound to a bucket (server.ts rewrites such requests to DOMAIN_PREFIX + path so API routes never
 * shadow a key). Any other GET/HEAD no API route took — no key (`/`, `/foo`) or a reserved first segment
 * (`/v2/nope`) — is an unknown route: 404 `{"error":"no such api"}`, not the 404 `Document not found` of a
 * missing key. Private buckets need `e`/`token` (§2.5). Range (206/416), conditional requests (304), ETag,
 * Last-Modified, metadata headers, `attname`. Bodies are streamed from the blob store (small ones sent whole).
 * A missing key in a bucket with a mirror source is pulled from the origin first (objects/fetch/mirror.ts:
 * 404 origin 404, 403 outbound guard, 478 other origin failures). A query starting with a fop pipeline
 * (`?imageView2/...`, §10) is served by fop.ts after the same checks; so is a bucket style, named by a key
 * suffix (`<key>-<style>`, when that key names no object) or by `?style/<name>` (buckets/styles.ts). A pipeline
 * ending in a signed `|saveas/<entry>/sign/<AK>:<sign>` also stores its result (saveas.ts, §10.7).
 * The bucket's download settings apply to all of these (bucket-settings.ts): its CORS rules, its referer rules
 * (403), original protection (403 for the original and raw fops unless signed; buckets/protection.ts; a public
 * bucket's URL carrying a `token` is verified like a private one's) and its max-age (`Cache-Control`).
 * Every answer carries `X-Content-Type-Options: nosniff` and, unless the type is passive media,
 * `Content-Security-Policy: sandbox` (active-content.ts): uploaded HTML or SVG runs no script on this origin.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess } from '../../auth/authorize.js';
import { verifyPrivateDownload } from '../../auth/download-token.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { answerBody, lengthHeaders, servedEntry } from '../../objects/download.js';
import { checkDownloadable, isLive, lookupForDownload, metaHeaders } from '../../objects/read.js';
import { isReservedBucketName } from '../../buckets/names.js';
import { checkOriginalAccess, isStyleOnly } from '../../buckets/protection.js';
import { expandStyleStage, findStyled, withStyle } from '../../buckets/styles.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { rawUrlOf } from '../../http/wire.js';
import { downloadCacheControl, guardDownload } from './bucket-settings.js';
import { serveFop } from './fop.js';
import { prepareSaveas, serveSaveas } from './saveas.js';
import { ifRangeMatches, notModified, parseRange } from '../../http/range.js';

/** Prefix server.ts puts before the path of a request made to a bound download domain. */
export const DOMAIN_PREFIX = '/.domain';
const PASS_THROUGH_PARAMS = new Set(['e', 'token', 'attname']);

function decodeKey(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw Errors.badRequest('malformed percent-encoding in the key');
  }
}

/**
 * Bucket and key addressed by a download request, whether it came through a bound domain or a bucket's source
 * domain (`viaDomain`), and whether that domain is a CDN domain (`viaCdn`, GRANARY_CDN_DOMAINS). On such a
 * domain every path is a key; path-style, undefined when the request is not a download: the path names no
 * key (`/`, `/foo`) or its first segment is a reserved bucket name (`/v2/nope`, `/STAT/x`: an API route with a typo
 * or the wrong method — no bucket has that name). 400 for malformed percent-encoding.
 */
export function downloadTarget(
  g: Granary,
  request: FastifyRequest,
): { bucket: string; key: string; query: string; viaDomain: boolean; viaCdn: boolean } | undefined {
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  const path = q >= 0 ? raw.slice(0, q) : raw;
  const query = q >= 0 ? raw.slice(q + 1) : '';
  const domainBucket = g.domains.bucketOfHost(request.headers.host);
  if (domainBucket !== undefined) {
    const viaCdn = g.domains.isCdnHost(request.headers.host);
    return { bucket: domainBucket, key: decodeKey(path.slice(1)), query, viaDomain: true, viaCdn };
  }
  const slash = path.indexOf('/', 1);
  if (slash < 0) return undefined;
  const bucket = decodeKey(path.slice(1, slash));
  if (isReservedBucketName(bucket)) return undefined;
  return { bucket, key: decodeKey(path.slice(slash + 1)), query, viaDomain: false, viaCdn: false };
}

/**
 * Splits the query into its parameters and the fop pipeline (§10.1): the first `&`-separated part that is not
 * `name=value` (`=` before any `/`; nor a bare `e`/`token`/`attname`) is the pipeline; any further such part is a 400.
 */
function splitQuery(query: string): { params: URLSearchParams; fop: string | undefined } {
  const p = new URLSearchParams(query);
  let fop: string | undefined;
  for (const part of query.split('&')) {
    // `name=value` is a parameter; a `=` after a `/` is base64 padding inside a fop (`watermark/1/image/…==`).
    if (part === '' || /^[^/|]*=/.test(part) || PASS_THROUGH_PARAMS.has(part)) continue;
    if (fop !== undefined) throw Errors.badRequest(`unsupported query part: ${part}`);
    fop = decodeQueryPart(part);
  }
  return { params: p, fop };
}

function decodeQueryPart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw Errors.badRequest('malformed percent-encoding in the fop');
  }
}

function contentDisposition(attname: string): string {
  const ascii = attname.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(attname)}`;
}

/** Headers common to 200/206/304 answers. */
function objectHeaders(rec: ObjectRecord, cacheControl: string, attname: string | null): Record<string, string> {
  const { overrides, meta } = metaHeaders(rec.meta);
  const mtimeMs = Number(rec.putTime / 10000n);
  const h: Record<string, string> = {
    'content-type': rec.mimeType,
    etag: `"${rec.hash}"`,
    'last-modified': new Date(mtimeMs).toUTCString(),
    'accept-ranges': 'bytes',
    'cache-control': cacheControl,
    ...meta,
    ...overrides,
  };
  if (attname !== null) h['content-disposition'] = contentDisposition(attname);
  return h;
}

/**
 * `GET|HEAD /*` (path style, and bound domains via DOMAIN_PREFIX; route table: `download` auth — public bucket or a
 * private download URL, checked here once the bucket is read; a saveas target authorised through `call`).
 */
export async function download(call: RouteCall<Granary, unknown>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const g = call.g;
  const t = downloadTarget(g, request);
  if (!t) throw Errors.noSuchRoute();
  const { params, fop: query } = splitQuery(t.query);
  if (query !== undefined) reply.header('cache-control', 'no-store'); // errors of a fop are not cached
  const { bucket, object } = await lookupForDownload(g, t.bucket, t.key);
  guardDownload(bucket, request, reply, t.viaCdn);
  // A public bucket's URL with a token is verified too when it may lift original protection.
  const signed = bucket.private || (bucket.settings.protected === true && params.has('token'));
  if (signed) {
    const nowSec = Math.floor(g.clock.nowMs() / 1000);
    const { accessKey } = verifyPrivateDownload({ rawUrl: rawUrlOf(request), headers: request.headers }, g.secretOf, nowSec);
    // A valid signature by a key of another account does not open this bucket.
    // A sub-user's key: its policies must allow kodo/Get on the key (403, recorded).
    if (!mayAccess(g, accessKey, bucket, { action: 'kodo/Get', key: t.key, requestId: request.id })) {
      throw g.keyIndex.isSubUser(accessKey) ? Errors.forbidden(`kodo/Get on ${bucket.name}/${t.key} is not allowed`) : Errors.badDownloadToken('the key has no access to this bucket');
    }
  }
  // `…|saveas/<entry>/sign/<AK>:<sign>` (§10.7): verified here, then the pipeline runs and its result is stored.
  const saveas = query === undefined ? undefined : await prepareSaveas(call, request, query);
  const fop = saveas ? saveas.pipeline : query;
  // Original protection is lifted by a verified signature: the URL's token, or a saveas signed by a key of the bucket.
  const mayBypass = signed || (saveas !== undefined && mayAccess(g, saveas.target.accessKey, bucket, { action: 'kodo/Get', key: t.key, requestId: request.id }));
  const serve = (on: ObjectRecord, pipeline: string): Promise<FastifyReply> =>
    saveas ? serveSaveas(g, bucket, on, { ...saveas, pipeline }, request, reply) : serveFop(g, bucket, on, pipeline, request, reply);
  // A key that names no object may name a style of another (`<key><sep><style>`, §10.1): its fop on that one.
  const styled = isLive(g, object) ? undefined : await findStyled(g, bucket, t.key);
  if (styled) {
    checkOriginalAccess(bucket, { signed: mayBypass, styleOnly: fop === undefined });
    reply.header('cache-control', 'no-store'); // errors of a fop are not cached
    const pipeline = withStyle(styled.pipeline, fop === undefined ? undefined : expandStyleStage(bucket, fop));
    return serve(checkDownloadable(g, styled.object), pipeline);
  }
  checkOriginalAccess(bucket, { signed: mayBypass, styleOnly: isStyleOnly(fop) });
  // A miss in a bucket with a mirror source is pulled from it (single-flight per key), then served (§8.6).
  const rec = await servedEntry(g, bucket, t.key, object);
  if (fop !== undefined) return serve(rec, expandStyleStage(bucket, fop));
  const mtimeMs = Number(rec.putTime / 10000n);
  reply.headers(objectHeaders(rec, downloadCacheControl(g, bucket, request), params.get('attname')));
  if (notModified(request.headers, rec.hash, mtimeMs)) return reply.code(304).send();

  const rangeHeader = typeof request.headers.range === 'string' ? request.headers.range : undefined;
  const ifRange = typeof request.headers['if-range'] === 'string' ? request.headers['if-range'] : undefined;
  const range = ifRangeMatches(ifRange, rec.hash, mtimeMs) ? parseRange(rangeHeader, rec.fsize) : undefined;
  if (range === 'unsatisfiable') throw Errors.rangeNotSatisfiable().withHeaders({ 'content-range': `bytes */${rec.fsize}` });
  if (range) reply.code(206);
  reply.headers(lengthHeaders(rec.fsize, range));
  // Verified before the headers go out (small, whole), or block by block as it streams (objects/verified-read.ts).
  return request.method === 'HEAD' ? reply.send() : reply.send(await answerBody(g, rec, range));
}
