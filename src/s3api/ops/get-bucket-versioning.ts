/**
 * GetBucketVersioning (`GET /<bucket>?versioning`): Granary buckets are never versioned, so the answer is the
 * empty `<VersioningConfiguration/>` S3 gives for a bucket whose versioning was never enabled
 * (docs/development/kodo-protocol.md §18.10).
 */
import type { Granary } from '../../context.js';
import { accessBucket, signedCaller } from '../access.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { xmlDocument } from '../xml.js';

export async function getBucketVersioning(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  await accessBucket(g, req);
  return xmlResponse(xmlDocument('VersioningConfiguration', ''));
}
