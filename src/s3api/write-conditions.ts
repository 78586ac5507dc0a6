/**
 * Conditional writes of PutObject and CompleteMultipartUpload (AWS S3 User Guide "How to prevent object overwrites
 * with conditional writes", 2024; API_PutObject / API_CompleteMultipartUpload `If-Match`, `If-None-Match`),
 * docs/development/kodo-protocol.md §18.5:
 *
 * - `If-None-Match: *` — the write succeeds only when no object is under the key; otherwise 412 PreconditionFailed.
 *   An entity-tag list (as Ceph's radosgw accepts it) refuses the write when the current object's ETag is listed.
 * - `If-Match: <etag>` (list, quotes optional, `*` = any) — the write succeeds only when the current object's ETag is
 *   listed: 412 PreconditionFailed when it differs, 404 NoSuchKey when there is no object.
 *
 * Atomic: the check is a MetaStore `commitPut` precondition, run in the transaction that makes the new entry
 * visible, so of concurrent `If-None-Match: *` writers exactly one succeeds and an `If-Match` write never replaces
 * an object it did not name. A cheap early check (`checkEarly`) refuses before the body is read when the condition
 * already fails; the commit's check is the one that decides.
 */
import type { Granary } from '../context.js';
import { findLiveObject } from '../objects/read.js';
import type { ObjectRecord, PutPrecondition } from '../ports/meta.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import { etagOf } from './object-headers.js';
import type { S3Request } from './types.js';

/** Whether an entity-tag list header (`"a", "b"`, `*`; quotes optional, weak tags compare as strong) names `etag`. */
export function tagListMatches(list: string, etag: string): boolean {
  return list
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag || `"${t}"` === etag);
}

/** The precondition of a write's `If-Match` / `If-None-Match` headers, or undefined when it sends neither. */
export function writePrecondition(req: Pick<S3Request, 'headers'>): PutPrecondition | undefined {
  const ifMatch = headerOf(req, 'if-match');
  const ifNoneMatch = headerOf(req, 'if-none-match');
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  return (existing: ObjectRecord | undefined) => {
    if (ifMatch !== undefined) {
      if (!existing) return S3Errors.NoSuchKey();
      if (!tagListMatches(ifMatch, etagOf(existing))) return S3Errors.PreconditionFailed();
    }
    if (ifNoneMatch !== undefined && existing && tagListMatches(ifNoneMatch, etagOf(existing))) {
      return S3Errors.PreconditionFailed();
    }
    return undefined;
  };
}

/** Throws the refusal of `precondition` against the object under the key now (before the body is read). */
export async function checkEarly(g: Granary, precondition: PutPrecondition | undefined, bucket: string, key: string): Promise<void> {
  if (!precondition) return;
  const refusal = precondition(await findLiveObject(g, bucket, key));
  if (refusal) throw refusal;
}
