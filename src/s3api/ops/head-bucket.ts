/** HeadBucket (`HEAD /<bucket>`): 200 with `x-amz-bucket-region` when the caller may act on it; 404 / 403 (no body). */
import type { Granary } from '../../context.js';
import { accessBucket } from '../access.js';
import { s3RegionOf } from '../region.js';
import type { S3Request, S3Response } from '../types.js';

export async function headBucket(g: Granary, req: S3Request): Promise<S3Response> {
  const rec = await accessBucket(g, req);
  return { status: 200, headers: { 'x-amz-bucket-region': s3RegionOf(rec.region) } };
}
