/**
 * CORS on the S3 listener (docs/development/kodo-protocol.md §18.10; AWS S3 API Reference, "OPTIONS object"): the
 * bucket's Kodo CORS rules (buckets/cors.ts, set through PutBucketCors or Kodo's API) answer browsers on the S3
 * port as on the download port.
 *
 * - **Preflight** (`OPTIONS /<bucket>[/<key>]`, operation `OptionsObject`): never authenticated (browsers send no
 *   credentials, and a presigned URL's query signs the actual request, not the preflight). `Origin` and
 *   `Access-Control-Request-Method` are required (400 BadRequest). A bucket without rules → 403 AccessForbidden
 *   "CORS is not enabled for this bucket"; no rule allowing the origin, method and every requested header → 403
 *   AccessForbidden; a match → 200 with `Access-Control-Allow-Origin` (the origin), `-Allow-Methods` (the rule's),
 *   `-Allow-Headers` (the requested ones), `-Expose-Headers` (the rule's), `-Max-Age` (seconds) and, for a rule
 *   that does not allow every origin, `-Allow-Credentials: true`. A missing bucket is NoSuchBucket (404).
 * - **Actual requests** carrying `Origin` on a bucket with rules: the first rule allowing that origin and the
 *   request's method (its `Access-Control-Request-Method` if sent) adds the same headers (without
 *   `-Allow-Headers`) to the answer, errors included.
 * - `Access-Control-Allow-Origin` is `*` when the rule's matching origin is `*` (S3's answer), else the origin. One bucket
 *   read per such request (PostgreSQL in cluster mode); requests without `Origin` cost nothing.
 */
import { findCorsRule, originMatches, requestedHeaders } from '../buckets/cors.js';
import type { Granary } from '../context.js';
import type { CorsRule } from '../ports/meta.js';
import { bucketName } from './access.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import type { S3Request, S3Response } from './types.js';

const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

/**
 * The CORS answer headers of `rule` for `origin` (`allowHeaders`: the requested headers of a preflight). The origin
 * is echoed, or `*` when the rule's origin that matches is `*` (as S3 answers, without credentials).
 */
function ruleHeaders(rule: CorsRule, origin: string, allowHeaders: string[] = []): Record<string, string> {
  const any = rule.allowedOrigin.find((o) => originMatches(o, origin)) === '*';
  return {
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-allow-methods': rule.allowedMethod.join(', '),
    ...(allowHeaders.length > 0 ? { 'access-control-allow-headers': allowHeaders.join(', ') } : {}),
    ...(rule.exposedHeader.length > 0 ? { 'access-control-expose-headers': rule.exposedHeader.join(', ') } : {}),
    'access-control-max-age': String(rule.maxAge),
    ...(any ? {} : { 'access-control-allow-credentials': 'true' }),
    vary: VARY,
  };
}

/** `OptionsObject`: a CORS preflight of a bucket or object (see the module comment). */
export async function optionsObject(g: Granary, req: S3Request): Promise<S3Response> {
  const name = bucketName(req);
  const origin = headerOf(req, 'origin');
  if (origin === undefined || origin === '') throw S3Errors.BadRequest('Insufficient information. Origin request header needed.');
  const method = (headerOf(req, 'access-control-request-method') ?? '').toUpperCase();
  if (!/^[A-Z]+$/.test(method)) throw S3Errors.BadRequest(`Invalid Access-Control-Request-Method: ${method}`);
  const bucket = await g.meta.getBucket(name);
  if (!bucket) throw S3Errors.NoSuchBucket();
  const rules = bucket.settings.cors ?? [];
  if (rules.length === 0) throw S3Errors.AccessForbidden('CORSResponse: CORS is not enabled for this bucket.');
  const headers = requestedHeaders(headerOf(req, 'access-control-request-headers'));
  const rule = findCorsRule(rules, { origin, method, headers });
  if (!rule) {
    throw S3Errors.AccessForbidden('CORSResponse: This CORS request is not allowed. The origin, Access-Control-Request-Method or Access-Control-Request-Headers are not allowed by the bucket\'s CORS rules.');
  }
  return { status: 200, headers: ruleHeaders(rule, origin, headers) };
}

/**
 * The CORS headers of an actual request's answer: for a request with `Origin` on bucket `bucket` whose rules allow
 * that origin and `method` (the request's `Access-Control-Request-Method` when it carries one, as radosgw matches:
 * browsers send none on actual requests); undefined otherwise (no Origin, no bucket, no rules, no match). Errors of
 * the bucket read are left to the operation (undefined).
 */
export async function corsAnswerHeaders(g: Granary, bucket: string | undefined, origin: string | undefined, method: string): Promise<Record<string, string> | undefined> {
  if (bucket === undefined || origin === undefined || origin === '') return undefined;
  let rules: CorsRule[] | undefined;
  try {
    rules = (await g.meta.getBucket(bucket))?.settings.cors;
  } catch {
    return undefined;
  }
  if (!rules || rules.length === 0) return undefined;
  const rule = findCorsRule(rules, { origin, method, headers: [] });
  return rule ? ruleHeaders(rule, origin) : { vary: VARY };
}
