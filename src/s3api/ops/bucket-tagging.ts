/**
 * GetBucketTagging, PutBucketTagging, DeleteBucketTagging (`GET|PUT|DELETE /<bucket>?tagging`): the same tags as
 * Kodo's bucketTagging (buckets/tagging.ts, at most 10; its key/value rules apply: a refusal is InvalidTag),
 * docs/development/kodo-protocol.md §18.10. Get answers NoSuchTagSet (404) when the bucket has none.
 */
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { parseTagging, setBucketTags } from '../../buckets/tagging.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { tagsOfXml } from '../tagging.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { parseXml, readXmlBody } from '../xml.js';
import { taggingXml } from './object-tagging.js';

export async function getBucketTagging(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const tags = bucket.settings.tags ?? [];
  if (tags.length === 0) throw S3Errors.NoSuchTagSet();
  return xmlResponse(taggingXml(tags.map((t) => [t.key, t.value])));
}

export async function putBucketTagging(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const tags = tagsOfXml(parseXml(await readXmlBody(req.body())), 10);
  let checked;
  try {
    // Kodo's own rules (characters, lengths, no `kodo` prefix) through its parser.
    checked = parseTagging(JSON.stringify({ Tags: tags.map(([Key, Value]) => ({ Key, Value })) }));
  } catch (err) {
    if (isKodoError(err)) throw S3Errors.InvalidTag(err.message);
    throw err;
  }
  await setBucketTags(g, bucket.name, checked);
  return { status: 204 };
}

export async function deleteBucketTagging(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setBucketTags(g, bucket.name, []);
  return { status: 204 };
}
