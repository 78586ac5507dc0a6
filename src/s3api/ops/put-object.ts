/**
 * PutObject (`PUT /<bucket>/<key>`): the body goes through the one upload path of every Kodo upload
 * (objects/receive.ts `receiveBody` → objects/put-object.ts `putObject`), under a put policy scoped to exactly
 * `<bucket>:<key>` (overwrite allowed), so quotas, event notifications, lifecycle rules, bitrot checksums and
 * inline storage apply as to any Kodo upload (docs/development/kodo-protocol.md §18.5).
 *
 * - Checks while streaming: `x-amz-content-sha256`, chunk signatures, `x-amz-checksum-*` (auth/authenticate.ts;
 *   a CRC-32 against the CRC-32 the upload path computes anyway); after: `Content-MD5` (InvalidDigest when not
 *   base64 of 16 bytes, BadDigest on a mismatch). A failed check commits nothing: the entry already under the key
 *   is untouched. The verified checksum is kept with the entry (object-checksum.ts, type FULL_OBJECT).
 * - `If-None-Match: *` → create only (412 PreconditionFailed when the key exists); `If-Match: <etag>` → replace
 *   only that object (412 when it differs, 404 NoSuchKey when there is none): write-conditions.ts, decided in the
 *   commit transaction.
 * - Content-Type kept verbatim when sent (else guessed from the key and the content, as Kodo does);
 *   `x-amz-meta-*`, Cache-Control, Content-Disposition, Content-Encoding, Content-Language, Expires kept
 *   (object-headers.ts); `x-amz-tagging` → the object's tags (tagging.ts; InvalidTag); `x-amz-storage-class` →
 *   the Kodo file type; `x-amz-acl` / `x-amz-grant-*` → the object's own ACL (bucket-acl.ts).
 * - Anonymous callers may put into a bucket whose ACL gives AllUsers WRITE (public-read-write); the upload acts
 *   as the bucket's owner.
 * - Answer: 200, ETag (object-headers.ts `etagOf`), the verified `x-amz-checksum-*` and `x-amz-checksum-type`.
 * - Object lock (object-lock.ts): `x-amz-object-lock-mode`, `-retain-until-date`, `-legal-hold` set the new version's lock
 *   (InvalidRequest on a bucket without object lock, InvalidArgument for a bad or past date); the bucket's default
 *   retention applies without them.
 * Errors: EntityTooLarge (past GRANARY_MAX_OBJECT_SIZE), AccessDenied (quota, another account's bucket),
 * NoSuchBucket, InvalidStorageClass, KeyTooLongError.
 */
import { requestLock } from '../object-lock.js';
import type { Granary } from '../../context.js';
import { putObject as commitPut } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import type { PutPolicy } from '../../policy/put-policy.js';
import { accessBucket, bucketName, objectKey, signedCaller } from '../access.js';
import { ACL_META } from '../acl-request.js';
import { hasAclHeaders, uploadAclMeta } from './bucket-acl.js';
import { S3Errors } from '../errors.js';
import { contentMd5Of, headerOf } from '../headers.js';
import type { VerifiedChecksum } from '../checksum.js';
import { CHECKSUM_META, checksumHeaders, encodeChecksum } from '../object-checksum.js';
import { etagOf, metaFromHeaders, typeOfStorageClass } from '../object-headers.js';
import { encodeTags, tagsOfHeader, TAGGING_META } from '../tagging.js';
import { writtenVersionHeader } from '../versions.js';
import type { S3Request, S3Response } from '../types.js';
import { checkEarly, writePrecondition } from '../write-conditions.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { keyMd5Of, SSE_META, sseHeaders, sseMetaValue, writeSse } from '../sse.js';

/** Lifetime of the internal put policy, seconds (only its deadline check reads it). */
const POLICY_SECONDS = 24 * 3600;

/** The put policy of an S3 write of `<bucket>:<key>` (overwrite unless `insertOnly`) of Kodo file type `fileType`. */
export function s3PutPolicy(g: Granary, bucket: string, key: string, opts: { insertOnly: boolean; fileType: number; trustMime: boolean }): PutPolicy {
  return {
    scope: `${bucket}:${key}`,
    bucket,
    scopeKey: key,
    isPrefixalScope: false,
    deadline: Math.floor(g.clock.nowMs() / 1000) + POLICY_SECONDS,
    insertOnly: opts.insertOnly,
    callbackFetchKey: false,
    persistentType: 0,
    forceSaveKey: false,
    detectMime: opts.trustMime ? -1 : 0,
    fileType: opts.fileType,
  };
}

export async function s3PutObject(g: Granary, req: S3Request): Promise<S3Response> {
  // Anonymous: the bucket's ACL must give WRITE (public-read-write); the object is then its owner's write.
  const anonymous = req.caller.accessKey === undefined;
  const bucketRec = anonymous || hasAclHeaders(req) ? await accessBucket(g, req, anonymous ? 'WRITE' : 'OWNER') : undefined;
  const accessKey = anonymous && bucketRec ? bucketRec.owner : signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const md5 = contentMd5Of(req);
  const fileType = typeOfStorageClass(headerOf(req, 'x-amz-storage-class'));
  const meta = metaFromHeaders(req.headers);
  const tagging = headerOf(req, 'x-amz-tagging');
  if (tagging !== undefined && tagging !== '') meta[TAGGING_META] = encodeTags(tagsOfHeader(tagging));
  const acl = bucketRec ? uploadAclMeta(g, req, bucketRec, accessKey) : undefined;
  if (acl !== undefined) meta[ACL_META] = acl;
  const sse = writeSse(g, req);
  const sseValue = sseMetaValue(sse);
  if (sseValue) meta[SSE_META] = sseValue;
  if (req.contentLength !== undefined && req.contentLength > g.config.maxObjectBytes) {
    throw S3Errors.EntityTooLarge(`Your proposed upload exceeds the maximum allowed size (${g.config.maxObjectBytes} bytes)`);
  }
  const lock = await requestLock(g, req, bucketRec);
  const precondition = writePrecondition(req);
  await checkEarly(g, precondition, bucket, key);
  const clientMime = headerOf(req, 'content-type');
  const policy = s3PutPolicy(g, bucket, key, { insertOnly: false, fileType, trustMime: clientMime !== undefined && clientMime !== '' });
  // The upload path computes the content's CRC-32 (bitrot checksums): a CRC-32 checksum is checked against it.
  // SSE-C: the blob (and inline bytes) are sealed with the customer key too (ports/customer-key.ts).
  const customerKey = sse.kind === 'C' ? sse.key : undefined;
  const body = await withCustomerKey(customerKey, () =>
    receiveBody(g, req.body({ deferCrc32: true }), {
      maxBytes: g.config.maxObjectBytes,
      inlineMax: g.config.inlineMaxBytes,
      ...(req.contentLength !== undefined ? { expectedBytes: req.contentLength } : {}),
    }),
  );
  let sum: VerifiedChecksum | undefined;
  try {
    if (md5 !== undefined && body.digests.md5 !== md5) throw S3Errors.BadDigest('The Content-MD5 you specified did not match what we received.');
    sum = req.checksum(body.digests.crc32);
  } catch (err) {
    await body.staged.discard();
    throw err;
  }
  if (sum) meta[CHECKSUM_META] = encodeChecksum({ ...sum, type: 'FULL_OBJECT' });
  const result = await withCustomerKey(customerKey, () => commitPut(g, body, {
    policy,
    accessKey,
    door: 's3',
    clientKey: key,
    ...(clientMime ? { clientMime } : {}),
    custom: {},
    meta,
    reqId: req.reqId,
    ...(precondition ? { precondition } : {}),
    ...(lock ? { lock } : {}),
  }));
  g.metrics?.upload('s3', result.record.fsize);
  const headers: Record<string, string> = { etag: etagOf(result.record), ...writtenVersionHeader(result.record), ...sseHeaders(result.record.meta[SSE_META], keyMd5Of(sse)) };
  if (sum) Object.assign(headers, checksumHeaders({ ...sum, type: 'FULL_OBJECT' }));
  return { status: 200, headers };
}
