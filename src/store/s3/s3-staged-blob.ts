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
 * never throws; uploads a crash left behind are aborted by `recover()` (S3BlobStore).
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
  type S3Client,
} from '@aws-sdk/client-s3';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { StagedBlob } from '../../ports/blob.js';
import { fromS3 } from './s3-errors.js';

/** S3's smallest part size (all parts but the last), bytes. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

export interface S3StagedBlobOptions {
  client: S3Client;
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
    const { client, bucket, key } = this.o;
    if (this.uploadId === undefined) {
      try {
        const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }), {
          abortSignal: this.abort.signal,
        });
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
    this.inflight = client.send(cmd, { abortSignal: this.abort.signal }).then(
      (res) => {
        part.ETag = res.ETag;
      },
      (err: unknown) => {
        this.failure ??= fromS3(err, `UploadPart ${partNumber}`, key);
      },
    );
  }

  /** Completes the upload (or sends the one PutObject); resolves with the blob id once S3 acknowledged it. */
  async seal(): Promise<string> {
    if (this.state !== 'open') throw new Error(`staged blob ${this.o.id} is ${this.state}`);
    this.state = 'sealing';
    await finished(this.sink);
    if (this.failure) throw this.failure;
    const { client, bucket, key } = this.o;
    const signal = { abortSignal: this.abort.signal };
    if (this.uploadId === undefined) {
      const body = Buffer.concat(this.chunks, this.buffered);
      this.chunks = [];
      this.putSent = true;
      try {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length }), signal);
      } catch (err) {
        throw fromS3(err, 'PutObject', key);
      }
    } else {
      try {
        await client.send(
          new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: this.uploadId, MultipartUpload: { Parts: this.parts } }),
          signal,
        );
      } catch (err) {
        throw fromS3(err, 'CompleteMultipartUpload', key);
      }
    }
    this.state = 'sealed';
    return this.o.id;
  }

  /** Drops the bytes: aborts the multipart upload, or deletes the key a PutObject may have written. Never throws. */
  async discard(): Promise<void> {
    if (this.state === 'sealed' || this.state === 'discarded') return;
    this.state = 'discarded';
    this.chunks = [];
    this.abort.abort();
    this.sink.destroy();
    await this.flushing.catch(() => undefined);
    await this.inflight;
    const { client, bucket, key } = this.o;
    if (this.uploadId !== undefined) {
      await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: this.uploadId })).catch(() => undefined);
    }
    if (this.putSent || this.uploadId !== undefined) {
      // A PutObject or Complete cut off by the abort may still have been applied by the server.
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
    }
  }
}
