/**
 * Opening a resource named by a fop parameter as a stream (mkzip's URLs; docs/development/kodo-protocol.md
 * §10.9). The same rules as `fetchResource` (../resource.ts): a URL on this server naming an entry of the
 * source's bucket (path style under the public URL, or a download domain bound to that bucket) is read from
 * storage — private buckets too, no signature needed —, any other http(s) URL goes through the outbound guard.
 *
 * Errors (Kodo errors, raised before any byte is read): 400 bad URL, 403 guard refusal, 404 missing entry or
 * origin 404, 413 larger than `maxBytes`, 478 other origin failures, 504 origin time-out. A remote body longer
 * than `maxBytes` fails the stream itself; a stored entry whose bytes do not match their checksums fails its
 * stream or its whole read with 599 (objects/verified-read.ts).
 */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { outboundFailure } from '../../objects/fetch/fetch-to-entry.js';
import { checkSourceUrl } from '../../objects/fetch/source-url.js';
import { checkDownloadable, isLive } from '../../objects/read.js';
import { readObject, readObjectSmall } from '../../objects/verified-read.js';
import { outboundStream } from '../../outbound/client.js';
import type { BucketRecord } from '../../ports/meta.js';
import { localKeyOf } from '../resource.js';
import type { OpenedResource } from '../types.js';

/** putTime (100-ns units since the epoch) → a Date. */
const putTimeDate = (putTime: bigint): Date => new Date(Number(putTime / 10_000n));

/**
 * Opens the resource at `url` (see the module comment); `signal` aborts the open or the remote body. A stored
 * entry of at most `opts.wholeMax` bytes is answered with `read()` (one verified whole read, `readObjectSmall`,
 * done when called) rather than a stream: cheaper for small entries, and the caller holds at most that much.
 */
export async function openResource(
  g: Granary,
  bucket: BucketRecord,
  url: string,
  maxBytes: number,
  signal: AbortSignal,
  opts: { wholeMax?: number } = {},
): Promise<OpenedResource> {
  signal.throwIfAborted();
  const u = checkSourceUrl(url);
  const key = localKeyOf(g, bucket, u);
  if (key !== undefined && key !== '') {
    const found = await g.meta.getObject(bucket.name, key);
    if (!isLive(g, found)) throw Errors.notFound(`${url}: no such entry in bucket ${bucket.name}`);
    const rec = checkDownloadable(g, found);
    if (rec.fsize > maxBytes) throw Errors.originTooLarge(`${url}: ${rec.fsize} bytes, the limit is ${maxBytes}`);
    const mtime = putTimeDate(rec.putTime);
    if (opts.wholeMax !== undefined && rec.fsize <= opts.wholeMax) return { read: () => readObjectSmall(g, rec), key, size: rec.fsize, mtime };
    return { stream: readObject(g, rec), key, size: rec.fsize, mtime };
  }
  let res;
  try {
    res = await outboundStream({
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
  if (res.status !== 200) {
    res.stream.destroy();
    if (res.status === 404) throw Errors.notFound(`${url}: the origin answered 404`);
    throw Errors.originFailed(`${url}: the origin answered ${res.status}`);
  }
  const length = Number(res.headers['content-length']);
  const modified = Date.parse(String(res.headers['last-modified'] ?? ''));
  return {
    stream: res.stream,
    ...(Number.isSafeInteger(length) && length >= 0 ? { size: length } : {}),
    mtime: Number.isFinite(modified) ? new Date(modified) : new Date(),
  };
}
