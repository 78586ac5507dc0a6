/**
 * CopyObject (`PUT /<bucket>/<key>` with `x-amz-copy-source: [/]<bucket>/<key>[?versionId=null]`, URL-encoded):
 * the Kodo copy (objects/manage/copy.ts): no byte is copied, the new entry references the source's blob; quotas and
 * `copy` event notifications apply (docs/development/kodo-protocol.md §18.5).
 *
 * - `x-amz-copy-source-if-match|if-none-match|if-modified-since|if-unmodified-since` → PreconditionFailed (412).
 * - `x-amz-metadata-directive`: COPY (default) keeps the source's Content-Type and metadata; REPLACE sets them from
 *   this request (Content-Type, `x-amz-meta-*`, the stored headers) through Kodo's chgm after the copy.
 *   `x-amz-storage-class` sets the copy's file type (Kodo chtype). A copy onto itself must change something
 *   (REPLACE or a storage class): else InvalidRequest, as S3 answers.
 * - Answer: `<CopyObjectResult><ETag/><LastModified/></CopyObjectResult>`; the ETag is the source's (same bytes).
 * Errors: NoSuchKey (source), NoSuchBucket, AccessDenied (either bucket), InvalidArgument (a malformed source, a
 * version other than `null`).
 */
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { copyEntry } from '../../objects/manage/copy.js';
import { changeMeta, changeType } from '../../objects/manage/update.js';
import { checkDownloadable } from '../../objects/read.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { etagOf, metaFromHeaders, modifiedMs, typeOfStorageClass } from '../object-headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';
import { conditionOutcome } from './get-object.js';
import { s3PutPolicy } from './put-object.js';
import { putObject as commitPut } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import { readObject } from '../../objects/verified-read.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { checkReadKey, keyMd5Of, readKey, SSE_META, sseHeaders, sseMetaValue, type SseRequest, writeSse } from '../sse.js';

/** The source `{bucket, key}` of an `x-amz-copy-source` value; InvalidArgument when malformed. */
export function parseCopySource(value: string | undefined): { bucket: string; key: string } {
  if (value === undefined || value === '') throw S3Errors.InvalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  const q = value.indexOf('?');
  const path = q < 0 ? value : value.slice(0, q);
  if (q >= 0) {
    const params = new URLSearchParams(value.slice(q + 1));
    const version = params.get('versionId');
    if (version !== null && version !== 'null') throw S3Errors.InvalidArgument('Invalid version id specified');
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    throw S3Errors.InvalidArgument('Copy Source is not URL-encoded');
  }
  const trimmed = decoded.startsWith('/') ? decoded.slice(1) : decoded;
  const slash = trimmed.indexOf('/');
  if (slash <= 0 || slash === trimmed.length - 1) throw S3Errors.InvalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  return { bucket: trimmed.slice(0, slash), key: trimmed.slice(slash + 1) };
}

/** The metadata change that makes `rec`'s metadata exactly `next` (chgm: '' deletes a name). */
function replacement(rec: ObjectRecord, next: Record<string, string>): Record<string, string> {
  const change: Record<string, string> = { ...next };
  // Reserved names (`@s3-tagging`, `@s3-etag`) are the object's, not the request's metadata: they stay.
  for (const name of Object.keys(rec.meta)) if (!(name in next) && !name.startsWith('@')) change[name] = '';
  return change;
}

export async function copyObject(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const target = await accessBucket(g, req);
  const to = { bucket: target.name, key: objectKey(req) };
  const from = parseCopySource(headerOf(req, 'x-amz-copy-source'));
  await authorizeBucket(g, accessKey, from.bucket);
  let source: ObjectRecord;
  try {
    source = checkDownloadable(g, await g.meta.getObject(from.bucket, from.key));
  } catch (err) {
    throw isKodoError(err, 'notFound') ? S3Errors.NoSuchKey() : err;
  }
  if (conditionOutcome(req, source, 'x-amz-copy-source-') !== 'ok') throw S3Errors.PreconditionFailed();
  const directive = (headerOf(req, 'x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw S3Errors.InvalidArgument('Unknown metadata directive.');
  const classHeader = headerOf(req, 'x-amz-storage-class');
  const type = classHeader === undefined ? undefined : typeOfStorageClass(classHeader);
  const same = from.bucket === to.bucket && from.key === to.key;
  // Encryption (s3api/sse.ts): the source's SSE-C key, the destination's request or the bucket's default.
  const sourceKey = checkReadKey(source.meta[SSE_META], readKey(req, true));
  const sse = writeSse(g, req);
  const destSse = sseMetaValue(sse) ?? target.settings.encryption;
  if (sourceKey || sse.kind === 'C' || (destSse !== undefined && source.meta[SSE_META] !== 'AES256')) {
    // A customer key on either side: the bytes are read with the source's key and sealed anew with the
    // destination's (re-encrypted, never shared). An encrypted copy of a source not known to be encrypted (stored
    // before encryption was turned on, perhaps) is written anew too: nothing is recorded as encrypted that is not.
    const rec = await rewriteCopy(g, req, { source, sourceKey, to, directive, type, sse, destSse, accessKey });
    return copyAnswer(rec, sse);
  }
  if (same && directive === 'COPY' && type === undefined && sse.kind === 'none') {
    throw S3Errors.InvalidRequest('This copy request is illegal because it is trying to copy an object to itself without changing the object\'s metadata, storage class, website redirect location or encryption attributes.');
  }
  if (!same) await copyEntry(g, from, to, true, { accessKey, reqId: req.reqId });
  if (directive === 'REPLACE') {
    const mimeType = headerOf(req, 'content-type');
    await changeMeta(g, to, { ...(mimeType ? { mimeType } : {}), meta: replacement(source, metaFromHeaders(req.headers)) });
  }
  if (type !== undefined) await changeType(g, to, type);
  let copied = await g.meta.getObject(to.bucket, to.key);
  if (copied && (copied.meta[SSE_META] ?? '') !== (destSse ?? '')) {
    // The bytes are sealed with the master key either way: only what the copy is recorded as changes.
    await changeMeta(g, to, { meta: { [SSE_META]: destSse ?? '' } });
    copied = await g.meta.getObject(to.bucket, to.key);
  }
  return copyAnswer(copied ?? source, sse);
}

/** CopyObject's answer: the result XML and the destination's encryption headers. */
function copyAnswer(rec: ObjectRecord, sse: SseRequest): S3Response {
  return xmlResponse(
    xmlDocument('CopyObjectResult', `${el('LastModified', isoTime(modifiedMs(rec)))}${el('ETag', etagOf(rec))}`),
    200,
    sseHeaders(rec.meta[SSE_META], keyMd5Of(sse)),
  );
}

/** Reserved metadata that describes stored bytes, not the object: dropped when the bytes are written anew. */
const BYTES_META = ['@s3-etag', '@s3-upload', '@s3-checksum', '@s3-part-checksums', SSE_META];

/**
 * A copy whose bytes are re-encrypted (SSE-C source or destination): the source read with its key, written as a
 * new upload sealed with the destination's (objects/receive.ts, objects/put-object.ts: quotas, events and
 * checksums as for any upload). Metadata: the source's (COPY) or the request's (REPLACE), its reserved names kept.
 */
async function rewriteCopy(
  g: Granary,
  req: S3Request,
  c: {
    source: ObjectRecord;
    sourceKey: Buffer | undefined;
    to: { bucket: string; key: string };
    directive: string;
    type: number | undefined;
    sse: SseRequest;
    destSse: string | undefined;
    accessKey: string;
  },
): Promise<ObjectRecord> {
  const { source, to } = c;
  const meta: Record<string, string> = {};
  for (const [name, value] of Object.entries(source.meta)) {
    if (c.directive === 'COPY' ? !BYTES_META.includes(name) : name.startsWith('@') && !BYTES_META.includes(name)) meta[name] = value;
  }
  if (c.directive === 'REPLACE') Object.assign(meta, metaFromHeaders(req.headers));
  if (c.destSse) meta[SSE_META] = c.destSse;
  const mime = c.directive === 'REPLACE' ? headerOf(req, 'content-type') : undefined;
  const destKey = c.sse.kind === 'C' ? c.sse.key : undefined;
  const data = await withCustomerKey(c.sourceKey, async () => readObject(g, source));
  const body = await withCustomerKey(destKey, () =>
    receiveBody(g, data, { maxBytes: Number.MAX_SAFE_INTEGER, inlineMax: g.config.inlineMaxBytes, expectedBytes: source.fsize }),
  );
  const policy = s3PutPolicy(g, to.bucket, to.key, { insertOnly: false, fileType: c.type ?? source.type, trustMime: true });
  const result = await withCustomerKey(destKey, () =>
    commitPut(g, body, { policy, accessKey: c.accessKey, clientKey: to.key, clientMime: mime || source.mimeType, custom: {}, meta, reqId: req.reqId }),
  );
  return result.record;
}
