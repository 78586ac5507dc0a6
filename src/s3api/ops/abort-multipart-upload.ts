/**
 * AbortMultipartUpload (`DELETE /<bucket>/<key>?uploadId=<id>`): drops the upload and frees its parts (Kodo's v2
 * abort, objects/resumable/parts.ts), docs/development/kodo-protocol.md §18.8. Answer 204; NoSuchUpload (404)
 * when the upload is unknown, expired, completed or not this key's.
 */
import type { Granary } from '../../context.js';
import { abortUpload } from '../../objects/resumable/parts.js';
import { bucketName, objectKey, signedCaller } from '../access.js';
import { s3Upload, uploadIdOf } from '../multipart.js';
import type { S3Request, S3Response } from '../types.js';

export async function abortMultipartUpload(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  await s3Upload(g, accessKey, bucket, key, uploadId);
  await abortUpload(g, accessKey, { bucket, key }, uploadId);
  return { status: 204 };
}
