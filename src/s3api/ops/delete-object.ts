/**
 * DeleteObject (`DELETE /<bucket>/<key>`): the Kodo delete (objects/manage/delete.ts: blob freed when no other
 * entry shares it, `delete` event notifications); 204 even when the key is missing, as S3 answers (no versioning).
 */
import type { Granary } from '../../context.js';
import { isKodoError } from '../../errors.js';
import { deleteEntry } from '../../objects/manage/delete.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import type { S3Request, S3Response } from '../types.js';

/** Deletes `<bucket>:<key>` for `accessKey`; a missing key is not an error. */
export async function deleteKey(g: Granary, bucket: string, key: string, accessKey: string, reqId: string): Promise<void> {
  try {
    await deleteEntry(g, { bucket, key }, { accessKey, reqId });
  } catch (err) {
    if (!isKodoError(err, 'noSuchEntry')) throw err;
  }
}

export async function deleteObject(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = await accessBucket(g, req);
  await deleteKey(g, bucket.name, objectKey(req), accessKey, req.reqId);
  return { status: 204 };
}
