/**
 * What an S3 operation receives and answers, without any framework type: server.ts builds an `S3Request` from the
 * HTTP request (bucket and key from the path or the virtual host, the caller from auth/), the route table
 * (routes.ts) picks the operation, and the operation returns an `S3Response` that server.ts writes.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Granary } from '../context.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import type { VerifiedChecksum } from './checksum.js';

/** The authenticated caller: an AccessKey of the Kodo key pairs, or none (anonymous, only on public buckets). */
export interface S3Caller {
  /** undefined: an anonymous request. */
  accessKey: string | undefined;
  /** How it was signed. */
  auth: 'v4-header' | 'v4-query' | 'v2-header' | 'v2-query' | 'anonymous';
}

/** A request to the S3 listener, as an operation sees it. */
export interface S3Request {
  method: string;
  /** Request-target as received (raw path and query). */
  rawUrl: string;
  /** Decoded query parameters (a parameter without `=` has the value ''). */
  query: URLSearchParams;
  /** Lower-case header names (Node's IncomingHttpHeaders). */
  headers: IncomingHttpHeaders;
  /** The bucket addressed (path style's first segment, or the virtual host's label); undefined for `/`. */
  bucket: string | undefined;
  /** The key addressed (decoded); undefined when the path names only a bucket (or nothing). */
  key: string | undefined;
  /** Request id (answered as `x-amz-request-id`). */
  reqId: string;
  caller: S3Caller;
  /** The client's address as the server sees it (GRANARY_TRUST_PROXY honoured: fastify's `request.ip`). */
  sourceIp?: string;
  /** Whether the request came over TLS (`https`, or a trusted proxy's `X-Forwarded-Proto`). */
  secure?: boolean;
  /** The bucket the route table's step (auth-step.ts) authorised for the caller (IAM or the bucket policy); undefined otherwise. */
  authorized?: BucketRecord;
  /**
   * The bucket record the route table's step read for this request (undefined: none such, or not read), which
   * `accessBucket` (access.ts) uses instead of reading it again. Grants nothing by itself.
   */
  prefetched?: BucketRecord | undefined;
  /**
   * Whether the caller sent `x-amz-bypass-governance-retention: true` and may bypass GOVERNANCE retention
   * (`s3:BypassGovernanceRetention`: the root key, the bucket's account keys, a sub-user its policies allow), set by
   * the route table's step (auth-step.ts `governanceBypass`). Absent = no bypass.
   */
  bypassGovernance?: boolean;
  /** For an object read (GET/HEAD of a key): the step's `getBucketAndObject` answer, which GetObject reuses. */
  prefetchedRead?: { bucket?: BucketRecord; object?: ObjectRecord };
  /**
   * The request body as content bytes: aws-chunked framing removed, chunk signatures, `x-amz-content-sha256` and
   * `x-amz-checksum-*` (header or trailer) verified as it is read; the stream fails with the S3 error
   * (SignatureDoesNotMatch, XAmzContentSHA256Mismatch, BadDigest, IncompleteBody) before it ends when one fails.
   */
  body(opts?: BodyOptions): Readable;
  /** The content length the client declared (`x-amz-decoded-content-length` for aws-chunked), if any, bytes. */
  contentLength: number | undefined;
  /**
   * The checksum algorithm and value the content was verified against (header or trailer), once read. After
   * `body({ deferCrc32: true })`, `crc32` is the content's CRC-32 as the operation computed it (BadDigest when the
   * client's CRC-32 differs).
   */
  checksum(crc32?: number): VerifiedChecksum | undefined;
}

/**
 * How an operation reads the body: `deferCrc32` when it computes the content's CRC-32 itself (objects/receive.ts
 * does, for the bitrot checksums) and passes it to `checksum()`, so a CRC-32 checksum costs no second pass.
 */
export interface BodyOptions {
  deferCrc32?: boolean;
}

/** The answer of an operation: status, headers (lower-case names) and an optional body. */
export interface S3Response {
  status: number;
  headers?: Record<string, string>;
  /** A string is sent as XML (`application/xml`) unless `content-type` is set. */
  body?: string | Buffer | Readable;
}

/** An operation: the handler a route-table row names. */
export type S3Operation = (g: Granary, req: S3Request) => Promise<S3Response>;

/** An XML answer with status 200 (or `status`). */
export function xmlResponse(body: string, status = 200, headers: Record<string, string> = {}): S3Response {
  return { status, headers: { 'content-type': 'application/xml', ...headers }, body };
}
