/**
 * Getting one object from a remote (docs/development/kodo-protocol.md §11) through a signed download URL (§2.5, so private buckets work).
 *
 * To a local file: the bytes go to a hidden temp name beside the target (`.<name>.<hash>.granary-part`), which a
 * later run resumes with a `Range` request; the whole file's etag (§7) must equal the entry's `hash` before it is
 * renamed to the target. Nothing half-written ever carries the target's name. Entries whose hash is not a plain
 * qetag (v2 multipart `n…` etags) are checked by size only.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { KodoClient, KodoEntry } from './client.js';
import { TransferError } from './errors.js';
import { EtagHasher, isQetag } from './local-etag.js';
import { throttled, type RateLimiter } from './throttle.js';

/** Settings of downloads. */
export interface DownloadOptions {
  limiter?: RateLimiter;
  onBytes?: (n: number) => void;
  /** Called with the bytes of a partial file a resumed download keeps (not fetched again). */
  onSkipped?: (n: number) => void;
  /** Download domain to use instead of the bucket's own (`--domain`). */
  domain?: string;
}

/** Suffix of temp files (the local walker skips them). */
export const PART_SUFFIX = '.granary-part';

/** Opens the bytes of `bucket:key` from `start` (a web response body as a Node stream). */
export async function openObject(client: KodoClient, bucket: string, key: string, opts: { start?: number; domain?: string } = {}): Promise<{ status: number; body: Readable }> {
  const url = await client.downloadUrl(bucket, key, 3600, opts.domain);
  let res: Response;
  try {
    res = await fetch(url, { headers: opts.start ? { range: `bytes=${opts.start}-` } : {} });
  } catch (err) {
    const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
    throw new TransferError(`remote ${client.name}: download of ${bucket}:${key} failed (${cause})`);
  }
  if (res.status !== 200 && res.status !== 206) {
    const text = await res.text().catch(() => '');
    throw new TransferError(`remote ${client.name}: download of ${bucket}:${key} answered ${res.status} ${text.slice(0, 200).trim()}`, res.status);
  }
  if (!res.body) throw new TransferError(`remote ${client.name}: download of ${bucket}:${key} has no body`);
  return { status: res.status, body: Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>) };
}

/** The temp name used while downloading `entry` to `target`. */
export function partName(target: string, entry: KodoEntry): string {
  return join(dirname(target), `.${basename(target)}.${entry.hash.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 16)}${PART_SUFFIX}`);
}

/** Downloads `entry` of `bucket` to the local file `target`, resuming and verifying (see the module comment). */
export async function downloadToFile(client: KodoClient, bucket: string, entry: KodoEntry, target: string, opts: DownloadOptions = {}): Promise<void> {
  await mkdir(dirname(target), { recursive: true });
  const part = partName(target, entry);
  const hasher = new EtagHasher();
  let have = await stat(part).then(
    (st) => st.size,
    () => 0,
  );
  if (have > entry.fsize) {
    await rm(part, { force: true });
    have = 0;
  }
  if (have > 0) {
    for await (const chunk of createReadStream(part)) hasher.update(chunk as Buffer);
    opts.onSkipped?.(have);
  }
  if (have < entry.fsize || entry.fsize === 0) {
    const { status, body } = await openObject(client, bucket, entry.key, { start: have, domain: opts.domain });
    if (have > 0 && status !== 206) {
      // The server ignored the range: start over.
      opts.onSkipped?.(-have);
      await rm(part, { force: true });
      return downloadToFile(client, bucket, entry, target, opts);
    }
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hasher.update(chunk);
        opts.onBytes?.(chunk.length);
        cb(null, chunk);
      },
    });
    await pipeline(body, throttled(opts.limiter), tap, createWriteStream(part, { flags: have > 0 ? 'a' : 'w' }));
  }
  const what = `remote ${client.name}, ${bucket}:${entry.key}`;
  if (hasher.size !== entry.fsize) {
    await rm(part, { force: true });
    throw new TransferError(`${what}: got ${hasher.size} bytes, expected ${entry.fsize}`);
  }
  if (isQetag(entry.hash) && hasher.etag() !== entry.hash) {
    await rm(part, { force: true });
    throw new TransferError(`${what}: etag mismatch after download (remote ${entry.hash}, local ${hasher.etag()})`);
  }
  await rename(part, target);
}
