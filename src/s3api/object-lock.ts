/**
 * S3 Object Lock on the wire (docs/reference/versioning.md "Object lock"; AWS API reference: PutObject's
 * `x-amz-object-lock-mode`, `x-amz-object-lock-retain-until-date`, `x-amz-object-lock-legal-hold`; GetObject's
 * answer headers of the same names): the lock a write asks for, from headers (PutObject, CopyObject,
 * CreateMultipartUpload) or POST form fields, and the headers a read answers.
 */
import type { Granary } from '../context.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { isLockMode, type ObjectLock } from '../ports/object-lock.js';
import { S3Errors } from './errors.js';
import type { S3Request } from './types.js';
import { isoTime } from './xml.js';

/** The three lock fields as sent (header or form field values; undefined when absent). */
export interface LockFields {
  mode: string | undefined;
  retainUntil: string | undefined;
  legalHold: string | undefined;
}

/** The lock fields of a request's headers. */
export function lockFieldsOfHeaders(headers: Record<string, string | string[] | undefined>): LockFields {
  const one = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  return {
    mode: one('x-amz-object-lock-mode'),
    retainUntil: one('x-amz-object-lock-retain-until-date'),
    legalHold: one('x-amz-object-lock-legal-hold'),
  };
}

/**
 * A retain-until date as sent (ISO 8601, AWS's `2030-01-01T00:00:00Z` or with milliseconds) → Unix ms. InvalidArgument
 * when it does not parse or is not in the future (`nowMs`).
 */
export function retainUntilOf(text: string, nowMs: number): number {
  const ms = /^\d{4}-\d\d-\d\dT/.test(text.trim()) ? Date.parse(text.trim()) : Number.NaN;
  if (!Number.isFinite(ms)) throw S3Errors.InvalidArgument('The retain until date is not a valid ISO 8601 date.');
  if (ms <= nowMs) throw S3Errors.InvalidArgument('The retain until date must be in the future!');
  return ms;
}

/**
 * The lock a write asks for (undefined: none) in `bucket`, checked: mode and retain-until-date come together
 * (InvalidArgument otherwise), the mode is GOVERNANCE or COMPLIANCE and the date in the future (InvalidArgument),
 * legal hold ON or OFF (InvalidArgument); a lock asked for on a bucket without object lock is InvalidRequest
 * ("Bucket is missing Object Lock Configuration", as AWS answers).
 */
export function askedLock(bucket: BucketRecord, f: LockFields, nowMs: number): ObjectLock | undefined {
  if (f.mode === undefined && f.retainUntil === undefined && f.legalHold === undefined) return undefined;
  if (!bucket.settings.objectLock) throw S3Errors.InvalidRequest('Bucket is missing Object Lock Configuration');
  const lock: ObjectLock = {};
  if ((f.mode === undefined) !== (f.retainUntil === undefined)) {
    throw S3Errors.InvalidArgument('x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied');
  }
  if (f.mode !== undefined && f.retainUntil !== undefined) {
    const mode = f.mode.trim().toUpperCase();
    if (!isLockMode(mode)) throw S3Errors.InvalidArgument('Unknown wormMode directive.');
    lock.mode = mode;
    lock.retainUntil = retainUntilOf(f.retainUntil, nowMs);
  }
  if (f.legalHold !== undefined) {
    const hold = f.legalHold.trim().toUpperCase();
    if (hold !== 'ON' && hold !== 'OFF') throw S3Errors.InvalidArgument('Legal Hold must be either of ON or OFF');
    if (hold === 'ON') lock.legalHold = true;
  }
  return lock;
}

/**
 * The lock a write request's headers ask for (`askedLock`), reading the bucket only when it sends lock headers
 * (`bucket`: the record the operation already read, if any). NoSuchBucket is left to the write.
 */
export async function requestLock(g: Granary, req: S3Request, bucket?: BucketRecord): Promise<ObjectLock | undefined> {
  const fields = lockFieldsOfHeaders(req.headers);
  if (fields.mode === undefined && fields.retainUntil === undefined && fields.legalHold === undefined) return undefined;
  const rec = bucket ?? req.prefetched ?? (req.bucket !== undefined ? await g.meta.getBucket(req.bucket) : undefined);
  if (!rec) throw S3Errors.NoSuchBucket();
  return askedLock(rec, fields, g.clock.nowMs());
}

/** The lock headers of a read's answer (GetObject, HeadObject): a version's retention and legal hold. */
export function lockAnswerHeaders(rec: ObjectRecord): Record<string, string> {
  const lock = rec.lock;
  if (!lock) return {};
  const h: Record<string, string> = {};
  if (lock.mode && lock.retainUntil !== undefined) {
    h['x-amz-object-lock-mode'] = lock.mode;
    h['x-amz-object-lock-retain-until-date'] = isoTime(lock.retainUntil);
  }
  if (lock.legalHold) h['x-amz-object-lock-legal-hold'] = 'ON';
  return h;
}
