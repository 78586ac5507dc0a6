/**
 * Constant-time comparison of secrets and signatures (docs/development/kodo-protocol.md §2.3 "Recommended server verification").
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when `a` and `b` are the same string, compared in constant time.
 * Both sides are hashed with SHA-256 first, so the compare always runs over 32 equal-length bytes and a length
 * mismatch leaks nothing beyond "not equal".
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb) && a === b;
}

/**
 * Constant-time comparison of a received URL-safe base64 signature with the expected one, tolerant of the
 * harmless encoding variants docs/development/kodo-protocol.md §0 asks servers to accept: standard `+`/`/` alphabet and missing `=`.
 * The expected side is a digest of public length (HMAC-SHA1: 27 characters without padding), so a length
 * mismatch may answer at once; equal lengths are compared with `timingSafeEqual` over the characters, without the
 * two SHA-256 passes `safeEqual` spends to hide the length of a secret (~4 µs per check).
 */
export function sameSignature(received: string, expected: string): boolean {
  const a = Buffer.from(normalizeSignature(received), 'utf8');
  const b = Buffer.from(normalizeSignature(expected), 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** URL-safe alphabet, no padding. */
function normalizeSignature(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 0x3d /* = */) end--;
  const t = end === s.length ? s : s.slice(0, end);
  return t.includes('+') || t.includes('/') ? t.replace(/\+/g, '-').replace(/\//g, '_') : t;
}
