/**
 * Upload tokens (docs/development/kodo-protocol.md §2.4): `<AK>:<urlsafe_b64(HMAC-SHA1(SK, encodedPolicy))>:<encodedPolicy>`, carried
 * in the form field `token` or in `Authorization: UpToken <token>`.
 */
import { LRUCache } from 'lru-cache';
import { Errors } from '../errors.js';
import { hmacSign, urlsafeB64DecodeText } from './base64.js';
import { sameSignature } from './compare.js';
import type { SecretLookup } from './management.js';

/** A verified upload token. */
export interface UploadToken {
  accessKey: string;
  /** The policy exactly as it appeared in the token (URL-safe base64 text, the signed data). */
  encodedPolicy: string;
  /** The decoded put policy (a JSON object; fields are NOT validated here). */
  policy: Record<string, unknown>;
}

/**
 * Tokens that verified, by their whole text, with the secret they verified against: an application usually hands
 * one token to many uploads (valid until its deadline), and checking the signature and decoding the policy again
 * cost ~35 µs of a 4 KiB upload's ~650 µs. Only a text that verified is ever stored, a hit needs the very same
 * text and the same secret the access key has now (a removed or rotated key misses), and every other token pays
 * the full constant-time check.
 */
const verified = new LRUCache<string, { secret: string; token: UploadToken }>({ max: 4096 });

/** Freezes the decoded policy and what it holds: a cached token is shared by every upload that presents it. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Verifies an upload token and decodes its put policy. AK = text before the first `:`, encodedPolicy = text after
 * the last `:`, signature = the middle; the HMAC is checked over the encodedPolicy text (constant-time).
 * The `deadline` is NOT checked here (the put-policy code checks it when the upload commits).
 *
 * The result is frozen and may be shared with earlier calls that presented the same text (see `verified`).
 *
 * Throws (KodoError): 401 `tokenMissing` when `token` is undefined or blank; 401 `badToken` (with a short detail)
 * when it is malformed, names an unknown AccessKey, fails the signature check, or its policy is not base64 of a
 * JSON object.
 */
export function verifyUploadToken(token: string | undefined, secretOf: SecretLookup): UploadToken {
  const text = token?.trim();
  if (!text) throw Errors.tokenMissing();
  const first = text.indexOf(':');
  const last = text.lastIndexOf(':');
  if (first <= 0 || last === first || last === text.length - 1) throw Errors.badToken('malformed upload token');
  const accessKey = text.slice(0, first);
  const sign = text.slice(first + 1, last);
  const encodedPolicy = text.slice(last + 1);

  const secret = secretOf(accessKey);
  if (secret === undefined) throw Errors.badToken('unknown access key');
  const hit = verified.get(text);
  if (hit !== undefined && hit.secret === secret) return hit.token;
  if (!sameSignature(sign, hmacSign(secret, encodedPolicy))) throw Errors.badToken('signature mismatch');
  const result: UploadToken = deepFreeze({ accessKey, encodedPolicy, policy: decodePolicy(encodedPolicy) });
  verified.set(text, { secret, token: result });
  return result;
}

/** base64 → UTF-8 → JSON object; anything else is 401 `badToken`. */
function decodePolicy(encodedPolicy: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(urlsafeB64DecodeText(encodedPolicy));
  } catch {
    throw Errors.badToken('put policy is not base64-encoded JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw Errors.badToken('put policy is not a JSON object');
  }
  return value as Record<string, unknown>;
}

/**
 * Extracts the token from an `Authorization: UpToken <token>` header value (scheme matched case-insensitively).
 * Returns `undefined` when the header is absent or uses another scheme; never throws.
 */
export function upTokenFromAuthorization(header: string | undefined): string | undefined {
  const m = /^UpToken\s+(\S+)$/i.exec(header?.trim() ?? '');
  return m?.[1];
}
