/**
 * Content checks of S3 request bodies as they stream (docs/development/kodo-protocol.md §18.4): the hex SHA-256 of
 * `x-amz-content-sha256` (XAmzContentSHA256Mismatch on a mismatch) and the additional checksums
 * `x-amz-checksum-crc32|crc32c|crc64nvme|sha1|sha256` (base64 of the big-endian digest; AWS S3 User Guide
 * "Checking object integrity"), sent as a header or as an aws-chunked trailer (BadDigest on a mismatch or a value
 * that is not a digest of the algorithm's size, as Ceph's s3-tests expect). Both fail the stream at its end,
 * before anything is committed.
 *
 * CRC-32 is the AWS SDKs' default. The upload path computes the content's CRC-32 anyway (objects/integrity.ts, the
 * bitrot checksums), so an operation that stores the body through `receiveBody` may take the CRC-32 check over
 * (`deferCrc32`): the stream then skips its own pass, and the operation verifies the value the upload path computed
 * (`ContentCheckStream.settle`). CRC-64/NVME is the AWS SDK's own implementation (`@aws-sdk/checksums`).
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { Crc64Nvme } from '@aws-sdk/checksums/crc';
import { crc32, crc32c } from '@node-rs/crc32';
import { S3Errors } from './errors.js';

/** The additional checksum algorithms (S3 names, lower case as in the header names). */
export const CHECKSUM_ALGORITHMS = ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** Bytes of each algorithm's digest. */
export const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { crc32: 4, crc32c: 4, crc64nvme: 8, sha1: 20, sha256: 32 };

/** Whether `name` is a checksum algorithm (lower case). */
export function isChecksumAlgorithm(name: string): name is ChecksumAlgorithm {
  return (CHECKSUM_ALGORITHMS as readonly string[]).includes(name);
}

/** Whether `value` is base64 of a digest of `algorithm`'s size. */
export function isChecksumValue(algorithm: ChecksumAlgorithm, value: string): boolean {
  const bytes = Buffer.from(value, 'base64');
  return bytes.length === DIGEST_BYTES[algorithm] && bytes.toString('base64') === value;
}

/** Checks a received checksum value's form: base64 of the algorithm's digest size; BadDigest otherwise. */
export function checkChecksumForm(algorithm: ChecksumAlgorithm, value: string): void {
  if (!isChecksumValue(algorithm, value)) {
    throw S3Errors.BadDigest(`Value for x-amz-checksum-${algorithm} header is invalid.`);
  }
}

/** base64 of a 32-bit CRC, big-endian, as S3 writes it. */
export function crc32Base64(crc: number): string {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc >>> 0);
  return out.toString('base64');
}

/** An incremental digest of one algorithm. */
export class Digest {
  private crc = 0;
  private readonly hash: Hash | undefined;
  private readonly crc64: Crc64Nvme | undefined;

  constructor(readonly algorithm: ChecksumAlgorithm) {
    if (algorithm === 'sha1' || algorithm === 'sha256') this.hash = createHash(algorithm);
    else if (algorithm === 'crc64nvme') this.crc64 = new Crc64Nvme();
  }

  update(buf: Buffer): void {
    if (this.hash) this.hash.update(buf);
    else if (this.crc64) this.crc64.update(buf);
    else this.crc = this.algorithm === 'crc32' ? crc32(buf, this.crc) : crc32c(buf, this.crc);
  }

  /** The digest, big-endian bytes. */
  async bytes(): Promise<Buffer> {
    if (this.hash) return this.hash.digest();
    if (this.crc64) return Buffer.from(await this.crc64.digest());
    return Buffer.from(crc32Base64(this.crc), 'base64');
  }

  /** base64 of the big-endian digest, as S3 writes checksums. */
  async base64(): Promise<string> {
    return (await this.bytes()).toString('base64');
  }
}

/** The digest of `algorithm` over one buffer (small inputs: composite checksums), big-endian bytes. */
export async function digestOf(algorithm: ChecksumAlgorithm, data: Buffer): Promise<Buffer> {
  const d = new Digest(algorithm);
  d.update(data);
  return d.bytes();
}

/** What the content must match: a hex SHA-256, and/or a checksum whose expected value may come from a trailer. */
export interface ContentChecks {
  /** Hex SHA-256 from `x-amz-content-sha256` (absent for UNSIGNED-PAYLOAD and the streaming modes). */
  sha256Hex?: string;
  /** The additional checksum; `expected()` is read at the end (a trailer is known only then). */
  checksum?: { algorithm: ChecksumAlgorithm; expected(): string | undefined };
}

/** A verified checksum: algorithm and base64 value. */
export interface VerifiedChecksum {
  algorithm: ChecksumAlgorithm;
  value: string;
}

/**
 * A pass-through stream checking `checks` over the bytes it passes; it fails at its end with
 * XAmzContentSHA256Mismatch or BadDigest. `settle()` answers the checksum once the stream ended. With `deferCrc32`
 * (set before the first byte) a CRC-32 checksum is not computed here: `settle(crc32)` compares the expected value
 * with the CRC-32 the caller computed over the same bytes.
 */
export class ContentCheckStream extends Transform {
  /** Set by the consumer that computes the content's CRC-32 itself (see the class comment). */
  deferCrc32 = false;
  private verified: VerifiedChecksum | undefined;
  private pending: VerifiedChecksum | undefined;
  private readonly sha: Hash | undefined;
  private digest: Digest | undefined;
  private started = false;

  constructor(private readonly checks: ContentChecks) {
    super();
    if (checks.sha256Hex !== undefined) this.sha = createHash('sha256');
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (!this.started) this.start();
    this.sha?.update(chunk);
    this.digest?.update(chunk);
    done(null, chunk);
  }

  private start(): void {
    this.started = true;
    const want = this.checks.checksum;
    if (want && !(want.algorithm === 'crc32' && this.deferCrc32)) this.digest = new Digest(want.algorithm);
  }

  override _flush(done: TransformCallback): void {
    if (!this.started) this.start();
    if (this.sha && this.sha.digest('hex') !== this.checks.sha256Hex?.toLowerCase()) {
      return done(S3Errors.XAmzContentSHA256Mismatch());
    }
    const want = this.checks.checksum;
    if (!want) return done();
    let expected: string | undefined;
    try {
      expected = want.expected();
    } catch (err) {
      return done(err as Error);
    }
    if (expected === undefined) {
      return done(S3Errors.InvalidRequest(`The x-amz-checksum-${want.algorithm} trailer was announced but not sent.`));
    }
    if (!this.digest) {
      this.pending = { algorithm: want.algorithm, value: expected };
      return done();
    }
    this.digest.base64().then((got) => {
      if (got !== expected) return done(mismatch(want.algorithm));
      this.verified = { algorithm: want.algorithm, value: got };
      done();
    }, done);
  }

  /**
   * The checksum the content matched, once the stream ended (undefined when none was sent). With a deferred
   * CRC-32, `crc32` is the content's CRC-32 as the caller computed it: BadDigest when it differs.
   */
  settle(crc32?: number): VerifiedChecksum | undefined {
    if (this.pending) {
      if (crc32 === undefined) throw new Error('a deferred CRC-32 checksum needs the content\'s CRC-32');
      if (crc32Base64(crc32) !== this.pending.value) throw mismatch('crc32');
      this.verified = this.pending;
      this.pending = undefined;
    }
    return this.verified;
  }
}

/** The BadDigest of a checksum mismatch. */
function mismatch(algorithm: ChecksumAlgorithm): Error {
  return S3Errors.BadDigest(`The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
}
