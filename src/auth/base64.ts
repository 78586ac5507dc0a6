/**
 * URL-safe base64 and HMAC-SHA1 signing, the primitives of every Kodo signature (docs/development/kodo-protocol.md §0, §2.1).
 */
import { createHmac } from 'node:crypto';
import { Errors } from '../errors.js';

/** URL-safe base64 of `data`, padding `=` kept (the form the SDKs emit). */
export function urlsafeB64Encode(data: Buffer | string): string {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return buf.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

const B64_CHARS = /^[A-Za-z0-9\-_+/]*={0,2}$/;

/**
 * Decodes URL-safe or standard base64, padded or not (lenient on input, docs/development/kodo-protocol.md §0).
 * Throws `Errors.badBase64` (400) when the text is not base64.
 */
export function urlsafeB64Decode(text: string): Buffer {
  const t = text.trim();
  if (!B64_CHARS.test(t)) throw Errors.badBase64();
  const bare = t.replace(/=+$/, '');
  if (bare.length % 4 === 1) throw Errors.badBase64();
  return Buffer.from(bare.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/** Decodes URL-safe base64 into a UTF-8 string; throws `Errors.badBase64` (400) on bad base64 or bad UTF-8. */
export function urlsafeB64DecodeText(text: string): string {
  const buf = urlsafeB64Decode(text);
  const s = buf.toString('utf8');
  if (!Buffer.from(s, 'utf8').equals(buf)) throw Errors.badBase64('not UTF-8');
  return s;
}

/** `urlsafe_b64(HMAC-SHA1(secretKey, data))`: 28 characters including one `=` (docs/development/kodo-protocol.md §2.1). */
export function hmacSign(secretKey: string, data: Buffer | string): string {
  return urlsafeB64Encode(createHmac('sha1', secretKey).update(data).digest());
}
