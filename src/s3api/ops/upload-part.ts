/**
 * UploadPart (`PUT /<bucket>/<key>?partNumber=<n>&uploadId=<id>`) and UploadPartCopy (the same with
 * `x-amz-copy-source`, optional `x-amz-copy-source-range: bytes=<first>-<last>`): part `n` (1..10000) of the
 * upload is stored as a sealed blob through Kodo's v2 part upload (objects/resumable/parts.ts `uploadPart`;
 * a re-upload replaces it), docs/development/kodo-protocol.md §18.8.
 *
 * - UploadPart: the verified body (signatures, `x-amz-content-sha256`, `x-amz-checksum-*` checked as it streams);
 *   `Content-MD5` checked (InvalidDigest, BadDigest). The part's checksum is recorded with it (see `store`). Answer
 *   200 with `ETag: "<hex MD5>"` and the part's `x-amz-checksum-*`.
 * - UploadPartCopy: the source entry's bytes (or the range: InvalidArgument when malformed, InvalidRange when
 *   outside the object) are read and stored as the part (a part is a blob of its own; only whole-object copies
 *   share bytes), with the checksum of the upload's algorithm computed as they stream.
 *   `x-amz-copy-source-if-*` → PreconditionFailed. Answer
 *   `<CopyPartResult><ETag/><LastModified/>[<ChecksumCRC32/>…]</CopyPartResult>`.
 * Errors: NoSuchUpload (404), InvalidArgument (part number), EntityTooLarge (a part over 1 GiB), NoSuchKey (source).
 */
import { withCustomerKey } from '../../ports/customer-key.js';
import { checkReadKey, readKey, SSE_META, sseHeaders } from '../sse.js';
import { createHash } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { uploadPart as storePart } from '../../objects/resumable/parts.js';
import { checkDownloadable } from '../../objects/read.js';
import { readObject } from '../../objects/verified-read.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { accessBucket, bucketName, objectKey, signedCaller } from '../access.js';
import type { Digests } from '../../objects/etag.js';
import { crc32Base64, Digest, type ChecksumAlgorithm, type VerifiedChecksum } from '../checksum.js';
import { S3Errors } from '../errors.js';
import { contentMd5Of, headerOf } from '../headers.js';
import { encodePartChecksum, loadSettings, partNumberOf, s3Upload, uploadIdOf } from '../multipart.js';
import { checksumElement } from '../object-checksum.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';
import { parseCopySource } from './copy-object.js';
import { conditionOutcome } from './get-object.js';

/** What a stored part answers: its hex MD5, its recorded checksum, if any, and the upload's encryption headers. */
interface StoredPart {
  md5: string;
  encryption: Record<string, string>;
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

/**
 * Stores `body` as part `n`: its MD5 and checksum. `sum` gives the part's verified checksum once the bytes are in
 * (with the content's CRC-32, which the upload path computed); the upload's algorithm (CreateMultipartUpload)
 * requires one of that algorithm — a CRC-32 is recorded from the computed value when the client sent none — and a
 * checksum of another algorithm is InvalidRequest. Kodo's 612 → NoSuchUpload, its MD5 mismatch → BadDigest.
 */
async function store(
  g: Granary,
  req: S3Request,
  body: Readable,
  md5: string | undefined,
  declared: number | undefined,
  sum: (crc32: number) => VerifiedChecksum | undefined | Promise<VerifiedChecksum | undefined>,
): Promise<StoredPart> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  const n = partNumberOf(req.query.get('partNumber'));
  await s3Upload(g, accessKey, bucket, key, uploadId);
  const settings = await loadSettings(g, uploadId);
  const want = settings.checksum?.algorithm;
  let recorded: StoredPart['checksum'];
  const verify = async (digests: Digests): Promise<string | undefined> => {
    const got = await sum(digests.crc32);
    if (got && want && got.algorithm !== want) {
      throw S3Errors.InvalidRequest(`Checksum Type mismatch occurred, expected checksum Type: ${want}, actual checksum Type: ${got.algorithm}`);
    }
    recorded = got ?? (want === 'crc32' ? { algorithm: 'crc32', value: crc32Base64(digests.crc32) } : undefined);
    if (!recorded && want) {
      throw S3Errors.InvalidRequest(`The upload was created using a ${want} checksum. The part request must include a checksum of the same algorithm.`);
    }
    return recorded && encodePartChecksum(recorded.algorithm, recorded.value);
  };
  // SSE-C uploads: every part gives the upload's key (400 none, 403 another) and is sealed with it too.
  const customerKey = checkReadKey(settings.meta[SSE_META], readKey(req));
  try {
    const out = await withCustomerKey(customerKey, () => storePart(g, accessKey, { bucket, key }, uploadId, n, md5, body, declared, verify));
    const encryption = sseHeaders(settings.meta[SSE_META], customerKey ? createHash('md5').update(customerKey).digest('base64') : undefined);
    return { md5: out.md5, encryption, ...(recorded ? { checksum: recorded } : {}) };
  } catch (err) {
    if (isKodoError(err) && err.kind === 'md5Mismatch') throw S3Errors.BadDigest();
    throw err;
  }
}

export async function uploadPart(g: Granary, req: S3Request): Promise<S3Response> {
  const md5 = contentMd5Of(req);
  // The upload path computes the part's CRC-32 (bitrot checksums): a CRC-32 checksum is checked against it.
  const part = await store(g, req, req.body({ deferCrc32: true }), md5, req.contentLength, (crc32) => req.checksum(crc32));
  const headers: Record<string, string> = { etag: `"${part.md5}"`, ...part.encryption };
  if (part.checksum) headers[`x-amz-checksum-${part.checksum.algorithm}`] = part.checksum.value;
  return { status: 200, headers };
}

/**
 * The byte range of `x-amz-copy-source-range` within an object of `size` bytes: InvalidArgument when the value is
 * not `bytes=<first>-<last>`, InvalidRange (416) when it does not lie within the object (AWS
 * API_UploadPartCopy; Ceph's s3-tests `test_multipart_copy_invalid_range`, `…_improper_range`).
 */
export function copySourceRange(text: string | undefined, size: number): { start: number; end: number } | undefined {
  if (text === undefined) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(text.trim());
  if (!m) throw S3Errors.InvalidArgument('The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy');
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (start > end || end >= size) throw S3Errors.InvalidRange(`Range specified is not valid for source object of size: ${size}`);
  return { start, end };
}

export async function uploadPartCopy(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const from = parseCopySource(headerOf(req, 'x-amz-copy-source'));
  // The source is a second bucket (the step authorised the target): a read of its key (s3:GetObject → kodo/Get).
  await authorizeBucket(g, accessKey, from.bucket, { action: 'kodo/Get', key: from.key, door: 's3', requestId: req.reqId });
  await accessBucket(g, req);
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
  // The part's checksum of the upload's algorithm: CRC-32 from the upload path's, any other computed as it streams.
  const want = (await loadSettings(g, uploadIdOf(req.query))).checksum?.algorithm;
  const digest = want && want !== 'crc32' ? new Digest(want) : undefined;
  // An SSE-C source opens with the key of `x-amz-copy-source-server-side-encryption-customer-*` (s3api/sse.ts).
  const sourceKey = checkReadKey(source.meta[SSE_META], readKey(req, true));
  let data: Readable = await withCustomerKey(sourceKey, async () => readObject(g, source, range));
  if (digest) {
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        digest.update(chunk);
        done(null, chunk);
      },
    });
    data = pipeline(data, tap, () => undefined);
  }
  const part = await store(g, req, data, undefined, bytes, async () => (digest && want ? { algorithm: want, value: await digest.base64() } : undefined));
  let inner = el('ETag', `"${part.md5}"`) + el('LastModified', isoTime(g.clock.nowMs()));
  if (part.checksum) inner += el(checksumElement(part.checksum.algorithm), part.checksum.value);
  return xmlResponse(xmlDocument('CopyPartResult', inner), 200, part.encryption);
}
