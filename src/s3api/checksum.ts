/**
 * Content checks of S3 request bodies as they stream (docs/development/kodo-protocol.md §18.4): the hex SHA-256 of
 * `x-amz-content-sha256` (XAmzContentSHA256Mismatch on a mismatch) and the additional checksums
 * `x-amz-checksum-crc32|crc32c|sha1|sha256` (base64 of the big-endian digest), sent as a header or as an
 * aws-chunked trailer (BadDigest on a mismatch, InvalidRequest for a malformed value). Both fail the stream at its
 * end, before anything is committed.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { crc32, crc32c } from '@node-rs/crc32';
import { S3Errors } from './errors.js';

/** The additional checksum algorithms (S3 names, lower case as in the header names). */
export const CHECKSUM_ALGORITHMS = ['crc32', 'crc32c', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** Base64 length of each algorithm's digest. */
const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { crc32: 4, crc32c: 4, sha1: 20, sha256: 32 };

/** Whether `name` is a checksum algorithm (lower case). */
export function isChecksumAlgorithm(name: string): name is ChecksumAlgorithm {
  return (CHECKSUM_ALGORITHMS as readonly string[]).includes(name);
}

/** Checks a received checksum value's form: base64 of the algorithm's digest size; InvalidRequest otherwise. */
export function checkChecksumForm(algorithm: ChecksumAlgorithm, value: string): void {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== DIGEST_BYTES[algorithm] || bytes.toString('base64') !== value) {
    throw S3Errors.InvalidRequest(`Value for x-amz-checksum-${algorithm} header is invalid.`);
  }
}

/** An incremental digest of one algorithm. */
class Digest {
  private crc = 0;
  private readonly hash: Hash | undefined;

  constructor(readonly algorithm: ChecksumAlgorithm) {
    if (algorithm === 'sha1' || algorithm === 'sha256') this.hash = createHash(algorithm);
  }

  update(buf: Buffer): void {
    if (this.hash) this.hash.update(buf);
    else this.crc = this.algorithm === 'crc32' ? crc32(buf, this.crc) : crc32c(buf, this.crc);
  }

  /** base64 of the big-endian digest, as S3 writes checksums. */
  base64(): string {
    if (this.hash) return this.hash.digest('base64');
    const out = Buffer.alloc(4);
    out.writeUInt32BE(this.crc >>> 0);
    return out.toString('base64');
  }
}

/** What the content must match: a hex SHA-256, and/or a checksum whose expected value may come from a trailer. */
export interface ContentChecks {
  /** Hex SHA-256 from `x-amz-content-sha256` (absent for UNSIGNED-PAYLOAD and the streaming modes). */
  sha256Hex?: string;
  /** The additional checksum; `expected()` is read at the end (a trailer is known only then). */
  checksum?: { algorithm: ChecksumAlgorithm; expected(): string | undefined };
}

/**
 * A pass-through stream checking `checks` over the bytes it passes; it fails at its end with
 * XAmzContentSHA256Mismatch or BadDigest. `verified` holds the checksum once the stream ended.
 */
export class ContentCheckStream extends Transform {
  /** The checksum verified (algorithm and base64 value), set at the end. */
  verified: { algorithm: ChecksumAlgorithm; value: string } | undefined;
  private readonly sha: Hash | undefined;
  private readonly digest: Digest | undefined;

  constructor(private readonly checks: ContentChecks) {
    super();
    if (checks.sha256Hex !== undefined) this.sha = createHash('sha256');
    if (checks.checksum) this.digest = new Digest(checks.checksum.algorithm);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.sha?.update(chunk);
    this.digest?.update(chunk);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.sha && this.sha.digest('hex') !== this.checks.sha256Hex?.toLowerCase()) {
      return done(S3Errors.XAmzContentSHA256Mismatch());
    }
    const want = this.checks.checksum;
    if (want && this.digest) {
      const expected = want.expected();
      if (expected === undefined) {
        return done(S3Errors.InvalidRequest(`The x-amz-checksum-${want.algorithm} trailer was announced but not sent.`));
      }
      const got = this.digest.base64();
      if (got !== expected) return done(S3Errors.BadDigest(`The ${want.algorithm.toUpperCase()} you specified did not match the calculated checksum.`));
      this.verified = { algorithm: want.algorithm, value: got };
    }
    done();
  }
}
