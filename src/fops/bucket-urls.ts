/**
 * URLs and files of entries of a fop's source bucket (docs/development/kodo-protocol.md §10.6): the download URL of
 * a key (HLS playlists name their segments by it), the key a URL on this server names, private download URLs
 * signed with the bucket owner's key pair (pm3u8), and local files of other entries (avconcat).
 */
import { hmacSign } from '../auth/base64.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { checkDownloadable, isLive } from '../objects/read.js';
import { localObjectFile } from '../objects/verified-read.js';
import type { BucketRecord } from '../ports/meta.js';
import { keyPath } from './key-path.js';
import { localKeyOf } from './resource.js';
import type { BucketUrls } from './types.js';

/**
 * The download URL of `key` in `bucket`: `http://<first bound domain>/<key>` when the bucket has a domain (Kodo's
 * own form), else `<GRANARY_PUBLIC_URL>/<bucket>/<key>` (path style, which every Granary listener answers).
 */
export async function downloadUrlOf(g: Granary, bucket: string, key: string): Promise<string> {
  const domains = await g.meta.domainsOf(bucket);
  const first = domains.map((d) => d.domain).sort()[0];
  if (first !== undefined) return `http://${first}/${keyPath(key)}`;
  return `${g.publicUrl}/${encodeURIComponent(bucket)}/${keyPath(key)}`;
}

/** The `BucketUrls` of a run on `bucket`. */
export function bucketUrls(g: Granary, bucket: BucketRecord): BucketUrls {
  return {
    urlOf: (b, key) => downloadUrlOf(g, b, key),
    keyOf: (u) => localKeyOf(g, bucket, u),
    sign: (url, deadline) => {
      const secret = g.secretOf(bucket.owner);
      if (secret === undefined) throw Errors.forbidden(`the key pair owning bucket ${bucket.name} no longer exists: cannot sign its URLs`);
      const unsigned = `${url}${url.includes('?') ? '&' : '?'}e=${deadline}`;
      return `${unsigned}&token=${bucket.owner}:${hmacSign(secret, unsigned)}`;
    },
  };
}

/**
 * A local file of the live entry `key` of `bucket` (404 when missing or expired, 403 disabled or archived, like a
 * download). Release it when the run ends.
 */
export async function bucketFileOf(g: Granary, bucket: BucketRecord, key: string): Promise<{ path: string; size: number; release(): Promise<void> }> {
  const found = await g.meta.getObject(bucket.name, key);
  if (!isLive(g, found)) throw Errors.notFound(`no such entry ${bucket.name}:${key}`);
  const rec = checkDownloadable(g, found);
  const local = await localObjectFile(g, rec);
  return { path: local.path, size: rec.fsize, release: () => local.release() };
}
