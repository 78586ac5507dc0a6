/**
 * Bucket quotas with Kodo semantics (docs/development/kodo-protocol.md §8.6, §13.2 `putBucketQuota`/`getBucketQuota`).
 *
 * - `size` is in bytes, `count` in entries. On the wire (`/setbucketquota/<bucket>/size/<n>/count/<n>`) a value of
 *   0 leaves that limit as it is, -1 removes it, a positive integer sets it; a new bucket has no limits. The answer
 *   of `getbucketquota` is `{"size": n, "count": n}`, -1 for no limit.
 * - Enforcement is the store's (store/quota-rule.ts, inside the commit transaction of every upload path, copy and
 *   move): a change that would grow a bucket past a limit is refused with `quotaExceeded` (403), built here.
 * - Usage counts every entry's `fsize` (copies sharing one blob each count in full, as Kodo bills per entry).
 */
import type { Granary } from '../context.js';
import { Errors, type KodoError } from '../errors.js';
import type { BucketQuota, BucketRecord, QuotaRefusal } from '../ports/meta.js';

/** A requested change: per limit, 0 (or absent) = unchanged, -1 = no limit, > 0 = the limit. */
export interface QuotaChange {
  size?: number;
  count?: number;
}

const VALUE = /^(-1|0|[1-9][0-9]*)$/;

/**
 * Parses one wire value of `field` (`size` bytes or `count` entries): -1, 0 or a positive integer up to 2^53 - 1.
 * 400 naming the field otherwise.
 */
export function parseQuotaValue(text: string | undefined, field: 'size' | 'count'): number {
  const n = text !== undefined && VALUE.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) {
    const unit = field === 'size' ? 'bytes' : 'files';
    throw Errors.badRequest(`${field} must be -1 (no limit), 0 (unchanged) or a positive integer of ${unit}, got ${JSON.stringify(text ?? '')}`);
  }
  return n;
}

/**
 * Parses the path segments after the bucket of `/setbucketquota/<bucket>/…`: `size/<n>` and `count/<n>` pairs,
 * each at most once, in either order, at least one. 400 naming what is wrong.
 */
export function parseQuotaPath(segments: string[]): QuotaChange {
  const usage = 'expected /setbucketquota/<bucket>/size/<bytes>/count/<files>';
  if (segments.length === 0 || segments.length % 2 !== 0) throw Errors.badRequest(usage);
  const change: QuotaChange = {};
  for (let i = 0; i < segments.length; i += 2) {
    const name = segments[i];
    if (name !== 'size' && name !== 'count') throw Errors.badRequest(`unknown quota parameter ${JSON.stringify(name)}; ${usage}`);
    if (change[name] !== undefined) throw Errors.badRequest(`${name} given twice; ${usage}`);
    change[name] = parseQuotaValue(segments[i + 1], name);
  }
  return change;
}

/** The quota of a bucket as the wire shows it: -1 for each limit not set. */
export function quotaOf(bucket: BucketRecord): BucketQuota {
  return { size: bucket.settings.quota?.size ?? -1, count: bucket.settings.quota?.count ?? -1 };
}

/**
 * Applies `change` to `current` (undefined = no quota): 0 or absent keeps a limit, -1 removes it, > 0 sets it.
 * Undefined when neither limit remains.
 */
export function mergeQuota(current: BucketQuota | undefined, change: QuotaChange): BucketQuota | undefined {
  const pick = (now: number, wanted: number | undefined): number => (wanted === undefined || wanted === 0 ? now : wanted < 0 ? -1 : wanted);
  const size = pick(current?.size ?? -1, change.size);
  const count = pick(current?.count ?? -1, change.count);
  return size < 0 && count < 0 ? undefined : { size, count };
}

/** Changes a bucket's quota in one settings transaction; answers the new quota. 631 when the bucket is missing. */
export async function setBucketQuota(g: Granary, bucket: string, change: QuotaChange): Promise<BucketQuota> {
  const updated = await g.meta.updateBucketSettings(bucket, (settings) => {
    const { quota: current, ...rest } = settings;
    const quota = mergeQuota(current, change);
    return quota ? { ...rest, quota } : rest;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
  return quotaOf(updated);
}

/** The 403 of a change refused by `bucket`'s quota, naming the limit when known. */
export function quotaExceeded(bucket: string, refusal: QuotaRefusal | undefined): KodoError<'quotaExceeded'> {
  if (!refusal) return Errors.quotaExceeded(`bucket ${bucket}`);
  const what = refusal.limit === 'count' ? `${refusal.max} files` : `${refusal.max} bytes`;
  return Errors.quotaExceeded(`bucket ${bucket} is limited to ${what} (${refusal.limit} quota)`);
}
