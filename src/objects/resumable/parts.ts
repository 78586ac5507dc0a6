/**
 * Resumable upload v2, multipart (docs/development/kodo-protocol.md §6): initiate, upload part (1..10000, `Content-MD5` hex checked,
 * re-upload replaces), complete (parts in order, etags must match; fname, mimeType, customVars, metadata), abort,
 * list parts. Parts are sealed blobs recorded in the MetaStore: they survive a restart until the upload expires
 * (7 days) and are freed by complete, abort or the expiry sweep. Unknown, expired or foreign uploadId → 612.
 * The object's etag is the plain Kodo etag when every part but the last is 4 MiB and none is larger, else the 0x9e
 * form (§7; the SDKs' own rule, `hasPlainEtag`), both composed from the parts' etags recorded at upload;
 * complete commits a manifest of the parts (assemble.ts: nothing copied) and consumes the upload in that commit.
 */
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ACCOUNT, authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import type { PutPolicy } from '../../policy/put-policy.js';
import { nowSeconds } from '../../ports/clock.js';
import type { PartRecord, UploadRecord } from '../../ports/meta.js';
import { urlsafeB64Decode } from '../../auth/base64.js';
import { releaseBlobs } from '../blobs.js';
import { BLOCK_SIZE, etagFromBlockDigests, etagV2, type Digests } from '../etag.js';
import { putObject, type PutRequest, type PutResult } from '../put-object.js';
import { receiveBody, sealOrDiscard } from '../receive.js';
import { assembledBody, storedPieces } from './assemble.js';

/** Lifetime of an upload, seconds. */
export const UPLOAD_TTL_SECONDS = 7 * 86400;
export const MAX_PART_NUMBER = 10000;
/** Largest part, bytes (1 GiB, as Kodo). */
export const MAX_PART_BYTES = 1024 ** 3;

/** Where an upload goes: the bucket and key of the URL (`key` undefined for `~`). */
export interface UploadTarget {
  bucket: string;
  key: string | undefined;
}

/** `POST …/uploads`: starts an upload into the scope bucket. 403 when the bucket is not the scope's. */
export async function initiateUpload(
  g: Granary,
  accessKey: string,
  policy: PutPolicy,
  target: UploadTarget,
): Promise<{ uploadId: string; expireAt: number }> {
  if (target.bucket !== policy.bucket) throw Errors.scopeMismatch(`bucket ${target.bucket} is not the scope's`);
  // A key named now is checked now; the key of a keyless upload when it completes (putObject).
  await authorizeBucket(g, accessKey, target.bucket, target.key !== undefined ? { action: 'kodo/Mkfile', key: target.key } : { action: ACCOUNT });
  const now = nowSeconds(g.clock);
  const upload: UploadRecord = {
    id: randomBytes(16).toString('hex'),
    accessKey,
    bucket: target.bucket,
    createdAt: now,
    expiresAt: now + UPLOAD_TTL_SECONDS,
  };
  if (target.key !== undefined) upload.key = target.key;
  await g.meta.sessions.createUpload(upload);
  return { uploadId: upload.id, expireAt: upload.expiresAt };
}

/** The live upload for this key and target; 612 otherwise. */
async function liveUpload(g: Granary, accessKey: string, target: UploadTarget, uploadId: string): Promise<UploadRecord> {
  const u = await g.meta.sessions.getUpload(uploadId);
  if (!u || u.accessKey !== accessKey || u.bucket !== target.bucket || u.key !== target.key || u.expiresAt <= nowSeconds(g.clock)) {
    throw Errors.noSuchUpload();
  }
  return u;
}

/** A Content-MD5 value as lower-case hex: the SDKs send hex; standard HTTP base64 is accepted too. */
function md5Hex(value: string): string {
  const v = value.trim();
  if (/^[0-9a-fA-F]{32}$/.test(v)) return v.toLowerCase();
  if (/^[A-Za-z0-9+/]{22}==$/.test(v)) return Buffer.from(v, 'base64').toString('hex');
  return v;
}

/**
 * `PUT …/uploads/<id>/<n>`: stores part `n`. 400 for a bad part number or a Content-MD5 mismatch; 413 for a part
 * over 1 GiB (or GRANARY_MAX_OBJECT_SIZE), refused before reading when its Content-Length says so.
 * `verify` (the S3 door's additional checksums) runs on the received part's digests before it is stored: an error
 * it throws discards the part; the text it answers is recorded as the part's `checksum`.
 */
export async function uploadPart(
  g: Granary,
  accessKey: string,
  target: UploadTarget,
  uploadId: string,
  partNumber: number,
  contentMd5: string | undefined,
  body: Readable,
  declaredBytes?: number,
  verify?: (digests: Digests) => string | undefined | Promise<string | undefined>,
): Promise<{ etag: string; md5: string; checksum?: string }> {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
    throw Errors.badRequest(`partNumber must be 1..${MAX_PART_NUMBER}`);
  }
  await liveUpload(g, accessKey, target, uploadId);
  const maxBytes = Math.min(MAX_PART_BYTES, g.config.maxObjectBytes);
  if (declaredBytes !== undefined && declaredBytes > maxBytes) {
    throw Errors.objectTooLarge(`the part's Content-Length ${declaredBytes} exceeds ${maxBytes} bytes`);
  }
  const received = await receiveBody(g, body, {
    maxBytes,
    ...(declaredBytes !== undefined ? { expectedBytes: declaredBytes } : {}),
  });
  const { digests } = received;
  let checksum: string | undefined;
  try {
    if (contentMd5 !== undefined && md5Hex(contentMd5) !== digests.md5) throw Errors.md5Mismatch();
    checksum = await verify?.(digests);
  } catch (err) {
    await received.staged.discard();
    throw err;
  }
  const blobId = await sealOrDiscard(received.staged);
  const part: PartRecord = {
    partNumber,
    blobId,
    size: digests.size,
    md5: digests.md5,
    etag: digests.etag,
    putTime: nowSeconds(g.clock),
    ...(checksum !== undefined ? { checksum } : {}),
  };
  const out = await g.meta.sessions.putPart(uploadId, part, digests.sums);
  await releaseBlobs(g, out.freedBlobs);
  if (out.result === 'missing') {
    await g.blobs.remove(blobId);
    throw Errors.noSuchUpload();
  }
  return { etag: digests.etag, md5: digests.md5, ...(checksum !== undefined ? { checksum } : {}) };
}

/** The body of complete (§6.3). */
export interface CompleteRequest {
  parts: Array<{ partNumber: number; etag: string }>;
  fname?: string;
  mimeType?: string;
  customVars?: Record<string, string>;
  metadata?: Record<string, string>;
  /** The Java SDK's spelling of `metadata` (ApiUploadV2CompleteUpload). */
  metaData?: Record<string, string>;
}

/**
 * Every stored part of an upload (part numbers 1…10000), by number, read in pages of 1,000 — the one part listing of
 * Kodo's resumable v2 complete and S3's CompleteMultipartUpload.
 */
export async function allParts(g: Pick<Granary, 'meta'>, uploadId: string): Promise<Map<number, PartRecord>> {
  const out = new Map<number, PartRecord>();
  for (let after = 0; ; ) {
    const page = await g.meta.sessions.listParts(uploadId, after, 1000);
    for (const p of page) out.set(p.partNumber, p);
    if (page.length < 1000) return out;
    after = page[page.length - 1]?.partNumber ?? after;
  }
}

/** The SHA-1 in a part's etag (0x16‖sha1 for a part of at most 4 MiB). */
const sha1OfEtag = (etag: string): Buffer => urlsafeB64Decode(etag).subarray(1);

/**
 * Whether an object of parts of these sizes (bytes) has the plain Kodo etag: every part but the last is 4 MiB and
 * the last is at most 4 MiB — the SDKs' own test (go-sdk storage/etag.go `is4MbParts`, java-sdk util/EtagV2.java
 * `is4MBParts`). Otherwise (a part of another size, or any part over 4 MiB, the last included) it is the 0x9e form.
 */
export function hasPlainEtag(sizes: number[]): boolean {
  return sizes.every((size, i) => (i < sizes.length - 1 ? size === BLOCK_SIZE : size <= BLOCK_SIZE));
}

/**
 * The etag of the object made of `parts` (§7), from their recorded etags: the plain qetag when `hasPlainEtag`
 * (the parts' SHA-1s are its block SHA-1s; an empty last part after 4 MiB ones adds no block), else the 0x9e form.
 */
function multipartEtag(parts: PartRecord[]): string {
  if (!hasPlainEtag(parts.map((p) => p.size))) return etagV2(parts.map((p) => p.etag));
  const blocks = parts.filter((p, i) => p.size > 0 || (i === 0 && parts.length === 1));
  return etagFromBlockDigests(blocks.map((p) => sha1OfEtag(p.etag)));
}

/**
 * `POST …/uploads/<id>`: joins the listed parts (ascending, each stored with that etag; 400 otherwise) and commits
 * through putObject with `req` (policy, key, fname, MIME, variables, metadata) a manifest of them; the upload is
 * consumed in that commit (612 when it was aborted or swept meanwhile, 400 when a chosen part was replaced).
 */
export async function completeUpload(
  g: Granary,
  target: UploadTarget,
  uploadId: string,
  list: CompleteRequest['parts'],
  req: PutRequest,
): Promise<PutResult> {
  await liveUpload(g, req.accessKey, target, uploadId);
  const stored = await allParts(g, uploadId);
  const chosen: PartRecord[] = [];
  let last = 0;
  for (const item of list) {
    const p = stored.get(item.partNumber);
    if (!Number.isInteger(item.partNumber) || item.partNumber <= last) throw Errors.badPartList('parts must be in ascending order');
    if (!p || p.etag !== item.etag) throw Errors.badPartList(`part ${item.partNumber} was not uploaded with that etag`);
    chosen.push(p);
    last = item.partNumber;
  }
  let body;
  try {
    const sizes = new Map(chosen.map((p) => [p.blobId, p.size]));
    body = await assembledBody(g, {
      pieces: await storedPieces(g, chosen.map((p) => p.blobId), (id) => sizes.get(id)),
      etag: multipartEtag(chosen),
      claim: { kind: 'upload', id: uploadId, parts: chosen.map((p) => ({ partNumber: p.partNumber, blobId: p.blobId })) },
      lost: (reason) => (reason === 'gone' ? Errors.noSuchUpload() : Errors.badPartList('a part was replaced during complete')),
    });
  } catch (err) {
    throw (await raceLoss(g, uploadId, chosen)) ?? err;
  }
  const result = await putObject(g, body, { ...req, parts: chosen.map((p) => p.size), event: 'mkfile' });
  g.metrics?.upload('v2-complete', result.record.fsize);
  return result;
}

/**
 * Why reading the chosen parts failed when a concurrent call changed the upload under this complete (their blobs
 * are freed at once): 612 when the upload was aborted, completed or swept meanwhile; 400 when a chosen part was
 * re-uploaded. Undefined when neither happened (a genuine read failure).
 */
async function raceLoss(g: Granary, uploadId: string, chosen: PartRecord[]): Promise<Error | undefined> {
  if (!(await g.meta.sessions.getUpload(uploadId))) return Errors.noSuchUpload();
  const now = await allParts(g, uploadId);
  if (chosen.some((p) => now.get(p.partNumber)?.blobId !== p.blobId)) return Errors.badPartList('a part was replaced during complete');
  return undefined;
}

/** `DELETE …/uploads/<id>`: drops the upload and its parts; 612 when unknown. */
export async function abortUpload(g: Granary, accessKey: string, target: UploadTarget, uploadId: string): Promise<void> {
  await liveUpload(g, accessKey, target, uploadId);
  const { freedBlobs } = await g.meta.sessions.deleteUpload(uploadId);
  await releaseBlobs(g, freedBlobs);
}

/** `GET …/uploads/<id>`: the stored parts after `marker`, at most `maxParts` (1..1000). */
export async function listUploadParts(
  g: Granary,
  accessKey: string,
  target: UploadTarget,
  uploadId: string,
  marker: number,
  maxParts: number,
): Promise<Record<string, unknown>> {
  const u = await liveUpload(g, accessKey, target, uploadId);
  const parts = await g.meta.sessions.listParts(uploadId, marker, maxParts + 1);
  const more = parts.length > maxParts;
  const page = parts.slice(0, maxParts);
  return {
    uploadId,
    expireAt: u.expiresAt,
    partNumberMarker: more ? (page[page.length - 1]?.partNumber ?? 0) : 0,
    parts: page.map((p) => ({ partNumber: p.partNumber, etag: p.etag, size: p.size, putTime: p.putTime })),
  };
}
