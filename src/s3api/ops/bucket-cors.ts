/**
 * GetBucketCors, PutBucketCors, DeleteBucketCors (`GET|PUT|DELETE /<bucket>?cors`): the bucket's Kodo CORS rules
 * (buckets/cors.ts; the same rules answer browsers on both doors), docs/development/kodo-protocol.md §18.10.
 * `<CORSRule>` ↔ a Kodo rule: AllowedOrigin ↔ allowed_origin, AllowedMethod ↔ allowed_method, AllowedHeader ↔
 * allowed_header, ExposeHeader ↔ exposed_header, MaxAgeSeconds ↔ max_age. Kodo's checks apply (≤ 10 rules,
 * methods GET/HEAD/POST/PUT/DELETE, …): a refusal is InvalidRequest naming the rule and field. A rule `ID` cannot be
 * kept → InvalidArgument (refused, not dropped). Get with no rules → NoSuchCORSConfiguration (404).
 */
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { corsRulesToWire, parseCorsRules, setCorsRules, type WireCorsRule } from '../../buckets/cors.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlDocument, type XmlNode } from '../xml.js';

/** The texts of a repeatable child element. */
function texts(node: XmlNode | XmlNode[] | undefined): string[] {
  if (node === undefined) return [];
  return (Array.isArray(node) ? node : [node]).map((n) => {
    const t = textOf(n);
    if (t === undefined) throw S3Errors.MalformedXML();
    return t;
  });
}

/** The Kodo wire rules of a `<CORSConfiguration>` document. */
function wireRules(doc: Record<string, XmlNode>): WireCorsRule[] {
  const root = doc.CORSConfiguration;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const rules = root.CORSRule;
  if (rules === undefined) throw S3Errors.MalformedXML();
  return (Array.isArray(rules) ? rules : [rules]).map((r) => {
    if (typeof r === 'string' || Array.isArray(r)) throw S3Errors.MalformedXML();
    if (r.ID !== undefined) throw S3Errors.InvalidArgument('CORS rule IDs cannot be stored by this server; send the rule without <ID>');
    const maxAge = textOf(r.MaxAgeSeconds);
    if (maxAge !== undefined && !/^\d{1,10}$/.test(maxAge.trim())) throw S3Errors.MalformedXML();
    const headers = texts(r.AllowedHeader);
    const exposed = texts(r.ExposeHeader);
    return {
      allowed_origin: texts(r.AllowedOrigin),
      allowed_method: texts(r.AllowedMethod),
      ...(headers.length > 0 ? { allowed_header: headers } : {}),
      ...(exposed.length > 0 ? { exposed_header: exposed } : {}),
      ...(maxAge !== undefined ? { max_age: Number(maxAge) } : {}),
    };
  });
}

export async function getBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = corsRulesToWire(bucket.settings.cors ?? []);
  if (rules.length === 0) throw S3Errors.NoSuchCORSConfiguration();
  const inner = rules
    .map(
      (r) =>
        '<CORSRule>' +
        (r.allowed_header ?? []).map((h) => el('AllowedHeader', h)).join('') +
        r.allowed_method.map((m) => el('AllowedMethod', m)).join('') +
        r.allowed_origin.map((o) => el('AllowedOrigin', o)).join('') +
        (r.exposed_header ?? []).map((h) => el('ExposeHeader', h)).join('') +
        (r.max_age !== undefined ? el('MaxAgeSeconds', r.max_age) : '') +
        '</CORSRule>',
    )
    .join('');
  return xmlResponse(xmlDocument('CORSConfiguration', inner));
}

export async function putBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const wire = wireRules(parseXml(await readXmlBody(req.body())));
  let rules;
  try {
    rules = parseCorsRules(wire);
  } catch (err) {
    if (isKodoError(err)) throw S3Errors.InvalidRequest(err.message);
    throw err;
  }
  await setCorsRules(g, bucket.name, rules);
  return { status: 200 };
}

export async function deleteBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setCorsRules(g, bucket.name, []);
  return { status: 204 };
}
