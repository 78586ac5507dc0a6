/**
 * Who sent an S3 request, and its body as verified content (docs/development/kodo-protocol.md §18.3, §18.4).
 *
 * The signature kind is told by the request: `Authorization: AWS4-HMAC-SHA256 …` (sigv4.ts, header),
 * `X-Amz-Signature`/`X-Amz-Algorithm` in the query (sigv4.ts, presigned), `Authorization: AWS ak:sig` or
 * `Signature`+`AWSAccessKeyId` in the query (sigv2.ts); none of these → anonymous (the route then allows only GET and
 * HEAD of public buckets). The keys are the Kodo API's (root and account pairs, auth/key-index.ts).
 *
 * The body's checks follow `x-amz-content-sha256`: a hex SHA-256 (checked as the body streams), `UNSIGNED-PAYLOAD`,
 * `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]` (signed aws-chunked, chunked.ts) or
 * `STREAMING-UNSIGNED-PAYLOAD-TRAILER`; any other value → InvalidArgument. An `x-amz-checksum-<algorithm>` header,
 * or the trailer `x-amz-trailer` announces, is checked too (checksum.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import type { Granary } from '../../context.js';
import { S3Errors } from '../errors.js';
import { checkChecksumForm, ContentCheckStream, isChecksumAlgorithm, type ChecksumAlgorithm, type ContentChecks, type VerifiedChecksum } from '../checksum.js';
import type { BodyOptions, S3Caller } from '../types.js';
import { AwsChunkedDecoder, type ChunkChain } from './chunked.js';
import { verifyV2Header, verifyV2Query } from './sigv2.js';
import { verifyV4Header, verifyV4Query, type SignedS3Request } from './sigv4.js';

/** The HTTP request as the authenticator needs it. */
export interface RawS3Request extends SignedS3Request {
  /** Node's merged headers (lower-case names). */
  merged: IncomingHttpHeaders;
  /** The body bytes as received. */
  stream: Readable;
}

/** The caller, and the request body as checked content. */
export interface Authenticated {
  caller: S3Caller;
  body(opts?: BodyOptions): Readable;
  contentLength: number | undefined;
  checksum(crc32?: number): VerifiedChecksum | undefined;
}

const STREAMING_SIGNED = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
const STREAMING_SIGNED_TRAILER = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER';
const STREAMING_UNSIGNED_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';
const UNSIGNED = 'UNSIGNED-PAYLOAD';

/** How the body is framed and checked. */
interface PayloadMode {
  sha256Hex?: string;
  chunked?: { chain?: ChunkChain; trailers: boolean };
}

/** The payload mode of an `x-amz-content-sha256` value; InvalidArgument for an unknown one. */
function payloadMode(hash: string | undefined, chain: ChunkChain | undefined): PayloadMode {
  if (hash === undefined || hash === UNSIGNED) return {};
  if (/^[0-9a-fA-F]{64}$/.test(hash)) return { sha256Hex: hash.toLowerCase() };
  if (hash === STREAMING_SIGNED && chain) return { chunked: { chain, trailers: false } };
  if (hash === STREAMING_SIGNED_TRAILER && chain) return { chunked: { chain, trailers: true } };
  if (hash === STREAMING_UNSIGNED_TRAILER) return { chunked: { trailers: true } };
  throw S3Errors.InvalidArgument(`x-amz-content-sha256 must be UNSIGNED-PAYLOAD, ${STREAMING_SIGNED}, ${STREAMING_SIGNED_TRAILER}, ${STREAMING_UNSIGNED_TRAILER} or a valid SHA-256 hex value`);
}

/** A header's first value. */
const first = (req: SignedS3Request, name: string): string | undefined => req.headers[name]?.[0];

/** A non-negative decimal header, or undefined when absent; InvalidArgument when malformed. */
function lengthHeader(req: SignedS3Request, name: string): number | undefined {
  const v = first(req, name);
  if (v === undefined) return undefined;
  if (!/^\d{1,16}$/.test(v)) throw S3Errors.InvalidArgument(`${name} must be a non-negative integer`);
  return Number(v);
}

/** The checksum to check: a header's value now, or a trailer's at the end (`x-amz-trailer`). */
function checksumOf(req: SignedS3Request, decoder: AwsChunkedDecoder | undefined): ContentChecks['checksum'] {
  // x-amz-checksum-mode, -type and -algorithm are not values. On CompleteMultipartUpload (POST with uploadId) the
  // x-amz-checksum-* headers are the whole object's checksum (ops/complete-multipart-upload.ts), not the body's.
  if (req.method === 'POST' && /[?&]uploadId=/.test(req.rawUrl)) return undefined;
  const names = Object.keys(req.headers).filter((n) => n.startsWith('x-amz-checksum-') && isChecksumAlgorithm(n.slice('x-amz-checksum-'.length)));
  if (names.length > 1) throw S3Errors.InvalidRequest('Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  if (names.length === 1) {
    const algorithm = names[0]!.slice('x-amz-checksum-'.length);
    if (!isChecksumAlgorithm(algorithm)) throw S3Errors.InvalidRequest(`Unsupported checksum header ${names[0]}`);
    const value = first(req, names[0]!) ?? '';
    checkChecksumForm(algorithm, value);
    return { algorithm, expected: () => value };
  }
  const trailer = first(req, 'x-amz-trailer')?.trim().toLowerCase();
  if (trailer === undefined || trailer === '') return undefined;
  const algorithm = trailer.startsWith('x-amz-checksum-') ? trailer.slice('x-amz-checksum-'.length) : '';
  if (!isChecksumAlgorithm(algorithm)) throw S3Errors.InvalidRequest(`Unsupported trailer ${trailer}`);
  if (!decoder) throw S3Errors.InvalidRequest('x-amz-trailer needs an aws-chunked body with trailers');
  const alg: ChecksumAlgorithm = algorithm;
  return {
    algorithm: alg,
    expected: () => {
      const v = decoder.trailers.get(trailer);
      if (v !== undefined) checkChecksumForm(alg, v);
      return v;
    },
  };
}

/** The body of a request as content: framing removed, every announced check applied (see the module comment). */
function bodyOf(req: RawS3Request, mode: PayloadMode): Omit<Authenticated, 'caller'> {
  const decodedLength = lengthHeader(req, 'x-amz-decoded-content-length');
  const decoder = mode.chunked
    ? new AwsChunkedDecoder({ ...mode.chunked, ...(decodedLength !== undefined ? { decodedLength } : {}) })
    : undefined;
  const checksum = checksumOf(req, decoder);
  const checks: ContentChecks = {
    ...(mode.sha256Hex !== undefined ? { sha256Hex: mode.sha256Hex } : {}),
    ...(checksum ? { checksum } : {}),
  };
  const needCheck = checks.sha256Hex !== undefined || checks.checksum !== undefined;
  const check = needCheck ? new ContentCheckStream(checks) : undefined;
  let opened: Readable | undefined;
  return {
    contentLength: decoder ? decodedLength : lengthHeader(req, 'content-length'),
    body: (opts) => {
      if (opened) return opened;
      if (check && opts?.deferCrc32) check.deferCrc32 = true;
      const stages = [decoder, check].filter((s): s is NonNullable<typeof s> => s !== undefined);
      if (stages.length === 0) return (opened = req.stream);
      // pipeline() keeps the request's socket for the answer when a stage fails (objects/receive.ts does the same).
      opened = stages.length === 1
        ? pipeline(req.stream, stages[0]!, () => undefined)
        : pipeline(req.stream, stages[0]!, stages[1]!, () => undefined);
      return opened;
    },
    checksum: (crc32) => check?.settle(crc32),
  };
}

/** The anonymous caller of a request that is not authenticated at all (CORS preflights, routes.ts auth `none`). */
export function unauthenticated(_g: Granary, req: RawS3Request): Authenticated {
  return { caller: { accessKey: undefined, auth: 'anonymous' }, ...bodyOf(req, payloadMode(undefined, undefined)) };
}

/**
 * Authenticates `req` at `nowMs` (see the module comment). `vhostBucket` is the bucket named by a virtual host (it
 * is part of what SigV2 signs). Throws the S3Errors of sigv4.ts and sigv2.ts; AccessDenied for an unknown
 * Authorization scheme.
 */
export function authenticate(g: Granary, req: RawS3Request, nowMs: number, vhostBucket: string | undefined): Authenticated {
  const authorization = first(req, 'authorization');
  const query = req.rawUrl.includes('?') ? req.rawUrl.slice(req.rawUrl.indexOf('?') + 1) : '';
  const has = (name: string): boolean => new RegExp(`(^|&)${name}=`).test(query);
  if (authorization !== undefined && authorization.trim() !== '') {
    if (authorization.startsWith('AWS4-HMAC-SHA256')) {
      const v = verifyV4Header(req, g.secretOf, nowMs, g.config.region);
      return { caller: { accessKey: v.accessKey, auth: 'v4-header' }, ...bodyOf(req, payloadMode(v.payloadHash, v.chain)) };
    }
    if (authorization.startsWith('AWS ')) {
      const v = verifyV2Header(req, g.secretOf, nowMs, vhostBucket);
      return { caller: { accessKey: v.accessKey, auth: 'v2-header' }, ...bodyOf(req, payloadMode(undefined, undefined)) };
    }
    throw S3Errors.AccessDenied('Unsupported Authorization Type');
  }
  if (has('X-Amz-Signature') || has('X-Amz-Algorithm') || has('X-Amz-Credential')) {
    const v = verifyV4Query(req, g.secretOf, nowMs, g.config.region);
    return { caller: { accessKey: v.accessKey, auth: 'v4-query' }, ...bodyOf(req, payloadMode(v.payloadHash, v.chain)) };
  }
  if (has('Signature') || has('AWSAccessKeyId')) {
    const v = verifyV2Query(req, g.secretOf, nowMs, vhostBucket);
    return { caller: { accessKey: v.accessKey, auth: 'v2-query' }, ...bodyOf(req, payloadMode(undefined, undefined)) };
  }
  return { caller: { accessKey: undefined, auth: 'anonymous' }, ...bodyOf(req, payloadMode(undefined, undefined)) };
}
