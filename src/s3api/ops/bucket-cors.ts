/**
 * GetBucketCors, PutBucketCors, DeleteBucketCors (`GET|PUT|DELETE /<bucket>?cors`), docs/development/kodo-protocol.md
 * §18.10. The configuration follows S3's rules (s3api/cors-config.ts: origins with one `*` anywhere and no scheme
 * needed, methods GET PUT POST DELETE HEAD, header wildcards, rule IDs, up to 100 rules); it is kept as sent, so
 * GetBucketCors answers it exactly, and as the bucket's matching CORS rules (buckets/cors.ts), which answer browsers
 * on both doors and which Kodo's `corsRules/get` shows. Rules set through Kodo's API, the console or the CLI answer
 * GetBucketCors in S3's shape (no IDs).
 * Get with no rules → NoSuchCORSConfiguration (404); Put errors: MalformedXML, InvalidRequest (cors-config.ts).
 */
import type { Granary } from '../../context.js';
import { setCorsRules } from '../../buckets/cors.js';
import { accessBucket, signedCaller } from '../access.js';
import { matchingRules, parseS3CorsConfiguration, s3CorsXml, s3RulesOf } from '../cors-config.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { parseXml, readXmlBody } from '../xml.js';

export async function getBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const { settings } = await accessBucket(g, req);
  const rules = settings.corsS3 ?? s3RulesOf(settings.cors ?? []);
  if (rules.length === 0) throw S3Errors.NoSuchCORSConfiguration();
  return xmlResponse(s3CorsXml(rules));
}

export async function putBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = parseS3CorsConfiguration(parseXml(await readXmlBody(req.body())));
  await setCorsRules(g, bucket.name, matchingRules(rules), undefined, rules);
  return { status: 200 };
}

export async function deleteBucketCors(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setCorsRules(g, bucket.name, []);
  return { status: 204 };
}
