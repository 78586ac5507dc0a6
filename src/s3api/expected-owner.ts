/**
 * `x-amz-expected-bucket-owner` (AWS "Verifying bucket ownership with bucket owner condition"): a request naming a
 * bucket with this header is refused with AccessDenied (403) when the bucket's owner (its canonical id: the owning
 * account's AccessKey) is not the one given; a missing bucket is left to the operation (NoSuchBucket). Checked for
 * every operation on a bucket, before it runs (server.ts).
 */
import type { Granary } from '../context.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import type { S3Request } from './types.js';

/** AccessDenied when the request's `x-amz-expected-bucket-owner` is not its bucket's owner. */
export async function checkExpectedOwner(g: Granary, req: S3Request): Promise<void> {
  const expected = headerOf(req, 'x-amz-expected-bucket-owner');
  if (expected === undefined || req.bucket === undefined) return;
  const rec = await g.meta.getBucket(req.bucket);
  if (rec && rec.owner !== expected.trim()) throw S3Errors.AccessDenied('the bucket is not owned by the expected bucket owner');
}
