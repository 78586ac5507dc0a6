/**
 * DeleteObject (`DELETE /<bucket>/<key>[?versionId=<id>]`): the Kodo delete (objects/manage/delete.ts: blob freed
 * when no other entry shares it, `delete` event notifications); 204 even when the key is missing, as S3 answers.
 * Versioned buckets (docs/reference/versioning.md; AWS "Deleting object versions"):
 * - without versionId: a delete marker becomes the current version (even when the key had none), answered with
 *   `x-amz-delete-marker: true` and its `x-amz-version-id`;
 * - with versionId: that version is deleted for good (`x-amz-version-id` echoes it, `x-amz-delete-marker: true` when
 *   it was a marker); an unknown one is still 204 with the id, as AWS answers; a malformed one InvalidArgument.
 */
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { deleteEntry, deleteVersion } from '../../objects/manage/delete.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import type { S3Request, S3Response } from '../types.js';
import { versionIdOf } from '../versions.js';

/** What a deletion did: the version deleted or the delete marker made (its wire id), and whether it is a marker. */
export interface KeyDeletion {
  versionId?: string;
  deleteMarker: boolean;
}

/**
 * Deletes `<bucket>:<key>` (or one version of it) for `accessKey`; a missing key or version is not an error. A
 * version under object lock is refused (403 `objectLocked` → AccessDenied; `bypassGovernance` lifts GOVERNANCE).
 */
export async function deleteKey(
  g: Granary,
  bucket: string,
  key: string,
  accessKey: string,
  reqId: string,
  versionId?: string,
  bypassGovernance = false,
): Promise<KeyDeletion> {
  const actor = { accessKey, reqId };
  if (versionId !== undefined) {
    // A version under object lock is refused there (objects/retention.ts): AccessDenied naming the date.
    const out = await deleteVersion(g, { bucket, key }, versionId, actor, { bypassGovernance });
    return { versionId, deleteMarker: out.deleteMarker };
  }
  try {
    const out = await deleteEntry(g, { bucket, key }, actor, undefined, { markMissing: true });
    return out.marker !== undefined ? { versionId: out.marker, deleteMarker: true } : { deleteMarker: false };
  } catch (err) {
    if (!isKodoError(err, 'noSuchEntry')) throw err;
    return { deleteMarker: false };
  }
}

export async function deleteObject(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = await accessBucket(g, req);
  const versionId = versionIdOf(req);
  const out = await deleteKey(g, bucket.name, objectKey(req), accessKey, req.reqId, versionId, req.bypassGovernance === true);
  const headers: Record<string, string> = {};
  if (out.versionId !== undefined) headers['x-amz-version-id'] = out.versionId;
  if (out.deleteMarker) headers['x-amz-delete-marker'] = 'true';
  return { status: 204, headers };
}
