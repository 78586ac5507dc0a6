/**
 * Version ids on the S3 wire (ports/versions.ts, docs/reference/versioning.md): the `versionId` query parameter
 * and the `x-amz-version-id` answer header.
 */
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { isVersionId, wireVersionId } from '../ports/versions.js';
import { S3Errors } from './errors.js';
import type { S3Request } from './types.js';

/**
 * A version id as sent (a `versionId` query parameter or the `?versionId=` of a copy source): undefined when absent;
 * InvalidArgument ("Invalid version id specified", as S3 answers) for one Granary could not have made, empty included.
 */
export function checkedVersionId(text: string | null | undefined): string | undefined {
  if (text === null || text === undefined) return undefined;
  if (!isVersionId(text)) throw S3Errors.InvalidArgument('Invalid version id specified');
  return text;
}

/** The request's `versionId` query parameter, checked. */
export function versionIdOf(req: S3Request): string | undefined {
  return checkedVersionId(req.query.get('versionId'));
}

/**
 * `x-amz-version-id` for an answer about `rec` in `bucket`: its version's id (`null` for the null version) when the
 * bucket is or was versioned, or when the request named a version; nothing for a bucket never versioned.
 */
export function versionHeader(bucket: BucketRecord, rec: ObjectRecord, named = false): Record<string, string> {
  return bucket.settings.versioning || named || rec.versionId !== undefined ? { 'x-amz-version-id': wireVersionId(rec) } : {};
}

/**
 * `x-amz-version-id` of a write (PutObject, PostObject, CopyObject, CompleteMultipartUpload): the new version's id
 * when its bucket's versioning is Enabled; nothing for a null version (unversioned or Suspended buckets).
 */
export function writtenVersionHeader(rec: { versionId?: string }): Record<string, string> {
  return rec.versionId !== undefined ? { 'x-amz-version-id': rec.versionId } : {};
}
