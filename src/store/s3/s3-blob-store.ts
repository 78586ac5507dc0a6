/**
 * BlobStore on an S3-compatible object store (Ceph RGW, MinIO, Garage, AWS S3, R2…), chosen with
 * `GRANARY_BLOBS=s3://<bucket>[/<prefix>]?…` (config.ts). Object keys never reach it: a blob is the S3 object
 * `<prefix><id>`, where `id` is 32 random hex characters, exactly like the file-system store's names.
 *
 * - `stage()` → S3StagedBlob: PutObject below `partBytes`, multipart upload above; `seal()` resolves once S3
 *   acknowledged the PutObject or CompleteMultipartUpload (durable by the store's own rules).
 * - `read(id, range)` → GetObject with `Range: bytes=start-end`, streamed with backpressure.
 * - `localFile(id)` → a copy in a bounded local cache (BlobFileCache, `<dataDir>/blob-cache/`, GRANARY_S3_CACHE_SIZE).
 * - `list()` → ListObjectsV2 under the prefix; `mtimeMs` is the object's LastModified (the S3 server's clock).
 * - `recover()` → checks the bucket answers (HeadBucket: a wrong bucket or key fails the start), empties the local
 *   cache, and aborts multipart uploads under the prefix initiated more than `staleUploadMs` ago (uploads a crash
 *   left behind; younger ones may belong to another node that is still writing).
 * - A missing blob fails with `code: 'ENOENT'`; other S3 failures with `code: 'S3_<Code>'` (599, s3-errors.ts).
 *
 * The bucket (or prefix) belongs to one Granary deployment, named by `<prefix>granary-deployment.json`
 * (store/deployment.ts); `granary gc` may delete any `<prefix><id>` object its
 * metadata does not reference.
 */
import { randomHexId } from '../random-id.js';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { BlobStore, ByteRange, StagedBlob } from '../../ports/blob.js';
import { BlobFileCache } from './blob-file-cache.js';
import { fromS3, S3StoreError } from './s3-errors.js';
import { MIN_PART_BYTES, S3StagedBlob } from './s3-staged-blob.js';

/** The deployment marker's key under the prefix (store/deployment.ts). */
const MARKER_NAME = 'granary-deployment.json';

const ID_RE = /^[0-9a-f]{32}$/;

/** Where the blobs live: GRANARY_BLOBS parsed (config.ts), plus the credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY. */
export interface S3Location {
  bucket: string;
  /** Key prefix of every blob: '' or ending in '/'. */
  prefix: string;
  /** `http(s)://host:port` of an S3-compatible server; absent for AWS itself. */
  endpoint?: string;
  region: string;
  /** Path-style addressing (`endpoint/bucket/key`), which most self-hosted servers need. */
  forcePathStyle: boolean;
  /** Absent: the SDK's default chain (environment, shared files, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export interface S3BlobStoreOptions {
  /** Directory of the local copies for `localFile()` (emptied at `recover()`). */
  cacheDir: string;
  /** Bound of the local copies, bytes (GRANARY_S3_CACHE_SIZE). */
  cacheBytes: number;
  /** Multipart threshold and part size, bytes, ≥ 5 MiB (GRANARY_S3_PART_SIZE). */
  partBytes: number;
  /** Multipart uploads older than this (ms) are aborted by `recover()` (GRANARY_S3_STALE_UPLOAD_HOURS). */
  staleUploadMs: number;
  /** A client to use instead of one built from the location (tests). */
  client?: S3Client;
}

/** A stream of one GetObject's body: the request is sent when the stream is first read; destroying it aborts. */
class S3ReadStream extends Readable {
  private body: Readable | undefined;
  private readonly abort = new AbortController();

  /** `open` sends the request; `toStoreError` turns an error of the body (a cut connection) into a store error. */
  constructor(
    private readonly open: (signal: AbortSignal) => Promise<Readable>,
    private readonly toStoreError: (err: unknown) => Error,
  ) {
    super({ highWaterMark: 512 * 1024 });
  }

  override _construct(callback: (err?: Error | null) => void): void {
    this.open(this.abort.signal).then((body) => {
      this.body = body;
      body.on('data', (chunk: Buffer) => {
        if (!this.push(chunk)) body.pause();
      });
      body.once('end', () => this.push(null));
      body.once('error', (err) => this.destroy(this.toStoreError(err)));
      callback();
    }, callback);
  }

  override _read(): void {
    this.body?.resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.abort.abort();
    this.body?.destroy();
    callback(err);
  }
}

export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  private readonly ownsClient: boolean;
  private readonly cache: BlobFileCache;
  private recovered = false;

  constructor(
    private readonly loc: S3Location,
    private readonly opts: S3BlobStoreOptions,
  ) {
    if (opts.partBytes < MIN_PART_BYTES) throw new Error(`S3 part size must be at least ${MIN_PART_BYTES} bytes`);
    this.ownsClient = opts.client === undefined;
    this.client = opts.client ?? new S3Client(clientConfig(loc));
    this.cache = new BlobFileCache(opts.cacheDir, opts.cacheBytes);
  }

  /** The S3 key of a blob; throws on an id that is not ours (ids never come from clients, but be safe). */
  private keyOf(id: string): string {
    if (!ID_RE.test(id)) throw new Error(`invalid blob id ${JSON.stringify(id)}`);
    return `${this.loc.prefix}${id}`;
  }

  /**
   * At the first call in this process: checks the bucket answers, empties this process's local cache and aborts
   * multipart uploads under the prefix older than `staleUploadMs` (left by processes that died; S3 has no staging
   * files to tell apart by process). Later calls (the workers' reaper) have nothing to do: 0.
   */
  async recover(): Promise<number> {
    if (this.recovered) return 0;
    this.recovered = true;
    return this.recoverNow();
  }

  private async recoverNow(): Promise<number> {
    let aborted = 0;
    const { bucket, prefix } = this.loc;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch (err) {
      const e = fromS3(err, 'HeadBucket', bucket);
      throw new S3StoreError(e.code === 'ENOENT' ? 'S3_NoSuchBucket' : e.code, e.message, { cause: err });
    }
    await this.cache.clear();
    const cutoff = Date.now() - this.opts.staleUploadMs;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      let page;
      try {
        page = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        );
      } catch (err) {
        throw fromS3(err, 'ListMultipartUploads', prefix);
      }
      for (const up of page.Uploads ?? []) {
        if (!up.Key || !up.UploadId || !ID_RE.test(up.Key.slice(prefix.length))) continue;
        if (up.Initiated && up.Initiated.getTime() > cutoff) continue;
        try {
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: up.Key, UploadId: up.UploadId }));
          aborted++;
        } catch (err) {
          const e = fromS3(err, 'AbortMultipartUpload', up.Key);
          if (e.code !== 'S3_NoSuchUpload') throw e;
        }
      }
      if (!page.IsTruncated) return aborted;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
      if (keyMarker === undefined && uploadIdMarker === undefined) return aborted;
    }
  }

  async stage(): Promise<StagedBlob> {
    const id = randomHexId();
    return new S3StagedBlob({ client: this.client, bucket: this.loc.bucket, key: this.keyOf(id), id, partBytes: this.opts.partBytes });
  }

  read(blobId: string, range?: ByteRange): Readable {
    const key = this.keyOf(blobId);
    return new S3ReadStream(async (abortSignal) => {
      try {
        const res = await this.client.send(
          new GetObjectCommand({ Bucket: this.loc.bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
          { abortSignal },
        );
        return res.Body as Readable;
      } catch (err) {
        throw fromS3(err, 'GetObject', key);
      }
    }, (err) => fromS3(err, 'GetObject body', key));
  }

  async readSmall(blobId: string, size: number): Promise<Buffer> {
    const key = this.keyOf(blobId);
    let bytes: Uint8Array;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: key }));
      bytes = res.Body ? await res.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      throw fromS3(err, 'GetObject', key);
    }
    if (bytes.length !== size) throw new Error(`blob ${blobId}: read ${bytes.length} of ${size} bytes`);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  localFile(blobId: string): Promise<{ path: string; release(): Promise<void> }> {
    this.keyOf(blobId);
    return this.cache.acquire(blobId, () => this.read(blobId));
  }

  async remove(blobId: string): Promise<void> {
    const key = this.keyOf(blobId);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.loc.bucket, Key: key }));
    } catch (err) {
      const e = fromS3(err, 'DeleteObject', key);
      if (e.code !== 'ENOENT') throw e;
    }
    await this.cache.forget(blobId);
  }

  async *list(): AsyncIterable<{ id: string; mtimeMs: number }> {
    const { bucket, prefix } = this.loc;
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      } catch (err) {
        throw fromS3(err, 'ListObjectsV2', prefix);
      }
      for (const obj of page.Contents ?? []) {
        const id = obj.Key?.slice(prefix.length);
        if (id === undefined || !ID_RE.test(id)) continue;
        yield { id, mtimeMs: obj.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** `<prefix>granary-deployment.json`: never a blob key (blob keys are `<prefix>` + 32 hex characters). */
  private get markerKey(): string {
    return `${this.loc.prefix}${MARKER_NAME}`;
  }

  async readMarker(): Promise<string | undefined> {
    const key = this.markerKey;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: key }));
      return res.Body ? await res.Body.transformToString('utf8') : '';
    } catch (err) {
      const e = fromS3(err, 'GetObject', key);
      if (e.code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** One PutObject: durable once S3 answered 200. */
  async writeMarker(text: string): Promise<void> {
    const key = this.markerKey;
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.loc.bucket, Key: key, Body: text, ContentType: 'application/json' }),
      );
    } catch (err) {
      throw fromS3(err, 'PutObject', key);
    }
  }

  /** Closes the S3 client's connections (when this store built the client). */
  async close(): Promise<void> {
    if (this.ownsClient) this.client.destroy();
  }
}

/** The SDK client settings of a location. */
function clientConfig(loc: S3Location): S3ClientConfig {
  return {
    region: loc.region,
    forcePathStyle: loc.forcePathStyle,
    ...(loc.endpoint !== undefined ? { endpoint: loc.endpoint } : {}),
    ...(loc.credentials !== undefined ? { credentials: loc.credentials } : {}),
  };
}
