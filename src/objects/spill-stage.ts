/**
 * Staging that keeps small content in memory (small objects inline): bytes are buffered until they pass
 * `inlineMax`; then a staged blob of the BlobStore is opened, the buffer written to it, and the rest streamed
 * there as before. Content that stays within `inlineMax` never touches the file system: it is committed into the
 * metadata database with its entry (one group-committed WAL write instead of a file, its fsync, a rename and a
 * directory fsync; store/inline-blob-store.ts reads it back; ids: ports/inline-blob-id.ts). Memory per upload stays bounded by `inlineMax`.
 * Once in a file, bytes are written in batches of WRITE_BATCH_BYTES (256 KiB), one `writev` of the batch's chunks
 * (no copy into one buffer), rather than one write per socket chunk: each write is a call into the thread pool
 * costing ~16–20 µs of the event loop whatever its size (256 MiB in 16 KiB writes: 269 ms of the main thread; in
 * 256 KiB writes: 21 ms), so per-chunk writes took 13% of the event loop in the 1 MiB upload bench and 29% in the
 * resumable one. With `inlineMax` 0 nothing stays in memory (resumable chunks and parts, which are never inline):
 * the stage then only batches, and empty content is an empty file. Memory per upload: at most `inlineMax` + 256 KiB.
 */
import { finished, Writable } from 'node:stream';
import type { StagedBlob } from '../ports/blob.js';
import { newInlineBlobId } from '../ports/inline-blob-id.js';

/** Bytes gathered before one write to the staged file. */
const WRITE_BATCH_BYTES = 256 * 1024;

/** A StagedBlob that stays in memory up to `inlineMax` bytes; see the module comment. */
export class SpillingStage implements StagedBlob {
  readonly sink: Writable;
  private chunks: Buffer[] = [];
  private size = 0;
  private file: StagedBlob | undefined;
  private sealedInline: Buffer | undefined;
  private batch: Buffer[] = [];
  private batchBytes = 0;
  /** The file blob being opened (toFile), and whether discard() ran. */
  private opening: Promise<StagedBlob> | undefined;
  private discarded = false;

  /** `open`: opens the staged file blob when the content outgrows `inlineMax` bytes (0: always a file). */
  constructor(
    private readonly open: () => Promise<StagedBlob>,
    private readonly inlineMax: number,
  ) {
    this.sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        if (!this.file && this.size + chunk.length <= this.inlineMax) {
          this.chunks.push(chunk);
          this.size += chunk.length;
          cb();
          return;
        }
        this.toFile().then(
          (file) => {
            this.batch.push(chunk);
            this.batchBytes += chunk.length;
            if (this.batchBytes < WRITE_BATCH_BYTES) return cb();
            writeBatch(file.sink, this.takeBatch(), cb);
          },
          (err: unknown) => cb(err as Error),
        );
      },
      final: (cb) => {
        const end = (file: StagedBlob): void => {
          if (this.batchBytes > 0) writeBatch(file.sink, this.takeBatch());
          file.sink.end();
          // Once, with the file's error if its last write failed: a swallowed error here would let a file missing
          // bytes be sealed. (The fsync comes at seal().)
          finished(file.sink, { readable: false }, (err) => cb(err ?? null));
        };
        if (this.file) end(this.file);
        // Never inline: empty content is an empty file.
        else if (this.inlineMax === 0) this.toFile().then(end, cb);
        else cb();
      },
      destroy: (err, cb) => {
        // After a clean finish (autoDestroy) the file stays open: its blob store syncs it at seal().
        if (err || !this.sink.writableFinished) this.file?.sink.destroy();
        cb(err);
      },
    });
  }

  /**
   * The content when it stayed in memory (after the sink finished), else undefined: the caller commits these
   * bytes with the entry (MetaStore.commitPut `inline`).
   */
  get inline(): Buffer | undefined {
    return this.file ? undefined : (this.sealedInline ??= Buffer.concat(this.chunks, this.size));
  }

  async seal(): Promise<string> {
    if (this.file) return this.file.seal();
    return newInlineBlobId();
  }

  async discard(): Promise<void> {
    this.chunks = [];
    this.discarded = true;
    // A file still being opened is discarded once it is (toFile), so no staged bytes outlive a failed upload.
    const file = this.file ?? (await this.opening?.catch(() => undefined));
    await file?.discard();
  }

  private takeBatch(): Buffer[] {
    const out = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    return out;
  }

  /** Opens the file blob; what was buffered so far starts its first write batch. */
  private async toFile(): Promise<StagedBlob> {
    if (this.file) return this.file;
    this.opening ??= this.open();
    const file = await this.opening;
    if (this.discarded) {
      await file.discard();
      throw new Error('staged upload discarded');
    }
    this.file = file;
    // What was kept in memory goes out with the first batch.
    this.batch = this.chunks;
    this.batchBytes = this.size;
    this.chunks = [];
    return file;
  }
}

/**
 * Writes the chunks of one batch to `sink` as one write: corked, so a sink with `_writev` (the fs WriteStream:
 * `fs.writev`) gets them in one call, without copying them into one buffer first. `cb`, when given, is called
 * once the sink may take more (backpressure) or failed, also when it had failed before this batch.
 */
function writeBatch(sink: Writable, chunks: Buffer[], cb?: (err?: Error | null) => void): void {
  // A file that already failed (its open or an earlier write) emits neither 'drain' nor 'error' again: waiting
  // for them would hang the upload.
  if (sink.errored || sink.destroyed) {
    cb?.(sink.errored ?? new Error('the staged file was closed'));
    return;
  }
  sink.cork();
  let more = true;
  for (const c of chunks) more = sink.write(c);
  sink.uncork();
  if (!cb) return;
  let done = false;
  const finish = (err?: Error | null): void => {
    if (done) return;
    done = true;
    sink.off('error', finish);
    sink.off('drain', onDrain);
    cb(err);
  };
  const onDrain = (): void => finish();
  if (more) return finish();
  sink.once('error', finish);
  sink.once('drain', onDrain);
}
