/**
 * Server-side encryption as the S3 door speaks it (AWS S3 User Guide, "Protecting data with server-side
 * encryption": SSE-S3 and SSE-C; docs/reference/encryption.md). Every blob is encrypted at rest once
 * GRANARY_MASTER_KEY_FILE is set (store/crypto/); these headers say how an object is keyed and answered:
 *
 * - SSE-S3: `x-amz-server-side-encryption: AES256` on PutObject, PostObject (form field), CreateMultipartUpload,
 *   CopyObject, or the bucket's default (PutBucketEncryption, ops/bucket-encryption.ts), which uploads through the
 *   Kodo API get too. Kept as the entry's reserved metadata `@s3-sse` = `AES256`; answered back on PUT/GET/HEAD.
 *   `aws:kms` / `aws:kms:dsse` → NotImplemented (501: no KMS); another value → InvalidArgument (400).
 * - SSE-C: `x-amz-server-side-encryption-customer-algorithm: AES256`, `-customer-key` (base64 of 32 bytes) and
 *   `-customer-key-MD5` (base64 MD5 of the key). The key wraps the object's data key together with the master key
 *   (store/crypto/envelope.ts mode 1; handed to the blob layer through ports/customer-key.ts) and is never stored:
 *   `@s3-sse` keeps `C:<salt>:<HMAC-SHA256(salt, key)>` (base64) to check later requests. GET/HEAD without the key
 *   → 400 InvalidRequest, with another key → 403 AccessDenied, with a key on an object that has none → 400
 *   InvalidRequest; never bytes. CopyObject / UploadPartCopy give the source's key in
 *   `x-amz-copy-source-server-side-encryption-customer-*`.
 * - Without a master key, any encryption request → NotImplemented (501): nothing is ever claimed encrypted that
 *   is not. AWS requires HTTPS for SSE-C; Granary accepts it over plain HTTP too (TLS is usually a proxy's).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Granary } from '../context.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import type { S3Request } from './types.js';

export { SSE_META } from '../buckets/encryption.js';

/** What a request asks for. */
export type SseRequest = { kind: 'none' } | { kind: 'AES256' } | { kind: 'C'; key: Buffer; keyMd5: string };

/** Header names of SSE-C under `prefix` (`x-amz-` or `x-amz-copy-source-`). */
function customerHeaders(prefix: string): { algorithm: string; key: string; md5: string } {
  return {
    algorithm: `${prefix}server-side-encryption-customer-algorithm`,
    key: `${prefix}server-side-encryption-customer-key`,
    md5: `${prefix}server-side-encryption-customer-key-md5`,
  };
}

/** Refuses encryption requests when GRANARY_MASTER_KEY_FILE is not set (501). */
export function checkEncryptionConfigured(g: Granary): void {
  if (g.config.masterKeyFile === undefined && g.config.masterKey === undefined) {
    throw S3Errors.NotImplemented('Server-side encryption is not configured on this server (neither GRANARY_MASTER_KEY_FILE nor GRANARY_MASTER_KEY is set)');
  }
}

/** Parses SSE-C headers from `get(name)`; `{kind: 'none'}` when none is sent. Errors: InvalidArgument (400). */
function customerKeyOf(get: (name: string) => string | undefined, prefix: string): SseRequest {
  const h = customerHeaders(prefix);
  const algorithm = get(h.algorithm);
  const key = get(h.key);
  const md5 = get(h.md5);
  if (algorithm === undefined && key === undefined && md5 === undefined) return { kind: 'none' };
  if (algorithm === undefined) throw S3Errors.InvalidArgument('Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.');
  if (algorithm !== 'AES256') throw S3Errors.InvalidArgument('The encryption algorithm specified is not supported.');
  if (key === undefined || key === '') throw S3Errors.InvalidArgument('Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.');
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 32 || raw.toString('base64') !== key.trim()) throw S3Errors.InvalidArgument('The secret key was invalid for the specified algorithm.');
  if (md5 === undefined || md5 === '') throw S3Errors.InvalidArgument('Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.');
  const actual = createHash('md5').update(raw).digest('base64');
  if (actual !== md5.trim()) throw S3Errors.InvalidArgument('The calculated MD5 hash of the key did not match the hash that was provided.');
  return { kind: 'C', key: raw, keyMd5: actual };
}

/** The `x-amz-server-side-encryption` value asked for (AES256), or undefined. Errors: InvalidArgument, NotImplemented. */
function sseS3Of(value: string | undefined): 'AES256' | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v === 'AES256') return 'AES256';
  if (v === 'aws:kms' || v === 'aws:kms:dsse') throw S3Errors.NotImplemented('Server-side encryption with KMS keys (SSE-KMS) is not supported: use AES256 (SSE-S3) or SSE-C');
  throw S3Errors.InvalidArgument('The encryption method specified is not supported');
}

/**
 * The encryption a write asks for through headers (or `fields`, PostObject's form, lower-cased names). Errors:
 * InvalidArgument (400) for bad values or both kinds at once, NotImplemented (501) for KMS or when no master key
 * is configured.
 */
export function writeSse(g: Granary, req: S3Request, fields?: Record<string, string>): SseRequest {
  const get = (name: string): string | undefined => (fields ? fields[name] : headerOf(req, name));
  const s3 = sseS3Of(get('x-amz-server-side-encryption'));
  const c = customerKeyOf(get, 'x-amz-');
  if (s3 && c.kind === 'C') throw S3Errors.InvalidArgument('Server Side Encryption with Customer provided key is incompatible with the encryption method specified');
  const out: SseRequest = s3 ? { kind: 'AES256' } : c;
  if (out.kind !== 'none') checkEncryptionConfigured(g);
  return out;
}

/** The SSE-C key a read (GET/HEAD, UploadPart) or a copy's source (`copySource`) gives. Errors: InvalidArgument. */
export function readKey(req: S3Request, copySource = false): SseRequest {
  return customerKeyOf((name) => headerOf(req, name), copySource ? 'x-amz-copy-source-' : 'x-amz-');
}

/** The `@s3-sse` value recording `sse` (a salted HMAC for SSE-C, never the key), or undefined for none. */
export function sseMetaValue(sse: SseRequest): string | undefined {
  if (sse.kind === 'none') return undefined;
  if (sse.kind === 'AES256') return 'AES256';
  const salt = randomBytes(16);
  return `C:${salt.toString('base64')}:${createHmac('sha256', salt).update(sse.key).digest('base64')}`;
}

/** Whether `key` is the one a `C:` value was recorded with. */
function keyMatches(recorded: string, key: Buffer): boolean {
  const [, salt, mac] = recorded.split(':');
  if (salt === undefined || mac === undefined) return false;
  const want = Buffer.from(mac, 'base64');
  const got = createHmac('sha256', Buffer.from(salt, 'base64')).update(key).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

/**
 * Checks the SSE-C key `given` against an object's `@s3-sse` (`recorded`): resolves with the key to read with.
 * Errors: InvalidRequest (400) when the object needs a key none was given for, or a key is given for an object
 * without one; AccessDenied (403) for another key.
 */
export function checkReadKey(recorded: string | undefined, given: SseRequest): Buffer | undefined {
  const needs = recorded?.startsWith('C:') === true;
  if (!needs) {
    if (given.kind === 'C') throw S3Errors.InvalidRequest('The encryption parameters are not applicable to this object.');
    return undefined;
  }
  if (given.kind !== 'C') {
    throw S3Errors.InvalidRequest('The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.');
  }
  if (!keyMatches(recorded!, given.key)) throw S3Errors.AccessDenied('Access Denied');
  return given.key;
}

/** Answer headers naming an object's encryption (`recorded` = `@s3-sse`; `keyMd5` of the request's SSE-C key). */
export function sseHeaders(recorded: string | undefined, keyMd5?: string): Record<string, string> {
  if (recorded === 'AES256') return { 'x-amz-server-side-encryption': 'AES256' };
  if (recorded?.startsWith('C:') && keyMd5) {
    return { 'x-amz-server-side-encryption-customer-algorithm': 'AES256', 'x-amz-server-side-encryption-customer-key-md5': keyMd5 };
  }
  return {};
}

/** The key MD5 of a request's SSE-C key, for sseHeaders. */
export function keyMd5Of(sse: SseRequest): string | undefined {
  return sse.kind === 'C' ? sse.keyMd5 : undefined;
}
