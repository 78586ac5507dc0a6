/**
 * Lifecycle deletion time from `deleteAfterDays` (docs/development/kodo-protocol.md §3.1).
 *
 * Rule (Qiniu's docs): take the upload time, add N days, then move to the **following midnight in China Standard
 * Time** (UTC+8, no daylight saving). Qiniu's example: uploaded 2015-01-01 10:00 CST with N = 3 → deleted from
 * 2015-01-05 00:00 CST. "Following" is strict: a sum that falls exactly on a CST midnight still moves on to the next
 * one, so the object always lives more than N days.
 */

const DAY_MS = 86_400_000;
const CST_OFFSET_MS = 8 * 3_600_000;

/**
 * Deletion time for an object uploaded at `putTimeMs` (Unix milliseconds) with `deleteAfterDays = days`:
 * Unix **seconds** of the first CST midnight strictly after `putTimeMs + days × 24 h`.
 * @throws RangeError when `days` is not a non-negative integer (a programming error; policies are validated first).
 */
export function expiryFromDays(putTimeMs: number, days: number): number {
  if (!Number.isInteger(days) || days < 0) throw new RangeError(`deleteAfterDays must be a non-negative integer: ${days}`);
  const cstMs = putTimeMs + days * DAY_MS + CST_OFFSET_MS;
  const nextMidnightCst = (Math.floor(cstMs / DAY_MS) + 1) * DAY_MS;
  return (nextMidnightCst - CST_OFFSET_MS) / 1000;
}
