/**
 * CreateMultipartUpload (`POST /<bucket>/<key>?uploads`): starts a Kodo v2 multipart session for `<bucket>/<key>`
 * (objects/resumable/parts.ts `initiateUpload`, 7 days) and keeps what this request sets for the object —
 * Content-Type, `x-amz-meta-*`, the stored headers, `x-amz-storage-class`, `x-amz-tagging`, the object lock
 * headers (object-lock.ts) — as the upload's
 * settings (multipart.ts), applied at complete (docs/development/kodo-protocol.md §18.8).
 * The object's checksum (AWS API_CreateMultipartUpload `x-amz-checksum-algorithm`, `x-amz-checksum-type`; S3 User
 * Guide "Checking object integrity"): CRC32 and CRC32C COMPOSITE (the default) or FULL_OBJECT, CRC64NVME
 * FULL_OBJECT only (its default), SHA1 and SHA256 COMPOSITE only; another combination, an unknown algorithm, or a
 * type without an algorithm → InvalidRequest.
 * Answer: `<InitiateMultipartUploadResult><Bucket/><Key/><UploadId/></InitiateMultipartUploadResult>`, with
 * `x-amz-checksum-algorithm` and `x-amz-checksum-type` when an algorithm was chosen. Errors: NoSuchBucket,
 * AccessDenied, InvalidStorageClass, InvalidArgument (metadata over 2 KiB), InvalidTag, InvalidRequest.
 */
import { askedLock, lockFieldsOfHeaders } from '../object-lock.js';
import type { Granary } from '../../context.js';
import { initiateUpload } from '../../objects/resumable/parts.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { headerOf } from '../headers.js';
import { S3Errors } from '../errors.js';
import { saveSettings, type UploadSettings } from '../multipart.js';
import { algorithmName, algorithmOfName, type ChecksumType } from '../object-checksum.js';
import { metaFromHeaders, typeOfStorageClass } from '../object-headers.js';
import { encodeTags, tagsOfHeader, TAGGING_META } from '../tagging.js';
import { ACL_META } from '../acl-request.js';
import { uploadAclMeta } from './bucket-acl.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';
import { s3PutPolicy } from './put-object.js';
import { keyMd5Of, SSE_META, sseHeaders, sseMetaValue, writeSse } from '../sse.js';

/** The checksum an upload's object gets, from the create request's headers (see the module comment). */
export function uploadChecksum(req: S3Request): UploadSettings['checksum'] {
  const name = headerOf(req, 'x-amz-checksum-algorithm');
  const typeName = headerOf(req, 'x-amz-checksum-type')?.trim().toUpperCase();
  if (name === undefined || name.trim() === '') {
    if (typeName !== undefined && typeName !== '') throw S3Errors.InvalidRequest('The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    return undefined;
  }
  const algorithm = algorithmOfName(name);
  if (!algorithm) throw S3Errors.InvalidRequest(`Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]`);
  if (typeName !== undefined && typeName !== '' && typeName !== 'COMPOSITE' && typeName !== 'FULL_OBJECT') {
    throw S3Errors.InvalidRequest('Value for x-amz-checksum-type header is invalid.');
  }
  const type: ChecksumType = typeName === 'COMPOSITE' || typeName === 'FULL_OBJECT' ? typeName : algorithm === 'crc64nvme' ? 'FULL_OBJECT' : 'COMPOSITE';
  const allowed = algorithm === 'crc64nvme' ? type === 'FULL_OBJECT' : algorithm.startsWith('sha') ? type === 'COMPOSITE' : true;
  if (!allowed) throw S3Errors.InvalidRequest(`The ${type} checksum type cannot be used with the ${algorithm} checksum algorithm.`);
  return { algorithm, type };
}

export async function createMultipartUpload(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = await accessBucket(g, req);
  const key = objectKey(req);
  const fileType = typeOfStorageClass(headerOf(req, 'x-amz-storage-class'));
  const meta = metaFromHeaders(req.headers);
  const tagging = headerOf(req, 'x-amz-tagging');
  if (tagging !== undefined && tagging !== '') meta[TAGGING_META] = encodeTags(tagsOfHeader(tagging));
  const acl = uploadAclMeta(g, req, bucket, accessKey);
  if (acl !== undefined) meta[ACL_META] = acl;
  const sse = writeSse(g, req);
  const sseValue = sseMetaValue(sse);
  if (sseValue) meta[SSE_META] = sseValue;
  const mime = headerOf(req, 'content-type');
  const checksum = uploadChecksum(req);
  const lock = askedLock(bucket, lockFieldsOfHeaders(req.headers), g.clock.nowMs());
  const policy = s3PutPolicy(g, bucket.name, key, { insertOnly: false, fileType, trustMime: !!mime });
  const { uploadId } = await initiateUpload(g, accessKey, policy, { bucket: bucket.name, key });
  await saveSettings(g, uploadId, { ...(mime ? { mime } : {}), meta, fileType, ...(checksum ? { checksum } : {}), ...(lock ? { lock } : {}) });
  const headers: Record<string, string> = sseHeaders(sseValue ?? (bucket.settings.encryption ? 'AES256' : undefined), keyMd5Of(sse));
  if (checksum) {
    headers['x-amz-checksum-algorithm'] = algorithmName(checksum.algorithm);
    headers['x-amz-checksum-type'] = checksum.type;
  }
  return xmlResponse(xmlDocument('InitiateMultipartUploadResult', el('Bucket', bucket.name) + el('Key', key) + el('UploadId', uploadId)), 200, headers);
}
