/**
 * Encryption at rest in the blob layer (docs/reference/encryption.md): the BlobStore the server uses when
 * GRANARY_MASTER_KEY_FILE is set. It wraps the store of files and inline blobs (store/inline-blob-store.ts over the
 * disk or S3 store): every blob staged through it is written in the encrypted format of store/crypto/envelope.ts
 * (the disk, the S3 backend and the metadata database see only ciphertext), and every read gives plaintext back.
 *
 * Where the wrapped data key and the format version live: in a fixed-size header at the start of the blob, not in
 * the object's metadata record. So a blob is self-describing wherever it is stored (file, inline row, S3 object,
 * staged part or resumable piece), every caller above (downloads, Range, copy/move, fops, the scrubber) is
 * unchanged, no metadata schema changes, and a rotation rewrites the 120-byte header of each blob. Blobs written before
 * encryption was turned on have no header (they do not start with the magic) and are read as they are, so
 * existing data stays readable; an unencrypted install never constructs this class.
 *
 * Integrity: a chunk, header or final flag that does not authenticate fails the read with CiphertextMismatch
 * (`code` 'EINTEGRITY'), which objects/verified-read.ts answers as 599 objectCorrupt and marks the blob corrupt.
 * Plaintext checksums (CRC-32 per block) are still computed at upload and checked on every read, on top.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import type { BlobStore, ByteRange, StagedBlob } from '../../ports/blob.js';
import { currentCustomerKey } from '../../ports/customer-key.js';
import {
  ChunkOpener,
  CiphertextMismatch,
  chunkSpan,
  CHUNK_BYTES,
  DecryptStream,
  EncryptStream,
  hasMagic,
  HEADER_BYTES,
  MAGIC,
  type MasterKey,
  openBuffer,
  openHeader,
  sealBuffer,
} from './envelope.js';

/** Collects a stream into one buffer (headers: HEADER_BYTES; tiny blobs). */
async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/**
 * Whole-blob reads: looks at the first HEADER_BYTES; an encrypted blob is decrypted to its end (the last chunk
 * must be final), any other is passed through as it is (a blob from before encryption).
 */
class OpenStream extends Transform {
  private head: Buffer[] = [];
  private headBytes = 0;
  private mode: 'sniff' | 'plain' | 'cipher' = 'sniff';
  private opener: ChunkOpener | undefined;

  constructor(
    private readonly masters: readonly MasterKey[],
    private readonly customerKey: Buffer | undefined,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.mode === 'plain') return cb(null, chunk);
    try {
      if (this.mode === 'cipher') return cb(null, concatOrNull(this.opener!.update(chunk)));
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.headBytes < HEADER_BYTES) return cb();
      const all = Buffer.concat(this.head);
      this.head = [];
      if (!hasMagic(all)) {
        this.mode = 'plain';
        return cb(null, all);
      }
      const { dataKey, nonce } = openHeader(all, this.masters, this.customerKey);
      this.mode = 'cipher';
      this.opener = new ChunkOpener(dataKey, nonce, { firstChunk: 0, skip: 0, limit: Number.MAX_SAFE_INTEGER, toEnd: true });
      cb(null, concatOrNull(this.opener.update(all.subarray(HEADER_BYTES))));
    } catch (err) {
      cb(err as Error);
    }
  }

  override _flush(cb: TransformCallback): void {
    try {
      if (this.mode === 'cipher') return cb(null, concatOrNull(this.opener!.final()));
      if (this.mode === 'plain') return cb();
      // Shorter than a header: an encrypted blob is at least HEADER_BYTES + a tag, so this is a plain one — unless
      // it has the magic (an encrypted blob cut off).
      const all = Buffer.concat(this.head);
      if (hasMagic(all)) throw new CiphertextMismatch('the encrypted blob is cut off inside its header');
      cb(null, all.length > 0 ? all : null);
    } catch (err) {
      cb(err as Error);
    }
  }
}

/** One buffer of the parts, or null (nothing to push). */
function concatOrNull(parts: Buffer[]): Buffer | null {
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** The encrypting BlobStore; see the module comment. */
export class EncryptingBlobStore implements BlobStore {
  /**
   * `inner`: the store of stored bytes (inline-aware). `master`: the key new blobs are wrapped with. `older`: keys
   * that may still have wrapped existing blobs (during a rotation).
   */
  constructor(
    readonly inner: BlobStore,
    readonly master: MasterKey,
    private readonly older: readonly MasterKey[] = [],
  ) {}

  private get masters(): readonly MasterKey[] {
    return [this.master, ...this.older];
  }

  recover(liveTags?: () => Promise<ReadonlySet<string>>): Promise<number> {
    return this.inner.recover(liveTags);
  }

  async stage(): Promise<StagedBlob> {
    const customerKey = currentCustomerKey();
    const staged = await this.inner.stage();
    const enc = new EncryptStream(this.master, customerKey);
    enc.pipe(staged.sink);
    staged.sink.once('error', (err) => enc.destroy(err));
    enc.once('error', (err) => staged.sink.destroy(err));
    return {
      sink: enc,
      seal: () => staged.seal(),
      discard: async () => {
        enc.unpipe(staged.sink);
        enc.destroy();
        await staged.discard();
      },
    };
  }

  /** Inline content, encrypted as a blob is (committed by MetaStore.commitPut `inline`). */
  sealInline(plain: Buffer): Buffer {
    return sealBuffer(this.master, plain, currentCustomerKey());
  }

  /** Inline bytes as stored → plaintext (bytes without the magic are from before encryption). */
  openInline(stored: Buffer): Buffer {
    return hasMagic(stored) ? openBuffer(this.masters, stored, currentCustomerKey()) : stored;
  }

  read(blobId: string, range?: ByteRange): Readable {
    if (!range) {
      const out = new OpenStream(this.masters, currentCustomerKey());
      return pipeline(this.inner.read(blobId), out, () => undefined);
    }
    const out = new PassThrough();
    void this.readRange(blobId, range, out, currentCustomerKey()).catch((err: unknown) => out.destroy(err as Error));
    return out;
  }

  private async readRange(blobId: string, range: ByteRange, out: PassThrough, customerKey: Buffer | undefined): Promise<void> {
    const head = await collect(this.inner.read(blobId, { start: 0, end: HEADER_BYTES - 1 }));
    if (out.destroyed) return;
    if (!hasMagic(head)) {
      pipeline(this.inner.read(blobId, range), out, () => undefined);
      return;
    }
    const { dataKey, nonce } = openHeader(head, this.masters, customerKey);
    const span = chunkSpan(range.start, range.end);
    const decrypt = new DecryptStream(dataKey, nonce, {
      firstChunk: span.firstChunk,
      skip: range.start - span.firstChunk * CHUNK_BYTES,
      limit: range.end - range.start + 1,
      toEnd: false,
    });
    pipeline(this.inner.read(blobId, { start: span.storedStart, end: span.storedEnd }), decrypt, out, () => undefined);
  }

  async readSmall(blobId: string, size: number): Promise<Buffer> {
    const bytes = await collect(this.read(blobId));
    if (bytes.length !== size) throw new Error(`blob ${blobId}: read ${bytes.length} of ${size} bytes`);
    return bytes;
  }

  /**
   * An encrypted blob is decrypted into a private temp file (mode 0600, removed by release): ffmpeg and
   * heif-convert read plaintext. A blob from before encryption is the inner store's file.
   */
  async localFile(blobId: string): Promise<{ path: string; release(): Promise<void> }> {
    const head = await collect(this.inner.read(blobId, { start: 0, end: MAGIC.length - 1 }));
    if (!hasMagic(head)) return this.inner.localFile(blobId);
    const dir = await mkdtemp(join(tmpdir(), 'granary-decrypted-'));
    const path = join(dir, 'blob');
    const release = (): Promise<void> => rm(dir, { recursive: true, force: true });
    try {
      await pipelineAsync(this.read(blobId), createWriteStream(path, { mode: 0o600 }));
    } catch (err) {
      await release();
      throw err;
    }
    return { path, release };
  }

  async encryptedAtRest(blobId: string): Promise<boolean> {
    return hasMagic(await collect(this.inner.read(blobId, { start: 0, end: MAGIC.length - 1 })));
  }

  remove(blobId: string): Promise<void> {
    return this.inner.remove(blobId);
  }

  list(): AsyncIterable<{ id: string; mtimeMs: number }> {
    return this.inner.list();
  }

  readMarker(): Promise<string | undefined> {
    return this.inner.readMarker();
  }

  writeMarker(text: string): Promise<void> {
    return this.inner.writeMarker(text);
  }

  abort(): void {
    this.inner.abort?.();
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }
}
