/**
 * JSON text for Kodo answers, with bigints written as exact integers: `putTime` is Unix time in 100-ns units
 * (≈1.7×10^16, beyond Number.MAX_SAFE_INTEGER; docs/development/kodo-protocol.md §8.2, §14 item 7) and must not be rounded.
 */
const MARK = '\u0000bigint:';

/** `JSON.stringify` that writes bigint values as raw integer literals. */
export function toJson(value: unknown): string {
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${MARK}${v.toString()}` : v));
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}
