/**
 * The signature of a sync `saveas` on a download URL (docs/development/kodo-protocol.md §2.7, §10.7):
 *
 * ```
 * signed = <host> + <raw path> + "?" + <raw query up to, not including, "/sign/">
 * url    = <scheme>://<signed> + "/sign/" + <AK> ":" + urlsafe_b64(HMAC-SHA1(SK, signed)) [ "&e=…&token=…" ]
 * ```
 *
 * Unlike a private download token (§2.5) the scheme is NOT signed. The signature covers the request-target as
 * sent; Qiniu's docs note that some HTTP libraries turn `|` into `%7C` after the URL was signed, so a signature
 * over the same text with `%7C` read as `|` is accepted too.
 */
import { Errors } from '../errors.js';
import { hmacSign } from './base64.js';
import { sameSignature } from './compare.js';
import { splitCredential, type DownloadRequest } from './download-token.js';
import { firstListItem, headerValue } from './headers.js';
import type { SecretLookup } from './management.js';

const SIGN_MARK = '/sign/';

/**
 * Verifies the `/sign/<AK>:<sign>` of a sync saveas and returns its AccessKey.
 *
 * The credential is the text after the LAST `/sign/` of the query, up to the next `&` (or the end), percent-decoded
 * when escaped. The signed string is `<host>` + the raw request-target up to that `/sign/`, tried with the `Host`
 * and `X-Forwarded-Host` (first list item) headers, and each also with `%7C` read as `|`; compared in constant time
 * (`sameSignature`).
 *
 * Throws (KodoError) 401 `badSaveasSign`: no `/sign/` in the query, a malformed credential, an unknown AccessKey, or
 * no candidate matches.
 */
export function verifySaveasSign(req: DownloadRequest, secretOf: SecretLookup): { accessKey: string } {
  const { rawUrl, headers } = req;
  const q = rawUrl.indexOf('?');
  const cut = rawUrl.lastIndexOf(SIGN_MARK);
  if (q < 0 || cut < q) throw Errors.badSaveasSign('missing /sign/<AccessKey>:<sign>');
  const rest = rawUrl.slice(cut + SIGN_MARK.length);
  const amp = rest.indexOf('&');
  const credential = splitCredential(amp < 0 ? rest : rest.slice(0, amp));
  if (!credential) throw Errors.badSaveasSign('malformed sign, expected <AccessKey>:<sign>');
  const { accessKey, sign } = credential;
  const secret = secretOf(accessKey);
  if (secret === undefined) throw Errors.badSaveasSign('unknown access key');

  const target = rawUrl.slice(0, cut);
  const targets = new Set([target, target.replace(/%7c/gi, '|')]);
  const hosts = new Set(
    [headerValue(headers, 'host'), firstListItem(headerValue(headers, 'x-forwarded-host'))].filter((h): h is string => !!h),
  );
  let ok = false;
  // Every candidate is compared (no early exit), each in constant time.
  for (const host of hosts) for (const t of targets) ok = sameSignature(sign, hmacSign(secret, host + t)) || ok;
  if (!ok) throw Errors.badSaveasSign('signature mismatch');
  return { accessKey };
}
