/**
 * The one retention check (docs/reference/versioning.md, "Object lock"; AWS: *Locking objects with Object Lock*):
 * every path that destroys a stored version — S3 DeleteObject/DeleteObjects with a version id, the Kodo door, the
 * console, the CLI, lifecycle sweeps, quotas, bucket drops — passes through `versionGuard`, which the MetaStore's
 * `deleteVersion` requires and calls inside its deleting transaction (ports/meta.ts). Paths that only add a version
 * or a delete marker (every write and every delete without a version id on a versioned bucket, which a bucket with
 * object lock always is) destroy nothing and are allowed on locked versions, as on AWS.
 *
 * Refusal: the Kodo error `objectLocked` (403 `{"error":"object locked: the object version is protected by
 * COMPLIANCE retention until 2030-01-01T00:00:00.000Z"}`), answered by the S3 door as AccessDenied with that
 * message.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { ObjectRecord } from '../ports/meta.js';
import { lockRefusal, refusalText, retentionChangeRefusal, type ObjectLock } from '../ports/object-lock.js';

/** Who is asking: `bypassGovernance` when the caller sent `x-amz-bypass-governance-retention: true` and may. */
export interface RetentionCaller {
  bypassGovernance?: boolean;
}

/**
 * Throws 403 `objectLocked` when the version `rec` may not be destroyed at `nowMs` (a legal hold; retention in
 * force: COMPLIANCE always, GOVERNANCE unless `caller.bypassGovernance`).
 */
export function assertVersionMutable(rec: ObjectRecord, nowMs: number, caller: RetentionCaller = {}): void {
  const refusal = lockRefusal(rec.lock, nowMs, caller.bypassGovernance === true);
  if (refusal) throw Errors.objectLocked(refusalText(refusal));
}

/** The check as the MetaStore's `deleteVersion` takes it, on the server's clock at the time of the deletion. */
export function versionGuard(g: Granary, caller: RetentionCaller = {}): (rec: ObjectRecord) => void {
  return (rec) => assertVersionMutable(rec, g.clock.nowMs(), caller);
}

/**
 * Throws 403 `objectLocked` when replacing the retention of `rec` by `next` at `nowMs` would lessen retention in
 * force (a shorter date, a removal, COMPLIANCE → GOVERNANCE) and the caller may not (ports/object-lock.ts
 * `retentionChangeRefusal`).
 */
export function assertRetentionChange(rec: ObjectRecord, next: ObjectLock, nowMs: number, caller: RetentionCaller = {}): void {
  const refusal = retentionChangeRefusal(rec.lock, next, nowMs, caller.bypassGovernance === true);
  if (refusal) throw Errors.objectLocked(refusalText(refusal));
}
