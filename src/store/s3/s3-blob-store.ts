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
 * - Every call is bounded (s3-clients.ts: connect, whole-call and idle timeouts; reads and writes on pools of their
 *   own); a body being read fails with `S3_Timeout` once the store was silent for GRANARY_S3_TIMEOUT while the
 *   reader wanted bytes (a reader that pauses costs nothing). `abort()` fails every call in flight (a stop).
 *
 * The bucket (or prefix) belongs to one Granary deployment, named by `<prefix>granary-deployment.json`
 * (store/deployment.ts); `granary gc` may delete any `<prefix><id>` object its
 * metadata does not reference.
 */
import { randomHexId } from '../../random-id.js';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { BlobStore, ByteRange, StagedBlob } from '../../ports/blob.js';
import { BlobFileCache } from './blob-file-cache.js';
import { DEFAULT_S3_TIMEOUTS, S3Connections, type S3Timeouts } from './s3-clients.js';
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
  /** Bounds of the S3 calls (GRANARY_S3_TIMEOUT, GRANARY_S3_CONNECT_TIMEOUT); default 30 s and 5 s. */
  timeouts?: S3Timeouts;
}

/** What an S3ReadStream needs from its store. */
interface ReadStreamOptions {
  /** Sends the GetObject (bounded until its headers) and resolves with its body. */
  open: (signal: AbortSignal) => Promise<Readable>;
  /** Turns an error of the body (a cut connection) into a store error. */
  toStoreError: (err: unknown) => Error;
  /** The error of a body silent for `idleMs` while this stream wanted bytes. */
  silence: () => Error;
  idleMs: number;
  /** Registers a call for the store's `abort()`; returns the function that unregisters it. */
  onAbort: (fn: () => void) => () => void;
}

/**
 * A stream of one GetObject's body: the request is sent when the stream is first read; destroying it aborts. A
 * watchdog fails it with `S3_Timeout` when no byte came for `idleMs` while it wanted some; while its reader
 * applies backpressure (a slow client) it is disarmed.
 */
class S3ReadStream extends Readable {
  private body: Readable | undefined;
  private readonly abort = new AbortController();
  private idle: NodeJS.Timeout | undefined;
  private readonly forget: () => void;

  constructor(private readonly o: ReadStreamOptions) {
    super({ highWaterMark: 512 * 1024 });
    this.forget = o.onAbort(() => this.destroy(o.toStoreError(Object.assign(new Error('aborted'), { name: 'AbortError' }))));
  }

  /** Starts the watchdog unless it runs. */
  private arm(): void {
    this.idle ??= setTimeout(() => this.destroy(this.o.silence()), this.o.idleMs);
  }

  private disarm(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
  }

  override _construct(callback: (err?: Error | null) => void): void {
    this.o.open(this.abort.signal).then((body) => {
      this.body = body;
      body.on('data', (chunk: Buffer) => {
        this.disarm();
        if (this.push(chunk)) this.arm();
        else body.pause();
      });
      body.once('end', () => {
        this.disarm();
        this.push(null);
      });
      body.once('error', (err) => this.destroy(this.o.toStoreError(err)));
      callback();
    }, callback);
  }

  override _read(): void {
    if (!this.body) return;
    this.arm();
    this.body.resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.disarm();
    this.forget();
    this.abort.abort();
    this.body?.destroy();
    callback(err);
  }
}

export class S3BlobStore implements BlobStore {
  /** The two pools (reads, writes) and the bounded calls on them (s3-clients.ts). */
  readonly s3: S3Connections;
  private readonly cache: BlobFileCache;
  private recovered = false;

  constructor(
    private readonly loc: S3Location,
    private readonly opts: S3BlobStoreOptions,
  ) {
    if (opts.partBytes < MIN_PART_BYTES) throw new Error(`S3 part size must be at least ${MIN_PART_BYTES} bytes`);
    this.s3 = new S3Connections(
      {
        region: loc.region,
        forcePathStyle: loc.forcePathStyle,
        ...(loc.endpoint !== undefined ? { endpoint: loc.endpoint } : {}),
        ...(loc.credentials !== undefined ? { credentials: loc.credentials } : {}),
      },
      opts.timeouts ?? DEFAULT_S3_TIMEOUTS,
    );
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
      await this.s3.within('HeadBucket', bucket, (abortSignal) => this.s3.reads.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal }));
    } catch (err) {
      const e = fromS3(err, 'HeadBucket', bucket);
      throw new S3StoreError(e.code === 'ENOENT' ? 'S3_NoSuchBucket' : e.code, e.message, { cause: err });
    }
    await this.cache.clear();
    const cutoff = Date.now() - this.opts.staleUploadMs;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const list = new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker });
      const page = await this.s3.within('ListMultipartUploads', prefix, (abortSignal) => this.s3.reads.send(list, { abortSignal }));
      for (const up of page.Uploads ?? []) {
        if (!up.Key || !up.UploadId || !ID_RE.test(up.Key.slice(prefix.length))) continue;
        if (up.Initiated && up.Initiated.getTime() > cutoff) continue;
        const abort = new AbortMultipartUploadCommand({ Bucket: bucket, Key: up.Key, UploadId: up.UploadId });
        try {
          await this.s3.within('AbortMultipartUpload', up.Key, (abortSignal) => this.s3.writes.send(abort, { abortSignal }));
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
    return new S3StagedBlob({ s3: this.s3, bucket: this.loc.bucket, key: this.keyOf(id), id, partBytes: this.opts.partBytes });
  }

  read(blobId: string, range?: ByteRange): Readable {
    const key = this.keyOf(blobId);
    const get = new GetObjectCommand({ Bucket: this.loc.bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) });
    return new S3ReadStream({
      open: async (parent) => {
        const res = await this.s3.within('GetObject', key, (abortSignal) => this.s3.reads.send(get, { abortSignal }), parent);
        return res.Body as Readable;
      },
      toStoreError: (err) => fromS3(err, 'GetObject body', key),
      silence: () => this.s3.silence('GetObject body', key),
      idleMs: this.s3.timeouts.requestMs,
      onAbort: (fn) => this.s3.onAbort(fn),
    });
  }

  async readSmall(blobId: string, size: number): Promise<Buffer> {
    const key = this.keyOf(blobId);
    // Small: the body is read within the call's deadline too.
    const bytes = await this.s3.within('GetObject', key, async (abortSignal) => {
      const res = await this.s3.reads.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: key }), { abortSignal });
      return res.Body ? res.Body.transformToByteArray() : new Uint8Array();
    });
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
      await this.s3.within('DeleteObject', key, (abortSignal) =>
        this.s3.writes.send(new DeleteObjectCommand({ Bucket: this.loc.bucket, Key: key }), { abortSignal }),
      );
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
      const list = new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token });
      const page = await this.s3.within('ListObjectsV2', prefix, (abortSignal) => this.s3.reads.send(list, { abortSignal }));
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
      return await this.s3.within('GetObject', key, async (abortSignal) => {
        const res = await this.s3.reads.send(new GetObjectCommand({ Bucket: this.loc.bucket, Key: key }), { abortSignal });
        return res.Body ? res.Body.transformToString('utf8') : '';
      });
    } catch (err) {
      const e = fromS3(err, 'GetObject', key);
      if (e.code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** One PutObject of a few bytes (within the call deadline): durable once S3 answered 200. */
  async writeMarker(text: string): Promise<void> {
    const key = this.markerKey;
    await this.s3.within('PutObject', key, (abortSignal) =>
      this.s3.writes.send(new PutObjectCommand({ Bucket: this.loc.bucket, Key: key, Body: text, ContentType: 'application/json' }), {
        abortSignal,
      }),
    );
  }

  /** Fails every S3 call in flight and every later one (a stop past GRANARY_STOP_TIMEOUT): see s3-clients.ts. */
  abort(): void {
    this.s3.abort();
  }

  /** Closes the S3 connections of both pools. */
  async close(): Promise<void> {
    this.s3.destroy();
  }
}
