/**
 * A bucket's download settings applied to a download response (roles/io/download.ts, fop.ts): the glue between
 * the request/reply and the pure rules of buckets/cors.ts, referer.ts and max-age.ts.
 * - CORS rules replace the global `Access-Control-*` headers (server.ts) on every answer about the bucket's objects,
 *   errors included: a matching rule's headers, or none; `Vary: Origin`. Buckets without rules keep the global `*`.
 * - Referer rules: 403 `refererRefused` when they refuse; `Vary: Referer` on answers they apply to (a cache must
 *   not hand a response checked for one Referer to another).
 * - Cache-Control from the bucket's max-age (and, for private buckets, the signed URL's `e`).
 * Original protection depends on the request's signature and pipeline, so download.ts checks it where it knows
 * them (buckets/protection.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { findCorsRule, responseHeaders } from '../../buckets/cors.js';
import { cacheControl } from '../../buckets/max-age.js';
import { checkReferer, refererApplies } from '../../buckets/referer.js';
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import type { BucketRecord } from '../../ports/meta.js';
import { rawUrlOf } from '../../http/wire.js';

/** Adds `value` to the response's `Vary` header. */
export function addVary(reply: FastifyReply, value: string): void {
  const cur = reply.getHeader('vary');
  reply.header('vary', cur === undefined || cur === '' ? value : `${String(cur)}, ${value}`);
}

/** A request header as one string ('' when absent). */
export function headerText(request: FastifyRequest, name: string): string {
  const v = request.headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/** Drops the global CORS headers and sets the bucket rules' ones (see the module comment); no-op without rules. */
export function applyBucketCors(bucket: BucketRecord, request: FastifyRequest, reply: FastifyReply): void {
  const rules = bucket.settings.cors;
  if (!rules) return;
  for (const name of Object.keys(reply.getHeaders())) if (name.startsWith('access-control-')) reply.removeHeader(name);
  addVary(reply, 'Origin');
  const origin = headerText(request, 'origin');
  if (origin === '') return;
  const rule = findCorsRule(rules, { origin, method: request.method, headers: [] });
  if (rule) reply.headers(responseHeaders(rule, origin));
}

/**
 * The bucket's CORS and referer rules for one download (`viaCdn`: made through a CDN domain, GRANARY_CDN_DOMAINS).
 * Throws 403 `refererRefused`; the CORS headers are set first, so a browser allowed by them can read that error.
 */
export function guardDownload(bucket: BucketRecord, request: FastifyRequest, reply: FastifyReply, viaCdn: boolean): void {
  applyBucketCors(bucket, request, reply);
  if (!refererApplies(bucket, viaCdn)) return;
  addVary(reply, 'Referer');
  checkReferer(bucket, headerText(request, 'referer'), viaCdn);
}

/** The last `e` of a raw request-target's query (the signed deadline of a private URL), or undefined. */
function deadlineOf(rawUrl: string): number | undefined {
  const q = rawUrl.indexOf('?');
  const e = new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : '').getAll('e').at(-1);
  return e === undefined || !/^\d+$/.test(e) ? undefined : Number(e);
}

/** `Cache-Control` of a download or fop result of `bucket` (buckets/max-age.ts). */
export function downloadCacheControl(g: Granary, bucket: BucketRecord, request: FastifyRequest): string {
  return cacheControl(bucket, nowSeconds(g.clock), bucket.private ? deadlineOf(rawUrlOf(request)) : undefined);
}
