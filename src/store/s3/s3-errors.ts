/**
 * S3 failures → the errors the BlobStore port promises: a missing object is `code: 'ENOENT'` (what callers test
 * for, like the file system's), everything else `code: 'S3_<Code>'` (`S3_AccessDenied`, `S3_NoSuchBucket`,
 * `S3_SlowDown`, `S3_ECONNREFUSED`, `S3_Timeout` for a call past its bound, …), which `storageError` (src/errors.ts) maps to 599 `storageRemote`
 * (`S3_QuotaExceeded` to 599 `storageFull`). The message names the operation and the S3 key (for the log; the
 * client only sees the catalogue message with the code).
 */

/** An S3 call that failed, with a `code` the rest of Granary understands. */
export class S3StoreError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'S3StoreError';
  }
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Whether `err` is a call that ran past one of its bounds (store/s3/s3-clients.ts): the deadline of the call, the
 * silence of its connection, getting a connection (the SDK's `TimeoutError`), or the kernel's ETIMEDOUT.
 */
export function isS3Timeout(err: unknown): boolean {
  const e = (err ?? {}) as SdkErrorShape;
  return e.name === 'TimeoutError' || e.code === 'ETIMEDOUT';
}

/**
 * The S3 error code (`NoSuchKey`, `AccessDenied`…), `Timeout`, or the network errno of `err`, reduced to
 * [A-Za-z0-9_].
 */
function codeOf(err: SdkErrorShape): string {
  if (isS3Timeout(err)) return 'Timeout';
  const raw =
    typeof err.code === 'string' ? err.code : typeof err.name === 'string' && err.name !== 'Error' ? err.name : 'Unknown';
  return raw.replace(/[^A-Za-z0-9_]/g, '') || 'Unknown';
}

/**
 * Wraps an error thrown by an S3 call on `key` during `what` ("GetObject"…). `NoSuchKey`, and a 404 `NotFound`
 * (the body-less answer to HEAD), become ENOENT; a missing bucket is not ENOENT (a misconfiguration: 599).
 */
export function fromS3(err: unknown, what: string, key: string): S3StoreError {
  if (err instanceof S3StoreError) return err;
  const e = (err ?? {}) as SdkErrorShape;
  const name = codeOf(e);
  const status = e.$metadata?.httpStatusCode;
  const missing = name === 'NoSuchKey' || (name === 'NotFound' && status === 404);
  const code = missing ? 'ENOENT' : `S3_${name}`;
  const detail = typeof e.message === 'string' && e.message !== '' ? `: ${e.message}` : '';
  return new S3StoreError(code, `S3 ${what} ${key} failed (${name}${status ? ` ${status}` : ''})${detail}`, { cause: err });
}
