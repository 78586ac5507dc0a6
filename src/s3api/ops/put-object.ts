/**
 * PutObject (`PUT /<bucket>/<key>`): the body goes through the one upload path of every Kodo upload
 * (objects/receive.ts `receiveBody` → objects/put-object.ts `putObject`), under a put policy scoped to exactly
 * `<bucket>:<key>` (overwrite allowed), so quotas, event notifications, lifecycle rules, bitrot checksums and
 * inline storage apply as to any Kodo upload (docs/development/kodo-protocol.md §18.5).
 *
 * - Checks while streaming: `x-amz-content-sha256`, chunk signatures, `x-amz-checksum-*` (auth/authenticate.ts);
 *   after: `Content-MD5` (InvalidDigest when not base64 of 16 bytes, BadDigest on a mismatch). A failed check
 *   commits nothing: the entry already under the key is untouched.
 * - `If-None-Match: *` → create only (PreconditionFailed 412 when the key exists, decided in the commit);
 *   `If-Match: <etag>` → replace only that version (checked before the upload; NoSuchKey when missing).
 * - Content-Type kept verbatim when sent (else guessed from the key and the content, as Kodo does);
 *   `x-amz-meta-*`, Cache-Control, Content-Disposition, Content-Encoding, Content-Language, Expires kept
 *   (object-headers.ts); `x-amz-storage-class` → the Kodo file type.
 * - Answer: 200, ETag (object-headers.ts `etagOf`), the verified `x-amz-checksum-*` echoed.
 * Errors: EntityTooLarge (past GRANARY_MAX_OBJECT_SIZE), AccessDenied (quota, another account's bucket),
 * NoSuchBucket, InvalidStorageClass, KeyTooLongError.
 */
import type { Granary } from '../../context.js';
import { findLiveObject } from '../../objects/read.js';
import { putObject as commitPut } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import type { PutPolicy } from '../../policy/put-policy.js';
import { bucketName, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { contentMd5Of, headerOf } from '../headers.js';
import { etagOf, metaFromHeaders, typeOfStorageClass } from '../object-headers.js';
import type { S3Request, S3Response } from '../types.js';

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

/** Checks `If-Match` / `If-None-Match` of a write; returns whether the write is create-only. */
async function writeConditions(g: Granary, req: S3Request, bucket: string, key: string): Promise<boolean> {
  const ifNoneMatch = headerOf(req, 'if-none-match');
  const ifMatch = headerOf(req, 'if-match');
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== '*') {
    throw S3Errors.NotImplemented('If-None-Match on a write only supports *');
  }
  if (ifMatch !== undefined) {
    const rec = await findLiveObject(g, bucket, key);
    if (!rec) throw S3Errors.NoSuchKey();
    const wanted = ifMatch.split(',').map((t) => t.trim());
    if (!wanted.includes('*') && !wanted.includes(etagOf(rec))) throw S3Errors.PreconditionFailed();
  }
  return ifNoneMatch !== undefined;
}

export async function putObject(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const md5 = contentMd5Of(req);
  const fileType = typeOfStorageClass(headerOf(req, 'x-amz-storage-class'));
  const meta = metaFromHeaders(req.headers);
  if (req.contentLength !== undefined && req.contentLength > g.config.maxObjectBytes) {
    throw S3Errors.EntityTooLarge(`Your proposed upload exceeds the maximum allowed size (${g.config.maxObjectBytes} bytes)`);
  }
  const insertOnly = await writeConditions(g, req, bucket, key);
  const clientMime = headerOf(req, 'content-type');
  const policy = s3PutPolicy(g, bucket, key, { insertOnly, fileType, trustMime: clientMime !== undefined && clientMime !== '' });
  const body = await receiveBody(g, req.body(), {
    maxBytes: g.config.maxObjectBytes,
    inlineMax: g.config.inlineMaxBytes,
    ...(req.contentLength !== undefined ? { expectedBytes: req.contentLength } : {}),
  });
  if (md5 !== undefined && body.digests.md5 !== md5) {
    await body.staged.discard();
    throw S3Errors.BadDigest('The Content-MD5 you specified did not match what we received.');
  }
  const result = await commitPut(g, body, {
    policy,
    accessKey,
    clientKey: key,
    ...(clientMime ? { clientMime } : {}),
    custom: {},
    meta,
    reqId: req.reqId,
  });
  g.metrics?.upload('s3', result.record.fsize);
  const headers: Record<string, string> = { etag: etagOf(result.record) };
  const sum = req.checksum();
  if (sum) headers[`x-amz-checksum-${sum.algorithm}`] = sum.value;
  return { status: 200, headers };
}
