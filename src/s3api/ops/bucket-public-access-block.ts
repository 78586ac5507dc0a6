/**
 * PutPublicAccessBlock, GetPublicAccessBlock, DeletePublicAccessBlock (`PUT|GET|DELETE /<bucket>?publicAccessBlock`;
 * AWS API_PutPublicAccessBlock, API_GetPublicAccessBlock, API_DeletePublicAccessBlock): the bucket's Block Public
 * Access settings (public-access-block.ts), kept in its settings (`publicAccessBlock`) and applied where ACLs and
 * the bucket policy decide (access.ts, ops/bucket-acl.ts, ops/bucket-policy.ts, auth-step.ts).
 *
 * Put: body `<PublicAccessBlockConfiguration>` with any of BlockPublicAcls, IgnorePublicAcls, BlockPublicPolicy,
 * RestrictPublicBuckets (absent = false), replacing the settings; 200. A body that is not that → MalformedXML (400).
 * Get: the four settings; NoSuchPublicAccessBlockConfiguration (404) when none was put. Delete: 204 (also when none).
 * The bucket's owner (or the root key, or a sub-user IAM allows) only; NoSuchBucket, AccessDenied.
 */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { parsePublicAccessBlock, publicAccessBlockXml } from '../public-access-block.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { readXmlBody } from '../xml.js';

export async function putPublicAccessBlock(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const pab = parsePublicAccessBlock(await readXmlBody(req.body()));
  const updated = await g.meta.updateBucketSettings(bucket.name, (cur) => ({ ...cur, publicAccessBlock: pab }));
  if (!updated) throw Errors.noSuchBucket(bucket.name);
  return { status: 200 };
}

export async function getPublicAccessBlock(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const pab = bucket.settings.publicAccessBlock;
  if (!pab) throw S3Errors.NoSuchPublicAccessBlockConfiguration();
  return xmlResponse(publicAccessBlockXml(pab));
}

export async function deletePublicAccessBlock(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const updated = await g.meta.updateBucketSettings(bucket.name, (cur) => {
    const next = { ...cur };
    delete next.publicAccessBlock;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket.name);
  return { status: 204 };
}
