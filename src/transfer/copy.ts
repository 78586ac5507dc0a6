/**
 * Copying one object between remotes through this machine: the source's bytes (signed download URL) streamed
 * into an upload to the destination (form or multipart, upload.ts), keeping MIME type, `x-qn-meta-*` metadata
 * and the storage class (put policy `fileType`). The destination's answer must carry the source's etag. The
 * object's putTime is the time of the upload: the Kodo API has no way to set it.
 */
import { PassThrough } from 'node:stream';
import type { KodoClient, KodoEntry } from './client.js';
import { openObject } from './download.js';
import type { RateLimiter } from './throttle.js';
import { uploadObject } from './upload.js';
import type { PutResult } from './upload-types.js';

/** Attributes of `entry` to keep: its stat when it lacks metadata (listings may omit it). */
export async function fullEntry(client: KodoClient, bucket: string, entry: KodoEntry): Promise<KodoEntry> {
  if (entry['x-qn-meta'] !== undefined) return entry;
  return (await client.stat(bucket, entry.key)) ?? entry;
}

/** Streams `entry` of `src:srcBucket` to `dst:dstBucket/dstKey` (see the module comment). */
export async function streamCopy(
  src: KodoClient,
  srcBucket: string,
  entry: KodoEntry,
  dst: KodoClient,
  dstBucket: string,
  dstKey: string,
  opts: { limiter?: RateLimiter; onBytes?: (n: number) => void; domain?: string },
): Promise<PutResult> {
  const source = {
    size: entry.fsize,
    name: entry.key.slice(entry.key.lastIndexOf('/') + 1),
    open: () => {
      const out = new PassThrough({ highWaterMark: 1024 * 1024 });
      openObject(src, srcBucket, entry.key, opts.domain ? { domain: opts.domain } : {}).then(
        ({ body }) => {
          body.on('error', (err) => out.destroy(err));
          body.pipe(out);
        },
        (err: Error) => out.destroy(err),
      );
      return out;
    },
  };
  return uploadObject(
    dst,
    dstBucket,
    dstKey,
    source,
    { mimeType: entry.mimeType, meta: entry['x-qn-meta'] ?? {}, fileType: entry.type ?? 0 },
    { ...(opts.limiter ? { limiter: opts.limiter } : {}), ...(opts.onBytes ? { onBytes: opts.onBytes } : {}) },
  );
}
