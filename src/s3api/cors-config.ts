/**
 * The `<CORSConfiguration>` of PutBucketCors / GetBucketCors with S3's own rules (AWS S3 API Reference,
 * PutBucketCors and CORSRule; docs/reference/s3-compatibility.md "CORS"):
 *
 * - `AllowedOrigin` (1 or more): any string with at most one `*` wildcard anywhere — `*`, `http://*.example.com`,
 *   `*.get`, `example.origin` (no scheme needed); compared case-sensitively with `Origin`.
 * - `AllowedMethod` (1 or more): GET, PUT, POST, DELETE, HEAD, exactly so (S3 refuses `get`).
 * - `AllowedHeader`: header names with at most one `*` each (`*`, `x-amz-*`), compared case-insensitively.
 * - `ExposeHeader`: header names; `MaxAgeSeconds`: seconds (0..2^31−1); `ID`: up to 255 characters.
 * - At most 100 rules.
 *
 * Errors: MalformedXML (no `CORSRule`, a rule without origin or method, a bad MaxAgeSeconds), InvalidRequest (an
 * unsupported method, two wildcards in an origin or header, more than 100 rules, an ID too long).
 *
 * The configuration is kept as sent (`S3CorsRule`, BucketSettings.corsS3) so GetBucketCors answers it exactly, and
 * as matching rules (`CorsRule`, BucketSettings.cors) that answer browsers on both doors; Kodo's `corsRules/get`
 * shows the matching rules (origins and headers verbatim; S3 rule IDs have no place there).
 */
import type { CorsRule, S3CorsRule } from '../ports/meta.js';
import { S3Errors } from './errors.js';
import { el, textOf, xmlDocument, type XmlNode } from './xml.js';

/** Most rules of one configuration (S3's limit). */
export const MAX_S3_CORS_RULES = 100;
const METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE', 'HEAD']);
const MAX_AGE_LIMIT = 2_147_483_647;

/** The texts of a repeatable child element, trimmed; MalformedXML for an element with children. */
function texts(node: XmlNode | XmlNode[] | undefined): string[] {
  if (node === undefined) return [];
  return (Array.isArray(node) ? node : [node]).map((n) => {
    const t = textOf(n);
    if (t === undefined) throw S3Errors.MalformedXML();
    return t.trim();
  });
}

/** InvalidRequest when `value` holds more than one `*`. */
function oneWildcard(kind: string, value: string): string {
  if (value.indexOf('*') !== value.lastIndexOf('*')) throw S3Errors.InvalidRequest(`${kind} "${value}" can not have more than one wildcard.`);
  return value;
}

/** The rules of a parsed `<CORSConfiguration>` document, as sent (see the module comment). */
export function parseS3CorsConfiguration(doc: Record<string, XmlNode>): S3CorsRule[] {
  const root = doc.CORSConfiguration;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const list = root.CORSRule;
  if (list === undefined) throw S3Errors.MalformedXML();
  const rules = Array.isArray(list) ? list : [list];
  if (rules.length > MAX_S3_CORS_RULES) throw S3Errors.InvalidRequest(`The number of CORS rules should not exceed allowed limit of ${MAX_S3_CORS_RULES} rules.`);
  return rules.map((r): S3CorsRule => {
    if (typeof r === 'string' || Array.isArray(r)) throw S3Errors.MalformedXML();
    const origins = texts(r.AllowedOrigin).map((o) => oneWildcard('AllowedOrigin', o));
    const methods = texts(r.AllowedMethod);
    if (origins.length === 0 || methods.length === 0) throw S3Errors.MalformedXML();
    for (const m of methods) {
      if (!METHODS.has(m)) throw S3Errors.InvalidRequest(`Found unsupported HTTP method in CORS config. Unsupported method is ${m}`);
    }
    const id = textOf(r.ID);
    if (id !== undefined && id.length > 255) throw S3Errors.InvalidRequest('The ID of a CORS rule must be at most 255 characters');
    const maxAge = textOf(r.MaxAgeSeconds)?.trim();
    if (maxAge !== undefined && (!/^\d{1,10}$/.test(maxAge) || Number(maxAge) > MAX_AGE_LIMIT)) throw S3Errors.MalformedXML();
    return {
      ...(id !== undefined ? { id } : {}),
      allowedOrigin: origins,
      allowedMethod: methods,
      allowedHeader: texts(r.AllowedHeader).map((h) => oneWildcard('AllowedHeader', h)),
      exposeHeader: texts(r.ExposeHeader),
      ...(maxAge !== undefined ? { maxAgeSeconds: Number(maxAge) } : {}),
    };
  });
}

/** The matching rules of an S3 configuration (empty entries left out, as Kodo's). */
export function matchingRules(rules: S3CorsRule[]): CorsRule[] {
  const some = (l: string[]): string[] => l.filter((v) => v !== '');
  return rules.map((r) => ({
    allowedOrigin: some(r.allowedOrigin),
    allowedMethod: [...new Set(r.allowedMethod)],
    allowedHeader: some(r.allowedHeader),
    exposedHeader: some(r.exposeHeader),
    maxAge: r.maxAgeSeconds ?? 0,
  }));
}

/** The S3 form of rules set through Kodo's API, the console or the CLI (no IDs; a zero max age left out). */
export function s3RulesOf(rules: CorsRule[]): S3CorsRule[] {
  return rules.map((r) => ({
    allowedOrigin: r.allowedOrigin,
    allowedMethod: r.allowedMethod,
    allowedHeader: r.allowedHeader,
    exposeHeader: r.exposedHeader,
    ...(r.maxAge > 0 ? { maxAgeSeconds: r.maxAge } : {}),
  }));
}

/** The `<CORSConfiguration>` document of S3 rules (elements in the order of the S3 API Reference). */
export function s3CorsXml(rules: S3CorsRule[]): string {
  const inner = rules
    .map(
      (r) =>
        '<CORSRule>' +
        (r.id !== undefined ? el('ID', r.id) : '') +
        r.allowedHeader.map((h) => el('AllowedHeader', h)).join('') +
        r.allowedMethod.map((m) => el('AllowedMethod', m)).join('') +
        r.allowedOrigin.map((o) => el('AllowedOrigin', o)).join('') +
        r.exposeHeader.map((h) => el('ExposeHeader', h)).join('') +
        (r.maxAgeSeconds !== undefined ? el('MaxAgeSeconds', r.maxAgeSeconds) : '') +
        '</CORSRule>',
    )
    .join('');
  return xmlDocument('CORSConfiguration', inner);
}
