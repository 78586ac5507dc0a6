/** DeleteBucket (`DELETE /<bucket>`): 204; BucketNotEmpty (409) while it holds entries; NoSuchBucket; AccessDenied. */
import { dropBucket } from '../../buckets/buckets.js';
import type { Granary } from '../../context.js';
import { accessBucket } from '../access.js';
import type { S3Request, S3Response } from '../types.js';

export async function deleteBucket(g: Granary, req: S3Request): Promise<S3Response> {
  const rec = await accessBucket(g, req);
  await dropBucket(g, rec.name);
  return { status: 204 };
}
