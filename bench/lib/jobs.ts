/** Messages between the bench (parent) and the load-generator child (client.ts). */
import type { S3RateJob } from './s3-load.js';
import type { LatencySummary } from './stats.js';

/** Form uploads of `size`-byte objects under distinct keys, `concurrency` at a time, for `durationMs`. */
export interface UploadJob {
  kind: 'upload';
  port: number;
  token: string;
  keyPrefix: string;
  size: number;
  concurrency: number;
  durationMs: number;
}

/** GET `path` over `concurrency` keep-alive connections for `durationMs` (requests/s). */
export interface GetRateJob {
  kind: 'get-rate';
  port: number;
  path: string;
  concurrency: number;
  durationMs: number;
  expectBytes: number;
  /** 'raw' (default): minimal client over net sockets; 'http': node:http with a keep-alive Agent. */
  client?: 'raw' | 'http';
}

/** `count` GETs of a large object, `parallel` at a time; bodies are counted and dropped (MB/s). */
export interface GetBulkJob {
  kind: 'get-bulk';
  port: number;
  path: string;
  count: number;
  parallel: number;
  expectBytes: number;
}

/**
 * One form upload of `size` bytes generated on the fly and streamed. The answer must be 200 with the content's
 * etag as `hash`; then one `HEAD /<bucket>/<key>` must report `size` bytes.
 */
export interface UploadStreamJob {
  kind: 'upload-stream';
  port: number;
  token: string;
  bucket: string;
  key: string;
  size: number;
}

/**
 * One resumable v1 upload (docs/development/kodo-protocol.md §5, as the Node SDK drives it): `POST /mkblk/<len>` with each whole 4 MiB
 * block as body, `parallel` blocks at a time (each answer: 200, ctx, offset = len, crc32 of the block), then
 * `POST /mkfile/<size>/key/…/mimeType/…/fname/…` with the comma-joined ctxs. Checked like UploadStreamJob.
 * Result: `latency` of one mkblk; `steps.blocksMs` (all mkblk), `steps.finalMs` (the mkfile call).
 */
export interface ResumableV1Job {
  kind: 'resumable-v1';
  port: number;
  token: string;
  bucket: string;
  key: string;
  size: number;
  parallel: number;
}

/**
 * One resumable v2 upload (docs/development/kodo-protocol.md §6): `POST …/uploads` (init), `PUT …/uploads/<id>/<n>` of `partSize`-byte
 * parts with hex `Content-MD5`, `parallel` at a time (each answer: 200, etag, md5 = ours), then `POST …/uploads/<id>`
 * (complete) with the JSON part list. Checked like UploadStreamJob. Result: `latency` of one part PUT;
 * `steps.initMs`, `steps.partsMs`, `steps.finalMs` (the complete call).
 */
export interface ResumableV2Job {
  kind: 'resumable-v2';
  port: number;
  token: string;
  bucket: string;
  key: string;
  size: number;
  partSize: number;
  parallel: number;
}

/**
 * The floor for an upload: `size` bytes of content written to a new file in `dir` with plain `write`s of `chunk`
 * bytes one after another, then one fsync (the file is removed afterwards, outside the timing).
 */
export interface FsWriteJob {
  kind: 'fs-write';
  dir: string;
  size: number;
  chunk: number;
}

/**
 * Signed listing requests (`POST <path>`, QBox credential), one at a time over a keep-alive connection. Fixed mode:
 * `count` requests of the same page, each answer must hold `expectEntries` entries (items + common prefixes).
 * Walk mode (`walk`): follows each answer's marker from `marker` until it is empty (at most `count` pages).
 */
export interface ListJob {
  kind: 'list';
  port: number;
  accessKey: string;
  secretKey: string;
  /** Path and query without the marker, e.g. `/list?bucket=b&limit=1000`. */
  path: string;
  /** Marker of the first request ('' = from the start). */
  marker: string;
  count: number;
  walk?: boolean;
  expectEntries?: number;
}

/** Signed `GET /stat/<entry>` of `keys` (cycled), `concurrency` at a time over keep-alive, for `durationMs`. */
export interface StatJob {
  kind: 'stat';
  port: number;
  accessKey: string;
  secretKey: string;
  bucket: string;
  keys: string[];
  concurrency: number;
  durationMs: number;
}

/** `count` signed `POST /batch` requests, one at a time, each of one `op=/stat/…` per key (all must answer 200). */
export interface BatchStatJob {
  kind: 'batch-stat';
  port: number;
  accessKey: string;
  secretKey: string;
  bucket: string;
  keys: string[];
  count: number;
}

/**
 * Sync fetches (docs/development/kodo-protocol.md §8.5), one at a time: `POST /fetch/<b64 url>/to/<b64 bucket:key>` signed QBox, so
 * Granary downloads `url` (a local origin) and stores it under `key` (overwritten each time). Each answer must be
 * 200 with `fsize` = `size` and `hash` = the content's etag.
 */
export interface FetchJob {
  kind: 'fetch';
  port: number;
  accessKey: string;
  secretKey: string;
  url: string;
  bucket: string;
  key: string;
  size: number;
  count: number;
}

/**
 * The floor for a fetch: `count` times, Node's `fetch(url)` with the body written to a new file in `dir` as it
 * arrives, then one fsync (the file is removed afterwards, outside the timing). Each body must be `size` bytes.
 */
export interface DownloadFileJob {
  kind: 'download-file';
  url: string;
  dir: string;
  size: number;
  count: number;
}

export type Job =
  | UploadJob
  | GetRateJob
  | GetBulkJob
  | UploadStreamJob
  | ResumableV1Job
  | ResumableV2Job
  | FsWriteJob
  | ListJob
  | StatJob
  | BatchStatJob
  | FetchJob
  | DownloadFileJob
  | S3RateJob;

export interface JobResult {
  /** Requests answered 2xx with the expected body. */
  ok: number;
  errors: number;
  firstError?: string;
  /** Body bytes received (downloads) or sent (uploads). */
  bytes: number;
  elapsedMs: number;
  latency?: LatencySummary;
  /** Cores the client process kept busy during the job (1.0 = one full core). */
  clientCores: number;
  /** Listing jobs: entries (items + common prefixes) received in all answers. */
  entries?: number;
  /** Multi-step jobs (resumable uploads): milliseconds of each step, e.g. `blocksMs`, `finalMs`. */
  steps?: Record<string, number>;
}

export type ClientRequest = { id: number; job: Job };
export type ClientReply = { id: number; result?: JobResult; error?: string };
