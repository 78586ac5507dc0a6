/**
 * A blob being written to S3 (the StagedBlob of the S3 BlobStore).
 *
 * Bytes written to `sink` are buffered up to `partBytes`. A blob that ends below that is sent by `seal()` as one
 * PutObject. A larger one becomes a multipart upload: CreateMultipartUpload when the first part is full, each full
 * buffer sent as one UploadPart (every part but the last ≥ `partBytes` ≥ 5 MiB, as S3 requires), the last part when
 * the sink ends, and `seal()` sends CompleteMultipartUpload. At most one part is in flight while the next fills, so
 * memory per upload stays under 2 × `partBytes` (plus one write); a write waits while both buffers are taken, which
 * is the backpressure the upload pipeline sees. A failed part fails the next write (or the end) of the sink, so
 * the pipeline feeding it fails at once.
 *
 * Nothing is visible under the blob's key before `seal()` resolves (S3 shows neither a multipart upload nor a PUT
 * in progress). `discard()` aborts the multipart upload (or deletes the key if a PutObject may have landed) and
 * never throws; uploads a crash left behind are aborted by `recover()` (S3BlobStore). A failed upload (a part or
 * the completion failed, timed out or was aborted) is discarded by its caller (objects/put-object.ts), which aborts
 * the multipart upload; if the store cannot be reached then either, `recover()` aborts it at a later start.
 *
 * Bounds (s3-clients.ts): the parts and the PutObject are sent on the write pool, cut only when the connection is
 * silent for GRANARY_S3_TIMEOUT (a large part on a slow link is never cut while it flows); the create, complete,
 * abort and delete calls each end within GRANARY_S3_TIMEOUT.
 *
 * Durability: S3-compatible stores answer PutObject and CompleteMultipartUpload with 200 only once the object is
 * stored durably by their own rules (replicas or erasure coding); `seal()` resolves after that answer.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { StagedBlob } from '../../ports/blob.js';
import type { S3Connections } from './s3-clients.js';
import { fromS3 } from './s3-errors.js';

/** S3's smallest part size (all parts but the last), bytes. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

export interface S3StagedBlobOptions {
  /** The store's connections: the calls go to `s3.writes`, bounded by `s3.within` / `s3.streaming`. */
  s3: S3Connections;
  bucket: string;
  /** Object key of the blob (prefix + id). */
  key: string;
  /** The blob id `seal()` resolves with. */
  id: string;
  /** Size of a multipart part and threshold between PutObject and multipart, bytes (≥ MIN_PART_BYTES). */
  partBytes: number;
}

export class S3StagedBlob implements StagedBlob {
  readonly sink: Writable;
  private readonly o: S3StagedBlobOptions;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private uploadId: string | undefined;
  private readonly parts: CompletedPart[] = [];
  /** The part being uploaded, if any; it never rejects (the failure is kept in `failure`). */
  private inflight: Promise<void> = Promise.resolve();
  /** The last flushPart() call (it creates the multipart upload): discard() waits for it before aborting. */
  private flushing: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  private readonly abort = new AbortController();
  private state: 'open' | 'sealing' | 'sealed' | 'discarded' = 'open';
  /** Set once a PutObject was sent: discard() must then delete the key. */
  private putSent = false;

  constructor(options: S3StagedBlobOptions) {
    this.o = options;
    this.sink = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        this.chunks.push(chunk);
        this.buffered += chunk.length;
        if (this.buffered < this.o.partBytes) return cb();
        this.flushing = this.flushPart();
        this.flushing.then(() => cb(), cb);
      },
      final: (cb) => {
        if (this.uploadId !== undefined && this.buffered > 0) this.flushing = this.flushPart();
        this.flushing
          .then(() => this.inflight)
          .then(() => cb(this.failure ?? null), cb);
      },
    });
  }

  /** Waits for the part in flight, then starts sending the buffered bytes as the next part. */
  private async flushPart(): Promise<void> {
    await this.inflight;
    if (this.failure) throw this.failure;
    const body = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [];
    this.buffered = 0;
    const { s3, bucket, key } = this.o;
    if (this.uploadId === undefined) {
      try {
        const create = new CreateMultipartUploadCommand({ Bucket: bucket, Key: key });
        const created = await s3.within('CreateMultipartUpload', key, (abortSignal) => s3.writes.send(create, { abortSignal }), this.abort.signal);
        this.uploadId = created.UploadId;
      } catch (err) {
        throw (this.failure = fromS3(err, 'CreateMultipartUpload', key));
      }
      if (this.uploadId === undefined) throw (this.failure = fromS3(new Error('no UploadId'), 'CreateMultipartUpload', key));
    }
    const partNumber = this.parts.length + 1;
    const part: CompletedPart = { PartNumber: partNumber };
    this.parts.push(part);
    const cmd = new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: this.uploadId, PartNumber: partNumber, Body: body });
    const what = `UploadPart ${partNumber}`;
    this.inflight = s3.streaming(what, key, (abortSignal) => s3.writes.send(cmd, { abortSignal }), this.abort.signal).then(
      (res) => {
        part.ETag = res.ETag;
      },
      (err: unknown) => {
        this.failure ??= fromS3(err, what, key);
      },
    );
  }

  /** Completes the upload (or sends the one PutObject); resolves with the blob id once S3 acknowledged it. */
  async seal(): Promise<string> {
    if (this.state !== 'open') throw new Error(`staged blob ${this.o.id} is ${this.state}`);
    this.state = 'sealing';
    await finished(this.sink);
    if (this.failure) throw this.failure;
    const { s3, bucket, key } = this.o;
    try {
      if (this.uploadId === undefined) {
        const body = Buffer.concat(this.chunks, this.buffered);
        this.chunks = [];
        this.putSent = true;
        const put = new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length });
        await s3.streaming('PutObject', key, (abortSignal) => s3.writes.send(put, { abortSignal }), this.abort.signal);
      } else {
        const parts = { Parts: this.parts };
        const complete = new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: this.uploadId, MultipartUpload: parts });
        await s3.within('CompleteMultipartUpload', key, (abortSignal) => s3.writes.send(complete, { abortSignal }), this.abort.signal);
      }
    } catch (err) {
      this.failure ??= err as Error;
      throw err;
    }
    this.state = 'sealed';
    return this.o.id;
  }

  /**
   * Drops the bytes: aborts the calls in flight, then the multipart upload, or deletes the key a PutObject may have
   * written (each within GRANARY_S3_TIMEOUT), and resolves once they answered — or at once when this blob failed
   * because the store timed out (the clean-up then runs on by itself). Never throws.
   */
  async discard(): Promise<void> {
    if (this.state === 'sealed' || this.state === 'discarded') return;
    this.state = 'discarded';
    this.chunks = [];
    this.abort.abort();
    this.sink.destroy();
    await this.flushing.catch(() => undefined);
    await this.inflight;
    const cleanup = this.cleanUp();
    // A store that just let a call time out would most likely hold these calls for their full bound too: the
    // failed request answers now and the clean-up goes on by itself (a later start's recover() aborts what stays).
    if ((this.failure as { code?: unknown } | undefined)?.code !== 'S3_Timeout') await cleanup;
  }

  /** Aborts the multipart upload and deletes the key a PutObject or Complete may have written; never rejects. */
  private async cleanUp(): Promise<void> {
    const { s3, bucket, key } = this.o;
    const uploadId = this.uploadId;
    if (uploadId !== undefined) {
      const abort = new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId });
      await s3.within('AbortMultipartUpload', key, (abortSignal) => s3.writes.send(abort, { abortSignal })).catch(() => undefined);
    }
    if (this.putSent || uploadId !== undefined) {
      // A PutObject or Complete cut off by the abort may still have been applied by the server.
      const del = new DeleteObjectCommand({ Bucket: bucket, Key: key });
      await s3.within('DeleteObject', key, (abortSignal) => s3.writes.send(del, { abortSignal })).catch(() => undefined);
    }
  }
}
