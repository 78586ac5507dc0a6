/**
 * S3 multipart uploads over Kodo's v2 multipart sessions (docs/development/kodo-protocol.md §18.8): an S3 upload
 * is an `UploadRecord` of the session store with its parts (objects/resumable/parts.ts), so parts are sealed
 * blobs and CompleteMultipartUpload commits a manifest of them (nothing copied) through the one putObject path.
 *
 * - What CreateMultipartUpload sets for the object (Content-Type, `x-amz-meta-*`, stored headers, storage class,
 *   tags) is kept as the upload's **part 0**: an empty blob whose `etag` field holds the settings as JSON. S3 part
 *   numbers are 1..10000, and every part listing and Kodo's complete read parts after 0, so part 0 is invisible to
 *   both APIs and is freed with the upload (complete, abort, the expiry sweep).
 * - The S3 ETag of a part is its MD5 (quoted hex); of the completed object `"<hex MD5 of the concatenated binary
 *   part MD5s>-<part count>"`, kept in the entry's reserved metadata `@s3-etag` (object-headers.ts `etagOf`).
 * - Every part but the last must be at least 5 MiB (EntityTooSmall); an unknown, expired, foreign or other-key
 *   upload id is NoSuchUpload (404).
 * - Additional checksums (checksum.ts, object-checksum.ts): the algorithm and type chosen at create are settings;
 *   each part's verified checksum is recorded with the part as `<algorithm>:<base64>` (`PartRecord.checksum`).
 * - The completed object keeps its upload id as the reserved metadata `@s3-upload`, so a repeated
 *   CompleteMultipartUpload of the same parts answers the same result (S3 and radosgw do; boto3's retries and
 *   Ceph's s3-tests rely on it).
 */
import type { ObjectLock } from '../ports/object-lock.js';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Granary } from '../context.js';
import { receiveBody, sealOrDiscard } from '../objects/receive.js';
import { nowSeconds } from '../ports/clock.js';
import type { PartRecord, UploadRecord } from '../ports/meta.js';
import type { ChecksumAlgorithm } from './checksum.js';
import { S3Errors } from './errors.js';
import type { ChecksumType } from './object-checksum.js';

/** Smallest part but the last, bytes (S3's 5 MiB). */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

/** Reserved metadata name holding the S3 ETag of an object completed by CompleteMultipartUpload. */
export const S3_ETAG_META = '@s3-etag';

/** What CreateMultipartUpload set for the object, applied at complete. */
export interface UploadSettings {
  /** Content-Type sent at create, if any. */
  mime?: string;
  /** Entry metadata (names without `x-qn-meta-`, stored headers as `!<Header>`, tags as `@s3-tagging`). */
  meta: Record<string, string>;
  /** Kodo file type (storage class). */
  fileType: number;
  /** The checksum the object gets (`x-amz-checksum-algorithm` and `-type` at create), if any. */
  checksum?: { algorithm: ChecksumAlgorithm; type: ChecksumType };
  /** The object lock asked at create (`x-amz-object-lock-*`; object-lock.ts), applied at complete. */
  lock?: ObjectLock;
}

/** Reserved metadata name holding the upload id of an object completed by CompleteMultipartUpload. */
export const S3_UPLOAD_META = '@s3-upload';

/** The text a part's checksum is recorded as. */
export function encodePartChecksum(algorithm: ChecksumAlgorithm, value: string): string {
  return `${algorithm}:${value}`;
}

/** A part's recorded checksum of `algorithm` (base64), or undefined. */
export function partChecksum(p: Pick<PartRecord, 'checksum'>, algorithm: ChecksumAlgorithm): string | undefined {
  const prefix = `${algorithm}:`;
  return p.checksum?.startsWith(prefix) ? p.checksum.slice(prefix.length) : undefined;
}

/** Records an upload's settings as its part 0. */
export async function saveSettings(g: Granary, uploadId: string, settings: UploadSettings): Promise<void> {
  const received = await receiveBody(g, Readable.from([]), { maxBytes: 0 });
  const blobId = await sealOrDiscard(received.staged);
  const part: PartRecord = { partNumber: 0, blobId, size: 0, md5: '', etag: JSON.stringify(settings), putTime: nowSeconds(g.clock) };
  const out = await g.meta.sessions.putPart(uploadId, part, received.digests.sums);
  if (out.result === 'missing') {
    await g.blobs.remove(blobId);
    throw S3Errors.NoSuchUpload();
  }
}

/** An upload's settings (defaults when it has no part 0: an upload started through the Kodo API). */
export async function loadSettings(g: Granary, uploadId: string): Promise<UploadSettings> {
  const [zero] = await g.meta.sessions.listParts(uploadId, -1, 1);
  if (!zero || zero.partNumber !== 0) return { meta: {}, fileType: 0 };
  try {
    return JSON.parse(zero.etag) as UploadSettings;
  } catch {
    return { meta: {}, fileType: 0 };
  }
}

/** The live upload `uploadId` of `<bucket>/<key>` started with `accessKey`; NoSuchUpload otherwise. */
export async function s3Upload(g: Granary, accessKey: string, bucket: string, key: string, uploadId: string): Promise<UploadRecord> {
  const u = await g.meta.sessions.getUpload(uploadId);
  if (!u || u.accessKey !== accessKey || u.bucket !== bucket || u.key !== key || u.expiresAt <= nowSeconds(g.clock)) {
    throw S3Errors.NoSuchUpload();
  }
  return u;
}

/** The quoted S3 ETag of a part (its MD5). */
export function partEtag(p: Pick<PartRecord, 'md5'>): string {
  return `"${p.md5}"`;
}

/** The S3 ETag (unquoted) of an object made of parts with these hex MD5s. */
export function multipartEtag(md5s: string[]): string {
  const h = createHash('md5');
  for (const m of md5s) h.update(Buffer.from(m, 'hex'));
  return `${h.digest('hex')}-${md5s.length}`;
}

/**
 * An ETag as clients send it back: quotes optional, case-insensitive hex (rclone's `&#34;` quotes are decoded by the
 * XML parser, xml.ts).
 */
export function normalEtag(text: string): string {
  return text.trim().replace(/^"|"$/g, '').toLowerCase();
}

/** A part number query parameter: 1..10000; InvalidArgument otherwise. */
export function partNumberOf(text: string | null): number {
  if (text === null || !/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 10000) {
    throw S3Errors.InvalidArgument('Part number must be an integer between 1 and 10000, inclusive');
  }
  return Number(text);
}

/** The upload id query parameter; NoSuchUpload when empty. */
export function uploadIdOf(query: URLSearchParams): string {
  const id = query.get('uploadId');
  if (!id) throw S3Errors.NoSuchUpload();
  return id;
}
