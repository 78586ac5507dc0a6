/** Messages between the bench (parent) and the load-generator child (client.ts). */
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

/** One form upload of `size` bytes generated on the fly and streamed. */
export interface UploadStreamJob {
  kind: 'upload-stream';
  port: number;
  token: string;
  key: string;
  size: number;
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

export type Job = UploadJob | GetRateJob | GetBulkJob | UploadStreamJob | ListJob | StatJob | BatchStatJob;

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
}

export type ClientRequest = { id: number; job: Job };
export type ClientReply = { id: number; result?: JobResult; error?: string };
