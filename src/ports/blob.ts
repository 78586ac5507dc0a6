/**
 * The BlobStore port: immutable byte blobs addressed by an opaque id. Object keys never reach it.
 * Implementations: the local file system (store/fs/, the embedded default) and an S3 bucket (store/s3/, cluster
 * mode); store/inline-blob-store.ts wraps either for small objects kept in the metadata.
 *
 * Life of a blob: `stage()` gives a writable sink in a staging area; `StagedBlob.seal()` makes the bytes durable
 * (fsync) and moves them into place under a fresh id; only then may metadata reference the id. A sealed blob
 * that no metadata came to reference is removed with `remove()`. A blob whose upload crashed between `seal()` and
 * its commit stays: it is reported as an orphan and removed only by `granary gc` (objects/blobs.ts), never because
 * the metadata does not mention it.
 */
import type { Readable, Writable } from 'node:stream';

/** A blob being written. Write to `sink`, then `seal()` or `discard()`. */
export interface StagedBlob {
  readonly sink: Writable;
  /**
   * Set by stagings that kept the content in memory (objects/spill-stage.ts) once the sink finished: the bytes to
   * commit inline with the entry (MetaStore.commitPut `inline`; store/inline-blob-store.ts). Undefined for files.
   */
  readonly inline?: Buffer;
  /** Flushes and fsyncs the bytes, moves them into place; resolves with the blob id once durable. */
  seal(): Promise<string>;
  /** Drops the staged bytes (idempotent, never throws). */
  discard(): Promise<void>;
}

/**
 * Checksums of a blob's bytes, computed as they were received: the CRC-32 (IEEE) of every `blockBytes` block,
 * big-endian u32s in order (the last block may be shorter). Kept in the MetaStore with the blob's reference and
 * checked on every read (objects/integrity.ts).
 */
export interface BlobSums {
  blockBytes: number;
  crc32: Buffer;
}

/** Integrity facts of one stored blob: size in bytes, checksums (absent for blobs stored before checksums), corrupt flag. */
export interface BlobState {
  id: string;
  size?: number;
  sums?: BlobSums;
  corrupt: boolean;
}

/** Byte range, inclusive `start`..`end`, in bytes. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface BlobStore {
  /**
   * Removes staging leftovers of processes that are gone (a crashed run, a killed worker): everything staged by
   * another process whose tag `liveTags` does not name (no `liveTags`: every other process counts as gone).
   * Called at start and by the reaper (workers/recovery.ts); returns how many leftovers it removed.
   */
  recover(liveTags?: () => Promise<ReadonlySet<string>>): Promise<number>;
  stage(): Promise<StagedBlob>;
  /** A stream of the blob's bytes (or of `range`). Fails with ENOENT when the blob is missing. */
  read(blobId: string, range?: ByteRange): Readable;
  /** Reads a small blob of known `size` bytes whole into memory (tiny objects only: callers check the size). */
  readSmall(blobId: string, size: number): Promise<Buffer>;
  /**
   * A local file holding the blob's bytes, for readers that need a path (ffmpeg, heif-convert). The embedded
   * store answers the blob file itself (release is a no-op); a remote store would download to a local cache.
   * Read-only. Fails with ENOENT when the blob is missing.
   */
  localFile(blobId: string): Promise<{ path: string; release(): Promise<void> }>;
  /**
   * Encryption at rest (store/crypto/encrypting-blob-store.ts): the bytes to store for inline content `plain`
   * (MetaStore.commitPut `inline`). Absent: inline content is stored as it is.
   */
  sealInline?(plain: Buffer): Buffer;
  /**
   * The plaintext of inline bytes as stored (ObjectRecord.inline); throws an error with `code` 'EINTEGRITY' when
   * they do not authenticate. Absent: stored bytes are the plaintext.
   */
  openInline?(stored: Buffer): Buffer;
  /**
   * Overwrites the first `head.length` bytes of a stored blob in place and makes them durable (the master-key
   * rotation re-wrapping an encrypted blob's fixed-size header; store/crypto/rotate.ts). Absent where stored bytes
   * cannot be changed in place (an S3 bucket). Fails with ENOENT when the blob is missing.
   */
  rewriteHead?(blobId: string, head: Buffer): Promise<void>;
  /** Deletes a blob; a missing blob is not an error. */
  remove(blobId: string): Promise<void>;
  /** Lists every blob id with its modification time in ms (the orphan report and `granary gc`). */
  list(): AsyncIterable<{ id: string; mtimeMs: number }>;
  /**
   * Whether the blob's stored bytes are in the encrypted format (encryption at rest, store/crypto/); only an
   * encrypting store has it (absent: nothing is encrypted). Rejects when the blob cannot be read.
   */
  encryptedAtRest?(blobId: string): Promise<boolean>;

  /**
   * The deployment marker: a small text (JSON, store/deployment.ts) written once at the first start, beside the
   * blobs and never among them (`list()` never yields it). Undefined when the store has none.
   */
  readMarker(): Promise<string | undefined>;
  /** Writes the deployment marker durably (replacing any), before the store holds a blob of this deployment. */
  writeMarker(text: string): Promise<void>;
  /**
   * Fails every call to a remote store in flight at once, and every later one (a stop past GRANARY_STOP_TIMEOUT:
   * the requests waiting on them answer instead of holding the stop). Absent for the local disk.
   */
  abort?(): void;
  /** Releases connections and timers (remote stores); the store is not used afterwards. */
  close?(): Promise<void>;
}
