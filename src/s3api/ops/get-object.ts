/**
 * GetObject and HeadObject (`GET|HEAD /<bucket>/<key>`), reading through the same checks and verified reads as a
 * Kodo download (objects/read.ts `checkDownloadable`, objects/verified-read.ts `readObject`): an expired entry is
 * NoSuchKey, a disabled one AccessDenied, an unrestored archive InvalidObjectState (403), corrupt bytes fail the
 * answer (docs/development/kodo-protocol.md §18.5). A miss in a bucket with a mirror source (Kodo `image`) is pulled
 * from it first, as a Kodo download does (objects/fetch/mirror.ts): origin 404 → NoSuchKey.
 *
 * - Conditions in S3's order: If-Match (412 PreconditionFailed), else If-Unmodified-Since (412); If-None-Match
 *   (304), else If-Modified-Since (304) — against the S3 ETag (object-headers.ts) and the upload time.
 * - `Range: bytes=…` → 206 with Content-Range; past the end → InvalidRange (416, with a Content-Range naming the size).
 * - `partNumber=<n>`: the n-th part of an entry uploaded in parts (its recorded part sizes) as a 206 with
 *   `x-amz-mp-parts-count`; part 1 of a single-part entry is the whole entry; past the count → InvalidPart (400).
 * - `x-amz-checksum-mode: ENABLED`: the object's stored checksum (object-checksum.ts) as `x-amz-checksum-<alg>`
 *   and `x-amz-checksum-type`, for a whole-object answer; a read by part number answers the part's checksum.
 * - `response-content-type|language|expires|cache-control|disposition|encoding` override those headers.
 * An anonymous caller reads only public buckets (access.ts); a bucket protecting its originals (Kodo accessMode 1)
 * refuses anonymous reads.
 */
import { lockAnswerHeaders } from '../object-lock.js';
import { checkOriginalAccess } from '../../buckets/protection.js';
import { replicationStatus } from '../../ports/replication.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { answerBody, lengthHeaders, servedEntry } from '../../objects/download.js';
import { checkDownloadable } from '../../objects/read.js';
import type { ByteRange } from '../../ports/blob.js';
import type { BucketRecord, ObjectRecord } from '../../ports/meta.js';
import { wireVersionId } from '../../ports/versions.js';
import { parseRange } from '../../http/range.js';
import { bucketName, checkObjectRead, objectKey } from '../access.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { etagOf, modifiedMs, objectHeaders } from '../object-headers.js';
import { checksumHeaders, checksumOfEntry, partChecksumsOfEntry, type ObjectChecksum } from '../object-checksum.js';
import type { S3Request, S3Response } from '../types.js';
import { versionHeader, versionIdOf } from '../versions.js';
import { tagListMatches } from '../write-conditions.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { checkReadKey, keyMd5Of, readKey, SSE_META, sseHeaders } from '../sse.js';

/** `response-*` query parameters → the header each overrides. */
const RESPONSE_OVERRIDES: Record<string, string> = {
  'response-content-type': 'content-type',
  'response-content-language': 'content-language',
  'response-expires': 'expires',
  'response-cache-control': 'cache-control',
  'response-content-disposition': 'content-disposition',
  'response-content-encoding': 'content-encoding',
};

/** Seconds of an HTTP date header, or undefined when absent or unparsable (then ignored, as S3 does). */
function dateSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/**
 * The outcome of the conditional headers `prefix`if-match… (`''` for GetObject/HeadObject, `x-amz-copy-source-`
 * for CopyObject): 'ok', 'failed' (412) or 'not-modified' (304; CopyObject treats it as 412).
 */
export function conditionOutcome(req: S3Request, rec: ObjectRecord, prefix = ''): 'ok' | 'failed' | 'not-modified' {
  const etag = etagOf(rec);
  const mtime = Math.floor(modifiedMs(rec) / 1000);
  const ifMatch = headerOf(req, `${prefix}if-match`);
  const ifNoneMatch = headerOf(req, `${prefix}if-none-match`);
  if (ifMatch !== undefined) {
    if (!tagListMatches(ifMatch, etag)) return 'failed';
  } else {
    const since = dateSeconds(headerOf(req, `${prefix}if-unmodified-since`));
    if (since !== undefined && mtime > since) return 'failed';
  }
  if (ifNoneMatch !== undefined) {
    if (tagListMatches(ifNoneMatch, etag)) return 'not-modified';
  } else {
    const since = dateSeconds(headerOf(req, `${prefix}if-modified-since`));
    if (since !== undefined && mtime <= since) return 'not-modified';
  }
  return 'ok';
}

/**
 * The byte range of part `n` (1-based) of an entry and its part count (undefined for an entry not uploaded in
 * parts: S3 sends no `x-amz-mp-parts-count` then). Past the count → 400 InvalidPart, what Ceph's s3-tests expect
 * (`test_multipart_get_part`, `test_non_multipart_get_part`).
 */
function partRange(rec: ObjectRecord, text: string): { range: ByteRange | undefined; count: number | undefined } {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 10000) throw S3Errors.InvalidArgument('Part number must be an integer between 1 and 10000, inclusive');
  const n = Number(text);
  const multipart = rec.parts !== undefined && rec.parts.length > 0;
  const parts = multipart ? rec.parts! : [rec.fsize];
  if (n > parts.length) throw S3Errors.InvalidPart(`The requested partnumber is not satisfiable: the object has ${parts.length} part(s)`);
  if (parts.length === 1) return { range: undefined, count: multipart ? 1 : undefined };
  let start = 0;
  for (let i = 0; i < n - 1; i++) start += parts[i]!;
  return { range: { start, end: start + parts[n - 1]! - 1 }, count: parts.length };
}

/**
 * The checksum an answer carries: a part's (a read by part number of an object whose parts' checksums are kept,
 * with the object's checksum type — what radosgw answers and Ceph's s3-tests expect, with or without the checksum
 * mode), else the object's when `x-amz-checksum-mode: ENABLED` asks for it and the answer is the whole object.
 */
function answeredChecksum(req: S3Request, rec: ObjectRecord, partNumber: string | null, range: ByteRange | undefined): ObjectChecksum | undefined {
  if (partNumber !== null && rec.parts && rec.parts.length > 0) {
    const whole = checksumOfEntry(rec);
    const value = partChecksumsOfEntry(rec)?.[Number(partNumber) - 1];
    return whole && value ? { ...whole, value } : undefined;
  }
  return headerOf(req, 'x-amz-checksum-mode')?.trim().toUpperCase() === 'ENABLED' && !range ? checksumOfEntry(rec) : undefined;
}

/**
 * The entry a read without a version id serves: the current one (a miss in a bucket with a mirror source is pulled
 * from it first). NoSuchKey when there is none — with `x-amz-delete-marker: true` and the marker's
 * `x-amz-version-id` when the key's current version is a delete marker (docs/reference/versioning.md).
 */
async function currentOf(g: Granary, bucket: BucketRecord, key: string, found: ObjectRecord | undefined): Promise<ObjectRecord> {
  try {
    // A miss in a bucket with a mirror source is pulled from it, as a Kodo download (§8.6).
    return await servedEntry(g, bucket, key, found);
  } catch (err) {
    if (!isKodoError(err, 'notFound')) throw err;
  }
  const current = bucket.settings.versioning ? await g.meta.getVersion(bucket.name, key, undefined) : undefined;
  if (current?.deleteMarker) throw S3Errors.NoSuchKey(undefined, markerHeaders(current.record));
  throw S3Errors.NoSuchKey();
}

/** The headers naming a delete marker (answers about one). */
export function markerHeaders(marker: ObjectRecord): Record<string, string> {
  return { 'x-amz-delete-marker': 'true', 'x-amz-version-id': wireVersionId(marker) };
}

/**
 * The version a read with `versionId` serves: NoSuchVersion (404) when the key has no such version; a delete marker
 * is 405 MethodNotAllowed with `x-amz-delete-marker: true` and its Last-Modified, as S3 answers.
 */
async function versionOf(g: Granary, bucket: BucketRecord, key: string, versionId: string): Promise<ObjectRecord> {
  const v = await g.meta.getVersion(bucket.name, key, versionId);
  if (!v) throw S3Errors.NoSuchVersion();
  if (v.deleteMarker) {
    throw S3Errors.MethodNotAllowed(undefined, { ...markerHeaders(v.record), 'last-modified': new Date(modifiedMs(v.record)).toUTCString() });
  }
  try {
    return checkDownloadable(g, v.record);
  } catch (err) {
    throw isKodoError(err, 'notFound') ? S3Errors.NoSuchVersion() : err;
  }
}

/** GetObject / HeadObject (by the request's method). */
export async function getObject(g: Granary, req: S3Request): Promise<S3Response> {
  const key = objectKey(req);
  // The download read: bucket and entry in one (cached) query, with an inline blob's bytes.
  const found = req.prefetchedRead ?? (await g.meta.getBucketAndObject(bucketName(req), key));
  const bucket = checkObjectRead(g, req, found.bucket, found.object);
  checkOriginalAccess(bucket, { signed: req.caller.accessKey !== undefined, styleOnly: false });
  const versionId = versionIdOf(req);
  const rec = versionId === undefined ? await currentOf(g, bucket, key, found.object) : await versionOf(g, bucket, key, versionId);
  // SSE-C: the key given must be the object's (400 none, 403 another) before anything about it is answered.
  const given = readKey(req);
  const customerKey = checkReadKey(rec.meta[SSE_META], given);
  const nowSec = Math.floor(g.clock.nowMs() / 1000);
  const headers = { ...objectHeaders(rec, nowSec), ...versionHeader(bucket, rec, versionId !== undefined), ...sseHeaders(rec.meta[SSE_META], keyMd5Of(given)) };
  // The version's object lock (object-lock.ts): mode, retain-until date, legal hold.
  Object.assign(headers, lockAnswerHeaders(rec));
  // Bucket replication (docs/guides/replication.md): the current object's status, as S3 answers it on a source.
  if (bucket.settings.replication?.length && versionId === undefined) {
    const status = replicationStatus(await g.meta.replication.statusOf(bucket.name, key));
    if (status) headers['x-amz-replication-status'] = status;
  }
  const outcome = conditionOutcome(req, rec);
  if (outcome === 'failed') throw S3Errors.PreconditionFailed();
  if (outcome === 'not-modified') {
    const { etag, 'last-modified': lastModified } = headers;
    return { status: 304, headers: { etag: etag!, 'last-modified': lastModified! } };
  }
  for (const [param, header] of Object.entries(RESPONSE_OVERRIDES)) {
    const v = req.query.get(param);
    if (v !== null) headers[header] = v;
  }
  const partNumber = req.query.get('partNumber');
  const rangeHeader = headerOf(req, 'range');
  let range: ByteRange | undefined;
  let status = 200;
  if (partNumber !== null) {
    if (rangeHeader !== undefined) throw S3Errors.InvalidRequest('Cannot specify both Range header and partNumber query parameter');
    const part = partRange(rec, partNumber);
    range = part.range;
    if (part.count !== undefined) headers['x-amz-mp-parts-count'] = String(part.count);
    if (range) status = 206;
  } else {
    const parsed = parseRange(rangeHeader, rec.fsize);
    if (parsed === 'unsatisfiable') throw S3Errors.InvalidRange(undefined, { 'content-range': `bytes */${rec.fsize}` });
    if (parsed) {
      range = parsed;
      status = 206;
    }
  }
  const sum = answeredChecksum(req, rec, partNumber, range);
  if (sum) Object.assign(headers, checksumHeaders(sum));
  Object.assign(headers, lengthHeaders(rec.fsize, range));
  if (req.method === 'HEAD') return { status, headers };
  return { status, headers, body: await withCustomerKey(customerKey, () => answerBody(g, rec, range)) };
}
