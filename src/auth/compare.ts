/**
 * Constant-time comparison of secrets and signatures (protocol.md §2.3 "Recommended server verification").
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
 * harmless encoding variants protocol.md §0 asks servers to accept: standard `+`/`/` alphabet and missing `=`.
 */
export function sameSignature(received: string, expected: string): boolean {
  const norm = (s: string): string => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return safeEqual(norm(received), norm(expected));
}
