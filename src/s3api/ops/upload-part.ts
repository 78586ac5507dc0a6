/**
 * UploadPart (`PUT /<bucket>/<key>?partNumber=<n>&uploadId=<id>`) and UploadPartCopy (the same with
 * `x-amz-copy-source`, optional `x-amz-copy-source-range: bytes=<first>-<last>`): part `n` (1..10000) of the
 * upload is stored as a sealed blob through Kodo's v2 part upload (objects/resumable/multipart.ts `uploadPart`;
 * a re-upload replaces it), docs/development/kodo-protocol.md §18.8.
 *
 * - UploadPart: the verified body (signatures, `x-amz-content-sha256`, `x-amz-checksum-*` checked as it streams);
 *   `Content-MD5` checked (InvalidDigest, BadDigest). Answer 200 with `ETag: "<hex MD5>"` and the verified checksum.
 * - UploadPartCopy: the source entry's bytes (or the range; InvalidArgument when outside the object) are read and
 *   stored as the part (a part is a blob of its own; only whole-object copies share bytes).
 *   `x-amz-copy-source-if-*` → PreconditionFailed. Answer `<CopyPartResult><ETag/><LastModified/></CopyPartResult>`.
 * Errors: NoSuchUpload (404), InvalidArgument (part number), EntityTooLarge (a part over 1 GiB), NoSuchKey (source).
 */
import type { Readable } from 'node:stream';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { uploadPart as storePart } from '../../objects/resumable/multipart.js';
import { checkDownloadable } from '../../objects/read.js';
import { readObject } from '../../objects/verified-read.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { bucketName, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { contentMd5Of, headerOf } from '../headers.js';
import { partNumberOf, s3Upload, uploadIdOf } from '../multipart.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';
import { parseCopySource } from './copy-object.js';
import { conditionOutcome } from './get-object.js';

/** Stores `body` as part `n`: the part's hex MD5. Kodo's 612 → NoSuchUpload, its MD5 mismatch → BadDigest. */
async function store(g: Granary, req: S3Request, body: Readable, md5: string | undefined, declared: number | undefined): Promise<string> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  const n = partNumberOf(req.query.get('partNumber'));
  await s3Upload(g, accessKey, bucket, key, uploadId);
  try {
    const out = await storePart(g, accessKey, { bucket, key }, uploadId, n, md5, body, declared);
    return out.md5;
  } catch (err) {
    if (isKodoError(err) && err.kind === 'md5Mismatch') throw S3Errors.BadDigest();
    throw err;
  }
}

export async function uploadPart(g: Granary, req: S3Request): Promise<S3Response> {
  const md5 = contentMd5Of(req);
  const partMd5 = await store(g, req, req.body(), md5, req.contentLength);
  const headers: Record<string, string> = { etag: `"${partMd5}"` };
  const sum = req.checksum();
  if (sum) headers[`x-amz-checksum-${sum.algorithm}`] = sum.value;
  return { status: 200, headers };
}

/** The byte range of `x-amz-copy-source-range` within an object of `size` bytes; InvalidArgument otherwise. */
export function copySourceRange(text: string | undefined, size: number): { start: number; end: number } | undefined {
  if (text === undefined) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(text.trim());
  if (!m) throw S3Errors.InvalidArgument('The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy');
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (start > end || end >= size) throw S3Errors.InvalidArgument(`Range specified is not valid for source object of size: ${size}`);
  return { start, end };
}

export async function uploadPartCopy(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const from = parseCopySource(headerOf(req, 'x-amz-copy-source'));
  await authorizeBucket(g, accessKey, from.bucket);
  await authorizeBucket(g, accessKey, bucketName(req));
  let source: ObjectRecord;
  try {
    source = checkDownloadable(g, await g.meta.getObject(from.bucket, from.key));
  } catch (err) {
    throw (err as { kind?: string }).kind === 'notFound' ? S3Errors.NoSuchKey() : err;
  }
  if (conditionOutcome(req, source, 'x-amz-copy-source-') !== 'ok') throw S3Errors.PreconditionFailed();
  const range = copySourceRange(headerOf(req, 'x-amz-copy-source-range'), source.fsize);
  // Checked before reading the source: a foreign or unknown upload reads nothing.
  await s3Upload(g, accessKey, bucketName(req), objectKey(req), uploadIdOf(req.query));
  const bytes = range ? range.end - range.start + 1 : source.fsize;
  const partMd5 = await store(g, req, readObject(g, source, range), undefined, bytes);
  const inner = el('ETag', `"${partMd5}"`) + el('LastModified', isoTime(g.clock.nowMs()));
  return xmlResponse(xmlDocument('CopyPartResult', inner));
}
