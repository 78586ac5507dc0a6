/**
 * Sealing of files the server keeps beside its blobs (the fop result cache, fops/cache/fop-cache.ts) with the
 * encryption at rest of the blob store (store/crypto/sealer.ts implements it; docs/reference/encryption.md).
 * Stored form: the encrypted blob format of store/crypto/envelope.ts, its own data key per file.
 */
import type { Transform } from 'node:stream';

export interface Sealer {
  /** Id (hex) of the master key files are sealed with. */
  readonly keyId: string;
  /** Bytes of the stored header, before the first sealed chunk. */
  readonly headerBytes: number;
  /** A whole small content sealed. */
  sealBuffer(plain: Buffer): Buffer;
  /** A stream sealing what is written to it (header, then chunks). */
  sealStream(): Transform;
  /** A whole stored file opened; throws (`code` 'EINTEGRITY') when it does not authenticate. */
  openBuffer(stored: Buffer): Buffer;
  /**
   * A stream opening the chunks that follow `header` (its first `headerBytes` stored bytes) to their end; throws
   * at once when the header does not open, fails the stream when a chunk does not authenticate.
   */
  openStream(header: Buffer): Transform;
  /** Stored bytes of `plain` bytes of content. */
  sealedSize(plain: number): number;
  /** Content bytes of a stored file of `stored` bytes; -1 when no sealed file has that size. */
  plainSize(stored: number): number;
}
