/**
 * Resources named by fop parameters (watermark images, docs/development/kodo-protocol.md §10.5; `wmImage` of avthumb, §10.7).
 *
 * - A URL on this server naming an entry of the source's own bucket (path style under the public URL, or a
 *   download domain bound to that bucket) is read from storage directly: no network, no signature needed,
 *   since the caller may already read that bucket.
 * - Any other http(s) URL is fetched through the outbound guard (private and loopback addresses refused unless
 *   GRANARY_OUTBOUND_ALLOW admits them), at most `maxBytes` bytes, within GRANARY_FETCH_TIMEOUT.
 *
 * Errors: 400 bad URL, 403 guard refusal, 404 missing entry or origin 404, 478 other origin failures,
 * 413 over `maxBytes`, 504 time-out.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { outboundFailure } from '../objects/fetch/fetch-to-entry.js';
import { checkSourceUrl } from '../objects/fetch/source-url.js';
import { outboundRequest } from '../outbound/client.js';
import { checkDownloadable, isLive } from '../objects/read.js';
import { readObjectSmall } from '../objects/verified-read.js';
import type { BucketRecord } from '../ports/meta.js';

/** The key of `bucket` that `u` names on this server, if it names one. */
export function localKeyOf(g: Granary, bucket: BucketRecord, u: URL): string | undefined {
  let path: string;
  try {
    path = decodeURIComponent(u.pathname);
  } catch {
    return undefined;
  }
  if (g.domains.bucketOfHost(u.host) === bucket.name) return path.slice(1);
  const base = g.publicUrl ? new URL(g.publicUrl) : undefined;
  if (base && base.host === u.host && path.startsWith(`/${bucket.name}/`)) return path.slice(bucket.name.length + 2);
  return undefined;
}

/**
 * The bytes of the resource at `url` (see the module comment). A local entry must be downloadable (not expired,
 * disabled, frozen in archive or corrupt: the same checks as a download). `signal` aborts the read or fetch (the
 * run's time limit or a shutdown).
 */
export async function fetchResource(g: Granary, bucket: BucketRecord, url: string, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  signal.throwIfAborted();
  const u = checkSourceUrl(url);
  const key = localKeyOf(g, bucket, u);
  if (key !== undefined && key !== '') {
    const found = await g.meta.getObject(bucket.name, key);
    if (!isLive(g, found)) throw Errors.notFound(`${url}: no such entry in bucket ${bucket.name}`);
    const rec = checkDownloadable(g, found);
    if (rec.fsize > maxBytes) throw Errors.originTooLarge(`${url}: ${rec.fsize} bytes, the limit is ${maxBytes}`);
    const bytes = await readObjectSmall(g, rec);
    signal.throwIfAborted();
    return bytes;
  }
  let res;
  try {
    res = await outboundRequest({
      url: u.href,
      policy: g.outbound,
      timeoutMs: g.config.fetchTimeoutSeconds * 1000,
      maxBodyBytes: maxBytes,
      maxRedirects: 3,
      signal,
    });
  } catch (err) {
    throw outboundFailure(err, url);
  }
  if (res.status === 404) throw Errors.notFound(`${url}: the origin answered 404`);
  if (res.status !== 200) throw Errors.originFailed(`${url}: the origin answered ${res.status}`);
  return res.body;
}
