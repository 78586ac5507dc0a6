/**
 * CreateMultipartUpload (`POST /<bucket>/<key>?uploads`): starts a Kodo v2 multipart session for `<bucket>/<key>`
 * (objects/resumable/multipart.ts `initiateUpload`, 7 days) and keeps what this request sets for the object —
 * Content-Type, `x-amz-meta-*`, the stored headers, `x-amz-storage-class`, `x-amz-tagging` — as the upload's
 * settings (multipart.ts), applied at complete (docs/development/kodo-protocol.md §18.8).
 * Answer: `<InitiateMultipartUploadResult><Bucket/><Key/><UploadId/></InitiateMultipartUploadResult>`, with
 * `x-amz-checksum-algorithm` echoed when sent. Errors: NoSuchBucket, AccessDenied, InvalidStorageClass,
 * InvalidArgument (metadata over 2 KiB), InvalidTag.
 */
import type { Granary } from '../../context.js';
import { initiateUpload } from '../../objects/resumable/multipart.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { headerOf } from '../headers.js';
import { saveSettings } from '../multipart.js';
import { metaFromHeaders, typeOfStorageClass } from '../object-headers.js';
import { encodeTags, tagsOfHeader, TAGGING_META } from '../tagging.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';
import { s3PutPolicy } from './put-object.js';

export async function createMultipartUpload(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = await accessBucket(g, req);
  const key = objectKey(req);
  const fileType = typeOfStorageClass(headerOf(req, 'x-amz-storage-class'));
  const meta = metaFromHeaders(req.headers);
  const tagging = headerOf(req, 'x-amz-tagging');
  if (tagging !== undefined && tagging !== '') meta[TAGGING_META] = encodeTags(tagsOfHeader(tagging));
  const mime = headerOf(req, 'content-type');
  const policy = s3PutPolicy(g, bucket.name, key, { insertOnly: false, fileType, trustMime: !!mime });
  const { uploadId } = await initiateUpload(g, accessKey, policy, { bucket: bucket.name, key });
  await saveSettings(g, uploadId, { ...(mime ? { mime } : {}), meta, fileType });
  const headers: Record<string, string> = {};
  const algorithm = headerOf(req, 'x-amz-checksum-algorithm');
  if (algorithm) headers['x-amz-checksum-algorithm'] = algorithm.toUpperCase();
  return xmlResponse(xmlDocument('InitiateMultipartUploadResult', el('Bucket', bucket.name) + el('Key', key) + el('UploadId', uploadId)), 200, headers);
}
