/**
 * The Kodo etag ("qetag", the `hash` field) and the other digests of an upload, computed while streaming
 * (docs/development/kodo-protocol.md §7). Memory is bounded: one SHA-1 state per 4 MiB block, never the block itself.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { urlsafeB64Decode, urlsafeB64Encode } from '../auth/base64.js';
import { Errors } from '../errors.js';
import type { BlobSums } from '../ports/blob.js';
import { crc32OfSums, SumBuilder } from './integrity.js';

/** Kodo block size: 4 MiB. */
export const BLOCK_SIZE = 4 * 1024 * 1024;
/** Bytes of the content kept for MIME sniffing. */
export const HEAD_BYTES = 4100;

/** Folds the SHA-1 digests of the 4 MiB blocks into the etag: 0x16‖sha1 for one block, 0x96‖sha1(sha1s) otherwise. */
export function etagFromBlockDigests(digests: Buffer[]): string {
  if (digests.length <= 1) {
    const d = digests[0] ?? createHash('sha1').digest();
    return urlsafeB64Encode(Buffer.concat([Buffer.from([0x16]), d]));
  }
  const outer = createHash('sha1');
  for (const d of digests) outer.update(d);
  return urlsafeB64Encode(Buffer.concat([Buffer.from([0x96]), outer.digest()]));
}

/**
 * Digests of a finished stream. `size` bytes; `md5` lower-case hex ('' when not computed); `crc32` unsigned
 * CRC-32 (IEEE) of the whole content, combined from the per-block checksums (`crc32OfSums`).
 */
export interface Digests {
  size: number;
  etag: string;
  md5: string;
  crc32: number;
  /** The first HEAD_BYTES bytes (fewer for small content), for MIME sniffing. */
  head: Buffer;
  /** Per-block CRC-32s, stored with the blob and checked on every read (integrity.ts). */
  sums: BlobSums;
  /** SHA-1 of every 4 MiB block in order (one, of nothing, for empty content): the etag's inputs. */
  blockSha1s: Buffer[];
}

/**
 * A pass-through Transform that computes etag, MD5, CRC-32 and size of what flows through it.
 * With `maxBytes`, more bytes than that fail the stream with `Errors.objectTooLarge` (413).
 * It also keeps a CRC-32 per 256 KiB block (`sums`), stored with the blob and checked on every read.
 * Read `digests()` after the stream has finished.
 */
export interface DigestChoice {
  /** Compute the MD5 (default true). v1 chunks skip it: nothing reads a chunk's MD5 (710 MB/s here: ~1.5 ms/MiB). */
  md5?: boolean;
}

export class DigestingStream extends Transform {
  private readonly md5: Hash | undefined;
  private block: Hash = createHash('sha1');
  private blockFill = 0;
  private readonly blockDigests: Buffer[] = [];
  private size = 0;
  private readonly headParts: Buffer[] = [];
  private readonly sums = new SumBuilder();
  private headLen = 0;
  private result: Digests | undefined;

  /**
   * `before`: awaited before the first byte is taken (a refusal fails the stream with its error); `choice`: which
   * optional digests to compute (all by default).
   */
  constructor(
    private readonly maxBytes = Number.POSITIVE_INFINITY,
    private readonly before?: () => Promise<void>,
    choice: DigestChoice = {},
  ) {
    super();
    this.md5 = choice.md5 === false ? undefined : createHash('md5');
  }

  override _construct(cb: (err?: Error | null) => void): void {
    if (!this.before) return cb();
    this.before().then(() => cb(), cb);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      cb(Errors.objectTooLarge(`more than ${this.maxBytes} bytes`));
      return;
    }
    this.md5?.update(chunk);
    this.sums.update(chunk);
    if (this.headLen < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headLen);
      this.headParts.push(Buffer.from(part));
      this.headLen += part.length;
    }
    let off = 0;
    while (off < chunk.length) {
      const take = Math.min(BLOCK_SIZE - this.blockFill, chunk.length - off);
      this.block.update(chunk.subarray(off, off + take));
      this.blockFill += take;
      off += take;
      if (this.blockFill === BLOCK_SIZE) {
        this.blockDigests.push(this.block.digest());
        this.block = createHash('sha1');
        this.blockFill = 0;
      }
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    if (this.blockFill > 0 || this.blockDigests.length === 0) this.blockDigests.push(this.block.digest());
    const sums = this.sums.finish();
    this.result = {
      size: this.size,
      etag: etagFromBlockDigests(this.blockDigests),
      md5: this.md5?.digest('hex') ?? '',
      crc32: crc32OfSums(sums, this.size),
      head: Buffer.concat(this.headParts),
      sums,
      blockSha1s: this.blockDigests,
    };
    cb();
  }

  /** The digests; throws if the stream has not finished. */
  digests(): Digests {
    if (!this.result) throw new Error('DigestingStream: digests() before the stream finished');
    return this.result;
  }
}

/**
 * Etag of a v2 multipart object whose non-last parts are not all 4 MiB (docs/development/kodo-protocol.md §7): the 20-byte tails of
 * the parts' own etags, concatenated, SHA-1'd, prefixed with 0x9e. Parts are given by their etags, in order.
 */
export function etagV2(partEtags: string[]): string {
  const outer = createHash('sha1');
  for (const e of partEtags) outer.update(urlsafeB64Decode(e).subarray(1));
  return urlsafeB64Encode(Buffer.concat([Buffer.from([0x9e]), outer.digest()]));
}
