/**
 * URLs and tokens the console hands to the browser, signed on the server with the signed-in account's own key pair
 * (looked up in the key index: the secret never reaches the page).
 *
 * - `downloadUrl`: a path-style download URL on the Kodo API listener (`publicBase`), `/<bucket>/<key>` with each
 *   key segment percent-encoded, an optional fop pipeline as the query (`?imageView2/2/w/96`), and for private
 *   buckets (or when `sign` is asked) `e=<deadline>&token=<AK>:<sign>` (docs/development/kodo-protocol.md §2.5).
 * - `uploadToken`: an upload token (docs/development/kodo-protocol.md §2.4) for `scope` (`bucket` or `bucket:key`), valid `seconds`.
 */
import { hmacSign, urlsafeB64Encode } from '../auth/base64.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';

/**
 * The base URL of the Kodo API listener as the browser showing the console can reach it: GRANARY_PUBLIC_URL when
 * set; otherwise the host name the browser used for the console (its `Host` header) with the Kodo API listener's
 * scheme and port (`g.publicUrl` defaults to 127.0.0.1, which a browser on another machine cannot reach).
 */
export function publicBase(g: Granary, consoleHost: string | undefined): string {
  if (g.config.publicUrl || !consoleHost) return g.publicUrl;
  const api = new URL(g.publicUrl);
  try {
    const seen = new URL(`http://${consoleHost}`);
    api.hostname = seen.hostname;
  } catch {
    return g.publicUrl;
  }
  return api.origin;
}

/** Seconds a thumbnail or preview URL minted for a page stays valid. */
export const PAGE_LINK_SECONDS = 3600;

/** `/<bucket>/<key>` with every segment percent-encoded (slashes of the key kept). */
export function objectPath(bucket: string, key: string): string {
  return `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** The secret of `accessKey`, or 401 when the pair was deleted meanwhile. */
function secretOf(g: Granary, accessKey: string): string {
  const secret = g.secretOf(accessKey);
  if (secret === undefined) throw Errors.consoleNoSession('the key pair no longer exists');
  return secret;
}

/**
 * A download URL of `bucket`/`key` on the Kodo API listener at `base` (see `publicBase`); `fop` a pipeline such as
 * `imageView2/2/w/96` (no `?`); signed with `accessKey`'s pair and valid `seconds` when `sign` is true.
 */
export function downloadUrl(
  g: Granary,
  accessKey: string,
  target: { bucket: string; key: string; fop?: string; attname?: string },
  opts: { sign: boolean; seconds: number; base: string },
): { url: string; deadline?: number } {
  const query: string[] = [];
  if (target.fop) query.push(target.fop);
  if (target.attname !== undefined) query.push(`attname=${encodeURIComponent(target.attname)}`);
  let url = opts.base + objectPath(target.bucket, target.key);
  if (!opts.sign) return { url: query.length > 0 ? `${url}?${query.join('&')}` : url };
  const deadline = nowSeconds(g.clock) + opts.seconds;
  query.push(`e=${deadline}`);
  url = `${url}?${query.join('&')}`;
  return { url: `${url}&token=${accessKey}:${hmacSign(secretOf(g, accessKey), url)}`, deadline };
}

/** An upload token for `scope` valid `seconds`, signed with `accessKey`'s pair (the bucket is authorised by the caller). */
export function uploadToken(g: Granary, accessKey: string, scope: string, seconds: number): string {
  const policy = urlsafeB64Encode(JSON.stringify({ scope, deadline: nowSeconds(g.clock) + seconds }));
  return `${accessKey}:${hmacSign(secretOf(g, accessKey), policy)}:${policy}`;
}
