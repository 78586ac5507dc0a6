/**
 * Per-bucket CORS rules (docs/development/kodo-protocol.md §8.6 `POST /corsRules/set/<bucket>` with a JSON array body,
 * `corsRules/get/<bucket>`; field meanings from Kodo's api-specs `set_bucket_cors_rules.yml`).
 *
 * Wire rule: `{allowed_origin[], allowed_method[], allowed_header[]?, exposed_header[]?, max_age?}`.
 * - `allowed_origin` (required): `*` (any origin) or an origin with its scheme (`https://app.example.com`); one `*`
 *   wildcard matches any run of characters (`https://*.example.com`), only the first `*` is a wildcard; compared
 *   case-sensitively with the request's `Origin`.
 * - `allowed_method` (required): GET, HEAD, POST, PUT, DELETE, case-insensitive, no wildcard.
 * - `allowed_header`: request headers a preflight may ask for, case-insensitive; a lone `*` allows any; empty allows
 *   none.
 * - `exposed_header`: response headers exposed besides X-Log and X-Reqid (always exposed), no wildcard.
 * - `max_age`: seconds a browser may cache the preflight; absent or 0 = not cached (`Access-Control-Max-Age: 0`).
 * Limits: at most MAX_CORS_RULES rules (Kodo's limit is not documented; S3 allows 100), MAX_LIST_ENTRIES entries per
 * list, MAX_ENTRY_LENGTH characters per entry. An empty entry (`[""]`) is accepted and matches nothing; the array
 * as sent is kept and `corsRules/get` answers it verbatim, as Kodo. Unknown fields are refused (a misspelt field
 * would silently drop a restriction). Errors: 400 `badCorsRules` naming the rule and field (`rules[0].allowed_method: …`).
 *
 * Matching: the first rule whose origin pattern matches `Origin`, whose methods include the method
 * (`Access-Control-Request-Method` for a preflight) and that allows every header of
 * `Access-Control-Request-Headers` (an allowed header may hold one `*`, as S3's `x-amz-*`; rules set through S3
 * PutBucketCors follow S3's rules, s3api/cors-config.ts) is the rule that answers; none → no CORS headers (roles/io/bucket-cors.ts).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { CorsRule, S3CorsRule } from '../ports/meta.js';

/** Most rules one bucket may hold. */
export const MAX_CORS_RULES = 10;
/** Most entries in one rule's list (origins, methods, headers). */
export const MAX_LIST_ENTRIES = 50;
/** Longest origin pattern or header name, characters. */
export const MAX_ENTRY_LENGTH = 256;
/** Largest `max_age`, seconds (2^31 − 1). */
const MAX_AGE_LIMIT = 2_147_483_647;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE']);
/** An HTTP header name (RFC 9110 §5.6.2 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers every matching answer exposes (Kodo: "X-Log, X-Reqid 是默认会暴露的两个 header"). */
const ALWAYS_EXPOSED = ['X-Log', 'X-Reqid'];
const FIELDS = new Set(['allowed_origin', 'allowed_method', 'allowed_header', 'exposed_header', 'max_age']);

/** A rule as it travels on the wire (omitempty, as Kodo's Go structs). */
export interface WireCorsRule {
  allowed_origin: string[];
  allowed_method: string[];
  allowed_header?: string[];
  exposed_header?: string[];
  max_age?: number;
}

function bad(at: string, why: string): never {
  throw Errors.badCorsRules(`${at}: ${why}`);
}

/** A list of strings at `at` (undefined allowed when optional), each checked by `check`; duplicates dropped. */
function stringList(value: unknown, at: string, required: boolean, check: (s: string, at: string) => string): string[] {
  if (value === undefined || value === null) {
    if (required) bad(at, 'is required');
    return [];
  }
  if (!Array.isArray(value)) bad(at, 'must be an array of strings');
  if (required && value.length === 0) bad(at, 'must not be empty');
  if (value.length > MAX_LIST_ENTRIES) bad(at, `has more than ${MAX_LIST_ENTRIES} entries`);
  const out: string[] = [];
  value.forEach((v, i) => {
    if (typeof v !== 'string') bad(`${at}[${i}]`, 'must be a string');
    // An empty entry is accepted and matches nothing (Kodo stores `[""]` and returns it verbatim; the Java and Go
    // SDKs' tests set it): it is kept in the rules as sent (`corsAsSent`) and left out of the rules that match.
    if (v.trim() === '') return;
    if (v.length > MAX_ENTRY_LENGTH) bad(`${at}[${i}]`, `is longer than ${MAX_ENTRY_LENGTH} characters`);
    const s = check(v.trim(), `${at}[${i}]`);
    if (!out.some((o) => o.toLowerCase() === s.toLowerCase())) out.push(s);
  });
  return out;
}

function checkOrigin(s: string, at: string): string {
  if (s !== '*' && (!s.includes('://') || /\s/.test(s))) bad(at, `${JSON.stringify(s)} must be * or an origin with its scheme (https://example.com)`);
  return s;
}

function checkMethod(s: string, at: string): string {
  const m = s.toUpperCase();
  if (!METHODS.has(m)) bad(at, `${JSON.stringify(s)} is not one of ${[...METHODS].join(', ')}`);
  return m;
}

function checkHeader(allowStar: boolean) {
  return (s: string, at: string): string => {
    if (s === '*' ? !allowStar : !TOKEN.test(s) || s.includes('*')) bad(at, `${JSON.stringify(s)} is not a header name${allowStar ? ' or *' : ''}`);
    return s;
  };
}

/** Parses the JSON of `corsRules/set` into stored rules (see the module comment). `[]` gives `[]` (no rules). */
export function parseCorsRules(body: unknown): CorsRule[] {
  if (!Array.isArray(body)) bad('body', 'must be a JSON array of rules');
  if (body.length > MAX_CORS_RULES) bad('body', `a bucket has at most ${MAX_CORS_RULES} CORS rules, got ${body.length}`);
  return body.map((raw, i): CorsRule => {
    const at = `rules[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) bad(at, 'must be an object');
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r)) if (!FIELDS.has(k)) bad(`${at}.${k}`, `unknown field (expected ${[...FIELDS].join(', ')})`);
    const maxAge = r.max_age ?? 0;
    if (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < 0 || maxAge > MAX_AGE_LIMIT) {
      bad(`${at}.max_age`, `must be an integer number of seconds 0..${MAX_AGE_LIMIT}`);
    }
    return {
      allowedOrigin: stringList(r.allowed_origin, `${at}.allowed_origin`, true, checkOrigin),
      allowedMethod: stringList(r.allowed_method, `${at}.allowed_method`, true, checkMethod),
      allowedHeader: stringList(r.allowed_header, `${at}.allowed_header`, false, checkHeader(true)),
      exposedHeader: stringList(r.exposed_header, `${at}.exposed_header`, false, checkHeader(false)),
      maxAge,
    };
  });
}

/** Parses the raw body of `corsRules/set` (JSON text). 400 naming `body` when it is not JSON. */
export function parseCorsRulesJson(text: string): CorsRule[] {
  return parseCorsRulesAsSent(text).rules;
}

/**
 * Parses the raw body of `corsRules/set` (JSON text) into the rules that match and the array as sent (kept to
 * answer `corsRules/get` verbatim). 400 naming `body` when it is not JSON, or the rule and field at fault.
 */
export function parseCorsRulesAsSent(text: string): { rules: CorsRule[]; asSent: unknown[] } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    bad('body', 'is not valid JSON');
  }
  const rules = parseCorsRules(body);
  return { rules, asSent: body as unknown[] };
}

/**
 * The answer of `corsRules/get` (docs/development/kodo-protocol.md §8.6): the array `corsRules/set` received, verbatim, when the rules
 * were set that way; otherwise the stored rules in Kodo's wire shape (`[]` when none).
 */
export function corsRulesAnswer(settings: { cors?: CorsRule[]; corsAsSent?: unknown[] }): unknown[] {
  return settings.corsAsSent ?? corsRulesToWire(settings.cors ?? []);
}

/** Stored rules in Kodo's wire shape (empty lists and a zero max_age left out). */
export function corsRulesToWire(rules: CorsRule[]): WireCorsRule[] {
  return rules.map((r) => ({
    allowed_origin: r.allowedOrigin,
    allowed_method: r.allowedMethod,
    ...(r.allowedHeader.length > 0 ? { allowed_header: r.allowedHeader } : {}),
    ...(r.exposedHeader.length > 0 ? { exposed_header: r.exposedHeader } : {}),
    ...(r.maxAge > 0 ? { max_age: r.maxAge } : {}),
  }));
}

/**
 * Sets the bucket's CORS rules, with the array as sent when they came from `corsRules/set` (answered verbatim by
 * `corsRules/get`) or the S3 configuration when they came from S3 PutBucketCors (`s3`, answered by GetBucketCors);
 * `[]` removes them (the bucket is back to the global `*`). 631 missing bucket.
 */
export async function setCorsRules(g: Granary, bucket: string, rules: CorsRule[], asSent?: unknown[], s3?: S3CorsRule[]): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    delete next.corsAsSent;
    delete next.corsS3;
    if (rules.length > 0) {
      next.cors = rules;
      if (asSent !== undefined) next.corsAsSent = asSent;
      if (s3 !== undefined) next.corsS3 = s3;
    } else delete next.cors;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** Whether an origin pattern matches `origin`: `*`, exact, or prefix/suffix around the first `*`. */
export function originMatches(pattern: string, origin: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === origin;
  const prefix = pattern.slice(0, star);
  const suffix = pattern.slice(star + 1);
  return origin.length >= prefix.length + suffix.length && origin.startsWith(prefix) && origin.endsWith(suffix);
}

/** A CORS request: its `Origin`, method (the requested one for a preflight) and requested headers (lower case). */
export interface CorsRequest {
  origin: string;
  method: string;
  headers: string[];
}

/** The header names of an `Access-Control-Request-Headers` value, lower case. */
export function requestedHeaders(value: string | undefined): string[] {
  return (value ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
}

/** The first rule allowing the request, or undefined. */
export function findCorsRule(rules: CorsRule[], req: CorsRequest): CorsRule | undefined {
  const method = req.method.toUpperCase();
  return rules.find(
    (r) =>
      r.allowedOrigin.some((o) => originMatches(o, req.origin)) &&
      r.allowedMethod.includes(method) &&
      req.headers.every((h) => r.allowedHeader.some((a) => originMatches(a.toLowerCase(), h))),
  );
}

/** Headers of a preflight answered by `rule` (the origin echoed; requested headers echoed when allowed). */
export function preflightHeaders(rule: CorsRule, req: CorsRequest): Record<string, string> {
  return {
    'access-control-allow-origin': req.origin,
    'access-control-allow-methods': rule.allowedMethod.join(', '),
    ...(req.headers.length > 0 ? { 'access-control-allow-headers': req.headers.join(', ') } : {}),
    'access-control-max-age': String(rule.maxAge),
  };
}

/** Headers of an actual response allowed by `rule`: the origin echoed, X-Log, X-Reqid and the rule's headers exposed. */
export function responseHeaders(rule: CorsRule, origin: string): Record<string, string> {
  const exposed = [...ALWAYS_EXPOSED];
  for (const h of rule.exposedHeader) if (!exposed.some((e) => e.toLowerCase() === h.toLowerCase())) exposed.push(h);
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': exposed.join(', ') };
}
