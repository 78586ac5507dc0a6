/**
 * A bucket's `maxAge` (protocol.md §8.6 `POST /maxAge?bucket=&maxAge=`, bucketInfo `max_age`): the
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

/** Kodo's default max-age, seconds (one year); also what a value ≤ 0 sets (as the Node SDK's putBucketMaxAge). */
export const DEFAULT_MAX_AGE = 31_536_000;
/** Largest max-age accepted, seconds (2^31 − 1: RFC 9111 §1.2.2 caches treat larger values as this). */
export const MAX_MAX_AGE = 2_147_483_647;

/**
 * The wire value of `maxAge` (decimal integer, optionally negative) as seconds: ≤ 0 → DEFAULT_MAX_AGE. 400 naming
 * `maxAge` when it is not an integer or exceeds MAX_MAX_AGE.
 */
export function parseMaxAge(text: string): number {
  if (!/^-?\d{1,12}$/.test(text.trim())) throw Errors.badRequest(`maxAge must be an integer number of seconds, got ${JSON.stringify(text)}`);
  const n = Number(text.trim());
  if (n > MAX_MAX_AGE) throw Errors.badRequest(`maxAge must be at most ${MAX_MAX_AGE} seconds`);
  return n <= 0 ? DEFAULT_MAX_AGE : n;
}

/** Sets the bucket's max-age (seconds, already parsed). 631 when the bucket is missing. */
export async function setMaxAge(g: Granary, bucket: string, seconds: number): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => ({ ...cur, maxAge: seconds }));
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/**
 * The `Cache-Control` of a download or fop result of `bucket` at `nowSec` (Unix seconds); `deadline` is the `e` of
 * a signed private URL (Unix seconds), if any. See the module comment.
 */
export function cacheControl(bucket: Pick<BucketRecord, 'private' | 'settings'>, nowSec: number, deadline?: number): string {
  const maxAge = bucket.settings.maxAge;
  if (!bucket.private) return `public, max-age=${maxAge ?? DEFAULT_MAX_AGE}`;
  if (maxAge === undefined) return 'private, max-age=0';
  const left = deadline === undefined || !Number.isFinite(deadline) ? 0 : Math.max(0, Math.floor(deadline) - nowSec);
  return `private, max-age=${Math.min(maxAge, left)}`;
}
