/**
 * The one download sequence's shared steps, used by Kodo downloads (roles/io/download.ts,
 * docs/development/kodo-protocol.md §11) and S3 GetObject/HeadObject (s3api/ops/get-object.ts): which entry a read
 * of a key serves, the length headers of a whole or ranged answer, and its body — each door keeps only its own
 * wire (auth, conditions, headers, error shapes).
 */
import type { Readable } from 'node:stream';
import type { Granary } from '../context.js';
import type { ByteRange } from '../ports/blob.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { mirrorIfMissing } from './fetch/mirror.js';
import { checkDownloadable } from './read.js';
import { readObject, readObjectSmall, SMALL_OBJECT_BYTES } from './verified-read.js';

/**
 * The entry a download of `key` serves: `found` (the looked-up current entry, or undefined), or — on a miss in a
 * bucket with a mirror source — the origin's object pulled first (objects/fetch/mirror.ts, §8.6), then the download
 * checks of objects/read.ts `checkDownloadable` (612 missing or expired, 403 disabled, 403 unrestored archive).
 */
export async function servedEntry(g: Granary, bucket: BucketRecord, key: string, found: ObjectRecord | undefined): Promise<ObjectRecord> {
  return checkDownloadable(g, await mirrorIfMissing(g, bucket, key, found));
}

/**
 * `content-length` (bytes) of an answer, with `content-range` (`bytes <start>-<end>/<size>`) when it serves
 * `range` (inclusive byte offsets) of an entry of `size` bytes.
 */
export function lengthHeaders(size: number, range: ByteRange | undefined): Record<string, string> {
  if (!range) return { 'content-length': String(size) };
  return { 'content-range': `bytes ${range.start}-${range.end}/${size}`, 'content-length': String(range.end - range.start + 1) };
}

/**
 * The body of an answer: a whole entry of at most SMALL_OBJECT_BYTES (64 KiB) verified before any header goes out
 * and sent as one buffer; anything else streamed and verified block by block as it goes (objects/verified-read.ts:
 * a mismatch before the first byte is 599 `objectCorrupt`, later the transfer is cut).
 */
export async function answerBody(g: Granary, rec: ObjectRecord, range: ByteRange | undefined): Promise<Buffer | Readable> {
  if (!range && rec.fsize <= SMALL_OBJECT_BYTES) return readObjectSmall(g, rec);
  return readObject(g, rec, range);
}
