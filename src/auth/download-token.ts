/**
 * Private download URLs (docs/development/kodo-protocol.md §2.5): `<url1>&token=<AK>:<urlsafe_b64(HMAC-SHA1(SK, url1))>` where `url1`
 * is the full URL (scheme, host, raw path and query) ending in `e=<deadline seconds>`.
 */
import { Errors } from '../errors.js';
import { hmacSign } from './base64.js';
import { sameSignature } from './compare.js';
import { firstListItem, type HeaderMap, headerValue } from './headers.js';
import type { SecretLookup } from './management.js';

/** What the verifier needs from a download request (no framework types). */
export interface DownloadRequest {
  /** Request-target exactly as received: raw path + `?` + raw query (never re-encoded). */
  rawUrl: string;
  /** Node `IncomingHttpHeaders`: lower-case names; includes `host`. */
  headers: HeaderMap;
}

const TOKEN_PARAM = '&token=';

/**
 * Verifies the `token` of a private download URL and returns its AccessKey.
 *
 * `token` must be the last query parameter. The signed string is `<scheme>://<host>` + the raw request-target up
 * to (not including) `&token=`, tried with scheme `http`, `https` and `X-Forwarded-Proto`, and host `Host` and
 * `X-Forwarded-Host` (first list item); compared in constant time. Then the last `e` parameter (Unix seconds) of
 * the signed part must be present and `>= nowSeconds`.
 *
 * Throws (KodoError): 401 `badDownloadToken` when the token is missing, not last, malformed, names an unknown
 * AccessKey or does not match; 401 `downloadTokenExpired` when `e` is absent, not an integer, or in the past.
 */
export function verifyPrivateDownload(
  req: DownloadRequest,
  secretOf: SecretLookup,
  nowSeconds: number,
): { accessKey: string } {
  const { rawUrl, headers } = req;
  const cut = rawUrl.lastIndexOf(TOKEN_PARAM);
  if (cut < 0 || !rawUrl.slice(0, cut).includes('?')) throw Errors.badDownloadToken('missing token');
  const rawToken = rawUrl.slice(cut + TOKEN_PARAM.length);
  if (rawToken.includes('&')) throw Errors.badDownloadToken('token must be the last query parameter');
  const credential = splitCredential(rawToken);
  if (!credential) throw Errors.badDownloadToken('malformed token');
  const { accessKey, sign } = credential;

  const secret = secretOf(accessKey);
  if (secret === undefined) throw Errors.badDownloadToken('unknown access key');
  const signedTarget = rawUrl.slice(0, cut);
  if (!origins(headers).some((origin) => sameSignature(sign, hmacSign(secret, origin + signedTarget)))) {
    throw Errors.badDownloadToken('signature mismatch');
  }

  const e = lastQueryParam(signedTarget, 'e');
  if (e === undefined || !/^\d+$/.test(e) || Number(e) < nowSeconds) throw Errors.downloadTokenExpired();
  return { accessKey };
}

/** Every `<scheme>://<host>` the client may have signed: {http, https, X-Forwarded-Proto} × {Host, X-Forwarded-Host}.
 */
function origins(headers: HeaderMap): string[] {
  const proto = firstListItem(headerValue(headers, 'x-forwarded-proto'))?.toLowerCase();
  const schemes = new Set(['http', 'https', ...(proto && /^[a-z][a-z0-9+.-]*$/.test(proto) ? [proto] : [])]);
  const hosts = new Set(
    [headerValue(headers, 'host'), firstListItem(headerValue(headers, 'x-forwarded-host'))].filter(
      (h): h is string => !!h,
    ),
  );
  const out: string[] = [];
  for (const scheme of schemes) for (const host of hosts) out.push(`${scheme}://${host}`);
  return out;
}

/** Value of the last `name=` parameter of the target's raw query (not decoded), or undefined. */
function lastQueryParam(target: string, name: string): string | undefined {
  const query = target.slice(target.indexOf('?') + 1).split('&');
  for (let i = query.length - 1; i >= 0; i--) {
    const param = query[i]!;
    if (param.startsWith(`${name}=`)) return param.slice(name.length + 1);
  }
  return undefined;
}

/**
 * Splits a URL credential `<AccessKey>:<sign>` (percent-decoded first when it was escaped, `ak%3Asign`), as in
 * `token=` of private download URLs (§2.5) and `/sign/` of sync saveas (§2.7); undefined when malformed.
 */
export function splitCredential(raw: string): { accessKey: string; sign: string } | undefined {
  const text = decodeLenient(raw);
  const colon = text.indexOf(':');
  if (colon <= 0 || colon === text.length - 1) return undefined;
  return { accessKey: text.slice(0, colon), sign: text.slice(colon + 1) };
}

/** Percent-decodes a value when it was escaped; otherwise returns it unchanged. */
function decodeLenient(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
