/**
 * The shapes of one upload by the transfer client (upload.ts: form or multipart; resumable-v2.ts: resumable v2): what
 * to store, where the bytes come from, the shared options and the answer, and the etag check both paths end with.
 */
import type { Readable } from 'node:stream';
import type { KodoClient } from './client.js';
import { TransferError } from './errors.js';
import type { ResumeRecords } from './resume-records.js';
import type { RateLimiter } from './throttle.js';

/** What to store with the object. `meta`: names without `x-qn-meta-`; `fileType`: storage class 0..4. */
export interface PutAttributes {
  mimeType?: string;
  meta?: Record<string, string>;
  fileType?: number;
}

/** Shared settings of uploads. */
export interface UploadOptions {
  limiter?: RateLimiter;
  /** Called with each batch of bytes sent (for progress). */
  onBytes?: (n: number) => void;
  /** Called with the bytes of parts a resumed upload does not send again. */
  onSkipped?: (n: number) => void;
  /** Parts of one multipart upload in flight (default 4). */
  partConcurrency?: number;
  /** Resume records of multipart uploads (only for sources that can be read again: files). */
  records?: ResumeRecords;
}

/** A source of bytes: `open()` gives a fresh stream from the start; `resumeId` identifies it for resume records (with the remote, bucket and key). */
export interface ByteSource {
  size: number;
  /** Name sent as `fname`. */
  name: string;
  open(): Readable;
  /** Stable identity of the bytes (a file's size and mtime); absent: no resume record is kept. */
  resumeId?: string;
}

/** The answer of a successful upload. `resumedBytes`: bytes a resume record spared sending again. */
export interface PutResult {
  hash: string;
  fsize: number;
  resumedBytes?: number;
}

/** Compares the server's hash with the local one (throws on a mismatch). */
export function checkHash(client: KodoClient, bucket: string, key: string, remote: string | undefined, local: string, size: number): PutResult {
  if (remote !== local) throw new TransferError(`remote ${client.name}, ${bucket}:${key}: etag mismatch after upload (local ${local}, remote ${remote ?? 'none'})`);
  return { hash: local, fsize: size };
}
