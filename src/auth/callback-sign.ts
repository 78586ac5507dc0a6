/**
 * Signing of upload callbacks, server → application (docs/development/kodo-protocol.md §2.6, §4.3).
 */
import { FORM_TYPE, JSON_TYPE, mediaType } from './headers.js';
import { hmacSign } from './base64.js';

/**
 * Returns the `Authorization` value for a callback POST: `QBox <ak>:<sign>` where `sign` is
 * `urlsafe_b64(HMAC-SHA1(secretKey, <path>[?<query>] + "\n" + <body>))` and path/query are those of the WHATWG
 * parse of `url` (as `qiniu.util.isQiniuCallback` computes them).
 *
 * The body is included when `contentType`'s media type is `application/x-www-form-urlencoded` (documented) or
 * `application/json` (the Node SDK's verifier includes whatever body the app passes it; see §15); for any other
 * type the signed data ends after the `\n`. Throws `TypeError` when `url` is not an absolute URL.
 */
export function signCallback(
  accessKey: string,
  secretKey: string,
  url: string,
  body: string | Buffer,
  contentType: string,
): string {
  const u = new URL(url);
  const head = Buffer.from(`${u.pathname}${u.search}\n`, 'utf8');
  const type = mediaType(contentType);
  const data = type === FORM_TYPE || type === JSON_TYPE ? Buffer.concat([head, Buffer.from(body)]) : head;
  return `QBox ${accessKey}:${hmacSign(secretKey, data)}`;
}
