/**
 * A bucket's `maxAge` (docs/development/kodo-protocol.md §8.6 `POST /maxAge?bucket=&maxAge=`, bucketInfo `max_age`): the
 * `Cache-Control: max-age` its downloads and fop results are served with, in seconds.
 *
 * - Public buckets: `public, max-age=<maxAge>` (31536000 when never set, as Kodo).
 * - Private buckets: `private, max-age=0` when never set (as before this setting existed); once set,
 *   `private, max-age=<n>` with n = min(maxAge, seconds left before the signed URL's `e`): only the browser may keep
 *   the response (never a shared cache), and never past the URL's own deadline.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord } from '../ports/meta.js';

/** Kodo's default max-age, seconds (one year); also what a value ≤ 0 means when serving (the SDKs' putBucketMaxAge). */
export const DEFAULT_MAX_AGE = 31_536_000;
/** Largest max-age accepted, seconds (2^31 − 1: RFC 9111 §1.2.2 caches treat larger values as this). */
export const MAX_MAX_AGE = 2_147_483_647;

/** Smallest max-age accepted, seconds (−2^31, the Java SDK's `Integer.MIN_VALUE`; any value ≤ 0 means the default). */
export const MIN_MAX_AGE = -2_147_483_648;

/**
 * The wire value of `maxAge` (decimal integer, optionally negative) as set, seconds: kept as is, so bucketInfo
 * reports what was set (Kodo does; the Java SDK's test sets −2147483648, −1 and 0 and reads them back); a value ≤ 0
 * means DEFAULT_MAX_AGE when serving (`effectiveMaxAge`). 400 naming `maxAge` when it is not an integer or lies
 * outside MIN_MAX_AGE..MAX_MAX_AGE.
 */
export function parseMaxAge(text: string): number {
  if (!/^-?\d{1,12}$/.test(text.trim())) throw Errors.badRequest(`maxAge must be an integer number of seconds, got ${JSON.stringify(text)}`);
  const n = Number(text.trim());
  if (n > MAX_MAX_AGE) throw Errors.badRequest(`maxAge must be at most ${MAX_MAX_AGE} seconds`);
  if (n < MIN_MAX_AGE) throw Errors.badRequest(`maxAge must be at least ${MIN_MAX_AGE} seconds`);
  return n;
}

/** The max-age served for a stored value, seconds: a value ≤ 0 (or none) is Kodo's default, DEFAULT_MAX_AGE. */
export function effectiveMaxAge(stored: number | undefined): number {
  return stored === undefined || stored <= 0 ? DEFAULT_MAX_AGE : stored;
}

/** Sets the bucket's max-age (seconds as set, already parsed). 631 when the bucket is missing. */
export async function setMaxAge(g: Granary, bucket: string, seconds: number): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => ({ ...cur, maxAge: seconds }));
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/**
 * The `Cache-Control` of a download or fop result of `bucket` at `nowSec` (Unix seconds); `deadline` is the `e` of
 * a signed private URL (Unix seconds), if any. See the module comment.
 */
export function cacheControl(bucket: Pick<BucketRecord, 'private' | 'settings'>, nowSec: number, deadline?: number): string {
  const stored = bucket.settings.maxAge;
  const maxAge = effectiveMaxAge(stored);
  if (!bucket.private) return `public, max-age=${maxAge}`;
  if (stored === undefined) return 'private, max-age=0';
  const left = deadline === undefined || !Number.isFinite(deadline) ? 0 : Math.max(0, Math.floor(deadline) - nowSec);
  return `private, max-age=${Math.min(maxAge, left)}`;
}
