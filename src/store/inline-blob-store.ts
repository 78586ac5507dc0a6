/**
 * Small objects inline: blobs whose bytes live in the metadata database, in their `blobs` row, instead
 * of a file — the way Ceph keeps small data in the head object. Written by MetaStore.commitPut (`inline`) in the
 * same transaction as the entry (objects/spill-stage.ts decides at upload time), counted by references like every
 * blob (copy/move share the row, the last release deletes it: no file to unlink), checksummed like every blob.
 *
 * `InlineAwareBlobStore` is the BlobStore the rest of the server uses: ids of inline blobs ('i' + 32 hex
 * characters, never a file blob id) are read from the database; every other id goes to the file store unchanged.
 * So downloads, Range, fops and their cache, the scrubber and copy/move need no special case.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { BlobStore, ByteRange, StagedBlob } from '../ports/blob.js';
import { isInlineBlobId } from '../ports/inline-blob-id.js';

/** Where inline bytes are read from: the metadata store (`MetaStore.inlineBlob`). */
export interface InlineSource {
  /** The bytes of an inline blob, undefined when no such blob exists. */
  inlineBlob(blobId: string): Promise<Buffer | undefined>;
}

/** A missing blob, as the file store reports it (callers test `code === 'ENOENT'`). */
function missing(blobId: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`blob ${blobId} not found`), { code: 'ENOENT' });
}

/** The file store plus inline blobs; see the module comment. */
export class InlineAwareBlobStore implements BlobStore {
  constructor(
    /** The store of file blobs (local disk or S3). */
    readonly files: BlobStore,
    private readonly inline: InlineSource,
  ) {}

  recover(liveTags?: () => Promise<ReadonlySet<string>>): Promise<number> {
    return this.files.recover(liveTags);
  }

  stage(): Promise<StagedBlob> {
    return this.files.stage();
  }

  read(blobId: string, range?: ByteRange): Readable {
    if (!isInlineBlobId(blobId)) return this.files.read(blobId, range);
    const load = async function* (this: InlineAwareBlobStore): AsyncGenerator<Buffer> {
      const bytes = await this.bytes(blobId);
      yield range ? bytes.subarray(range.start, range.end + 1) : bytes;
    };
    return Readable.from(load.call(this), { objectMode: false });
  }

  async readSmall(blobId: string, size: number): Promise<Buffer> {
    if (!isInlineBlobId(blobId)) return this.files.readSmall(blobId, size);
    const bytes = await this.bytes(blobId);
    if (bytes.length !== size) throw new Error(`blob ${blobId}: read ${bytes.length} of ${size} bytes`);
    return bytes;
  }

  /** Inline bytes are written to a private temp file for the subprocess; release removes it. */
  async localFile(blobId: string): Promise<{ path: string; release(): Promise<void> }> {
    if (!isInlineBlobId(blobId)) return this.files.localFile(blobId);
    const bytes = await this.bytes(blobId);
    const dir = await mkdtemp(join(tmpdir(), 'granary-inline-'));
    const path = join(dir, 'blob');
    await writeFile(path, bytes, { mode: 0o600 });
    return { path, release: () => rm(dir, { recursive: true, force: true }) };
  }

  /** File blobs only: inline bytes are rewritten through MetaStore.replaceInlineBlob. */
  get rewriteHead(): ((blobId: string, head: Buffer) => Promise<void>) | undefined {
    const files = this.files;
    return files.rewriteHead ? (blobId, head) => files.rewriteHead!(blobId, head) : undefined;
  }

  /** Inline rows are deleted by the transaction that drops their last reference: nothing to do here. */
  async remove(blobId: string): Promise<void> {
    if (!isInlineBlobId(blobId)) await this.files.remove(blobId);
  }

  /** File blobs only (the orphan report): an inline blob cannot be orphaned, it is written with its entry. */
  list(): AsyncIterable<{ id: string; mtimeMs: number }> {
    return this.files.list();
  }

  /** The file store's marker (the deployment is the pair metadata + file store). */
  readMarker(): Promise<string | undefined> {
    return this.files.readMarker();
  }

  writeMarker(text: string): Promise<void> {
    return this.files.writeMarker(text);
  }

  /** Aborts the file store's remote calls (the S3 store's; nothing for the local disk). */
  abort(): void {
    this.files.abort?.();
  }

  async close(): Promise<void> {
    await this.files.close?.();
  }

  private async bytes(blobId: string): Promise<Buffer> {
    const bytes = await this.inline.inlineBlob(blobId);
    if (!bytes) throw missing(blobId);
    return bytes;
  }
}
