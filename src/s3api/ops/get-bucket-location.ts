/** GetBucketLocation (`GET /<bucket>?location`): the bucket's region in its S3 name (region.ts). */
import type { Granary } from '../../context.js';
import { accessBucket } from '../access.js';
import { s3RegionOf } from '../region.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { xmlDocument, xmlEscape } from '../xml.js';

export async function getBucketLocation(g: Granary, req: S3Request): Promise<S3Response> {
  const rec = await accessBucket(g, req);
  return xmlResponse(xmlDocument('LocationConstraint', xmlEscape(s3RegionOf(rec.region))));
}
