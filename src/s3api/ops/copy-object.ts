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
 * - ACLs are not copied: the copy gets the request's `x-amz-acl` / `x-amz-grant-*` ACL (bucket-acl.ts) or none of
 *   its own (it follows its bucket).
 * - Answer: `<CopyObjectResult><ETag/><LastModified/></CopyObjectResult>`; the ETag is the source's (same bytes).
 * - `?versionId=` on the source copies that version (docs/reference/versioning.md: restoring an old version is
 *   copying it onto its key); the answer names it in `x-amz-copy-source-version-id`, and the copy's version in
 *   `x-amz-version-id` when the target bucket's versioning is Enabled.
 * Errors: NoSuchKey (source), NoSuchVersion (source version), NoSuchBucket, AccessDenied (either bucket),
 * InvalidArgument (a malformed source or version id), InvalidRequest (a source version that is a delete marker).
 */
import { askedLock, lockFieldsOfHeaders } from '../object-lock.js';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { copyEntry } from '../../objects/manage/copy.js';
import { changeMeta, changeType } from '../../objects/manage/update.js';
import { checkDownloadable } from '../../objects/read.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { wireVersionId } from '../../ports/versions.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { ACL_META } from '../acl-request.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { etagOf, metaFromHeaders, modifiedMs, typeOfStorageClass } from '../object-headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';
import { checkedVersionId, writtenVersionHeader } from '../versions.js';
import { uploadAclMeta } from './bucket-acl.js';
import { conditionOutcome } from './get-object.js';
import { s3PutPolicy } from './put-object.js';
import { putObject as commitPut } from '../../objects/put-object.js';
import { receiveBody } from '../../objects/receive.js';
import { readObject } from '../../objects/verified-read.js';
import { withCustomerKey } from '../../ports/customer-key.js';
import { checkReadKey, keyMd5Of, readKey, SSE_META, sseHeaders, sseMetaValue, type SseRequest, writeSse } from '../sse.js';

/**
 * The source `{bucket, key, versionId?}` of an `x-amz-copy-source` value; InvalidArgument when malformed (a
 * malformed version id included).
 */
export function parseCopySource(value: string | undefined): { bucket: string; key: string; versionId?: string } {
  if (value === undefined || value === '') throw S3Errors.InvalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  const q = value.indexOf('?');
  const path = q < 0 ? value : value.slice(0, q);
  const versionId = q >= 0 ? checkedVersionId(new URLSearchParams(value.slice(q + 1)).get('versionId')) : undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    throw S3Errors.InvalidArgument('Copy Source is not URL-encoded');
  }
  const trimmed = decoded.startsWith('/') ? decoded.slice(1) : decoded;
  const slash = trimmed.indexOf('/');
  if (slash <= 0 || slash === trimmed.length - 1) throw S3Errors.InvalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  return { bucket: trimmed.slice(0, slash), key: trimmed.slice(slash + 1), ...(versionId !== undefined ? { versionId } : {}) };
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
  // The source is a second bucket (the step authorised the target): a read of its key (s3:GetObject → kodo/Get).
  await authorizeBucket(g, accessKey, from.bucket, { action: 'kodo/Get', key: from.key, door: 's3', requestId: req.reqId });
  const source = await sourceOf(g, from);
  if (conditionOutcome(req, source, 'x-amz-copy-source-') !== 'ok') throw S3Errors.PreconditionFailed();
  const directive = (headerOf(req, 'x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') throw S3Errors.InvalidArgument('Unknown metadata directive.');
  const classHeader = headerOf(req, 'x-amz-storage-class');
  const type = classHeader === undefined ? undefined : typeOfStorageClass(classHeader);
  // The copy's object lock (object-lock.ts): the request's headers, else the target bucket's default retention.
  const lock = askedLock(target, lockFieldsOfHeaders(req.headers), g.clock.nowMs());
  // A version copied onto its own key is a restore, not a copy onto itself.
  const same = from.bucket === to.bucket && from.key === to.key && from.versionId === undefined;
  // Encryption (s3api/sse.ts): the source's SSE-C key, the destination's request or the bucket's default.
  const sourceKey = checkReadKey(source.meta[SSE_META], readKey(req, true));
  const sse = writeSse(g, req);
  const destSse = sseMetaValue(sse) ?? target.settings.encryption;
  // The copy's ACL is the request's (x-amz-acl / x-amz-grant-*) or none of its own: an ACL is not copied (S3).
  const acl = uploadAclMeta(g, req, target, accessKey) ?? '';
  if (sourceKey || sse.kind === 'C' || (destSse !== undefined && source.meta[SSE_META] !== 'AES256')) {
    // A customer key on either side: the bytes are read with the source's key and sealed anew with the
    // destination's (re-encrypted, never shared). An encrypted copy of a source not known to be encrypted (stored
    // before encryption was turned on, perhaps) is written anew too: nothing is recorded as encrypted that is not.
    const rec = await rewriteCopy(g, req, { source, sourceKey, to, directive, type, sse, destSse, accessKey, acl });
    return copyAnswer(rec, sse, copyVersionHeaders(from, source, rec));
  }
  if (same && directive === 'COPY' && type === undefined && sse.kind === 'none') {
    throw S3Errors.InvalidRequest('This copy request is illegal because it is trying to copy an object to itself without changing the object\'s metadata, storage class, website redirect location or encryption attributes.');
  }
  const made = same ? {} : await copyEntry(g, from, to, true, { accessKey, reqId: req.reqId }, lock);
  if (acl !== '' || source.meta[ACL_META] !== undefined) await changeMeta(g, to, { meta: { [ACL_META]: acl } });
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
  return copyAnswer(copied ?? source, sse, copyVersionHeaders(from, source, made));
}

/** `x-amz-version-id` of the copy (a versioned target) and `x-amz-copy-source-version-id` of a versioned source. */
function copyVersionHeaders(from: { versionId?: string }, source: ObjectRecord, made: { versionId?: string }): Record<string, string> {
  const headers: Record<string, string> = { ...writtenVersionHeader(made) };
  if (from.versionId !== undefined || source.versionId !== undefined) headers['x-amz-copy-source-version-id'] = wireVersionId(source);
  return headers;
}

/**
 * The source a copy reads: the current entry (NoSuchKey when none), or the version named by the copy source
 * (NoSuchVersion when none; a delete marker is InvalidRequest, as S3 answers).
 */
async function sourceOf(g: Granary, from: { bucket: string; key: string; versionId?: string }): Promise<ObjectRecord> {
  if (from.versionId === undefined) {
    try {
      return checkDownloadable(g, await g.meta.getObject(from.bucket, from.key));
    } catch (err) {
      throw isKodoError(err, 'notFound') ? S3Errors.NoSuchKey() : err;
    }
  }
  const v = await g.meta.getVersion(from.bucket, from.key, from.versionId);
  if (!v) throw S3Errors.NoSuchVersion();
  if (v.deleteMarker) throw S3Errors.InvalidRequest('The source of a copy request may not specifically refer to a delete marker by version id.');
  try {
    return checkDownloadable(g, v.record);
  } catch (err) {
    throw isKodoError(err, 'notFound') ? S3Errors.NoSuchVersion() : err;
  }
}

/** CopyObject's answer: the result XML, the version headers and the destination's encryption headers. */
function copyAnswer(rec: ObjectRecord, sse: SseRequest, versionHeaders: Record<string, string>): S3Response {
  return xmlResponse(
    xmlDocument('CopyObjectResult', `${el('LastModified', isoTime(modifiedMs(rec)))}${el('ETag', etagOf(rec))}`),
    200,
    { ...versionHeaders, ...sseHeaders(rec.meta[SSE_META], keyMd5Of(sse)) },
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
    /** The copy's own ACL (`ACL_META` value), '' for none: the source's is not copied. */
    acl: string;
  },
): Promise<ObjectRecord> {
  const { source, to } = c;
  const meta: Record<string, string> = {};
  for (const [name, value] of Object.entries(source.meta)) {
    if (name === ACL_META) continue;
    if (c.directive === 'COPY' ? !BYTES_META.includes(name) : name.startsWith('@') && !BYTES_META.includes(name)) meta[name] = value;
  }
  if (c.acl !== '') meta[ACL_META] = c.acl;
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
