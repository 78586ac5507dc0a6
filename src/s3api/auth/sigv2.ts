/**
 * AWS Signature Version 2 of the S3 listener, for s3cmd and older tools (docs/development/kodo-protocol.md §18.3):
 * `Authorization: AWS <ak>:<signature>` and the query form (`AWSAccessKeyId`, `Signature`, `Expires`).
 *
 * String to sign: method, Content-MD5, Content-Type, Date (the `Expires` value for the query form; empty when
 * `x-amz-date` is sent), then the `x-amz-*` headers (lower-case, sorted, `name:value` lines, repeats joined by
 * `,`), then the resource: `/<bucket>/<key>` (the raw path of a path-style request, `/<bucket>` + the path of a
 * virtual-hosted one) plus the sub-resources of the query, sorted (`?acl`, `?uploadId=…`, `?response-content-type=…`).
 * Signature = base64 HMAC-SHA1 under the SecretKey, compared in constant time. Both the raw and the decoded path
 * are tried (clients differ).
 *
 * Errors (S3Error): InvalidArgument for a malformed header, InvalidAccessKeyId, SignatureDoesNotMatch,
 * RequestTimeTooSkewed (a Date more than 15 minutes off), AccessDenied (an expired query signature).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretLookup } from '../../auth/management.js';
import { S3Errors } from '../errors.js';
import { CLOCK_WINDOW_MS, rawQueryPairs, tryDecode, type SignedS3Request } from './sigv4.js';
import { signedBytesCandidates } from './signed-bytes.js';

/** Query parameters that are part of the SigV2 resource. */
const SUB_RESOURCES = new Set([
  'acl', 'cors', 'delete', 'lifecycle', 'location', 'logging', 'notification', 'partNumber', 'policy',
  'requestPayment', 'restore', 'tagging', 'torrent', 'uploadId', 'uploads', 'versionId', 'versioning', 'versions',
  'website', 'response-content-type', 'response-content-language', 'response-expires', 'response-cache-control',
  'response-content-disposition', 'response-content-encoding',
]);

const first = (req: SignedS3Request, name: string): string => req.headers[name]?.[0] ?? '';

/** The `x-amz-*` lines of the string to sign. */
function amzHeaders(req: SignedS3Request): string {
  return Object.keys(req.headers)
    .filter((n) => n.startsWith('x-amz-'))
    .sort()
    .map((n) => `${n}:${(req.headers[n] ?? []).map((v) => v.trim()).join(',')}\n`)
    .join('');
}

/** The sub-resource part of the resource (`?acl&uploadId=1`), from the decoded query pairs. */
function subResources(pairs: Array<[string, string]>): string {
  const picked = pairs.filter(([k]) => SUB_RESOURCES.has(k)).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (picked.length === 0) return '';
  return '?' + picked.map(([k, v]) => (v === '' ? k : `${k}=${v}`)).join('&');
}

function sameBase64(received: string, expected: string): boolean {
  const a = Buffer.from(received, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The request's resources to try: the raw path and the decoded path, each prefixed with `/<bucket>` when
 * virtual-hosted, and `/<bucket>/` for a path-style bucket request.
 */
function resources(req: SignedS3Request, vhostBucket: string | undefined, pairs: Array<[string, string]>): string[] {
  const path = req.rawUrl.split('?', 1)[0] ?? '/';
  const decoded = tryDecode(path);
  const prefix = vhostBucket === undefined ? '' : `/${vhostBucket}`;
  const sub = subResources(pairs);
  const paths = decoded === undefined || decoded === path ? [path] : [path, decoded];
  // A path-style bucket (`/<bucket>`): botocore signs it as `/<bucket>/`, the bucket resource's canonical form.
  if (vhostBucket === undefined && /^\/[^/]+$/.test(path)) paths.push(`${path}/`);
  return paths.map((p) => `${prefix}${p}${sub}`);
}

function check(req: SignedS3Request, secret: string, dateLine: string, signature: string, vhostBucket: string | undefined, pairs: Array<[string, string]>): boolean {
  const head = `${req.method}\n${first(req, 'content-md5')}\n${first(req, 'content-type')}\n${dateLine}\n${amzHeaders(req)}`;
  return resources(req, vhostBucket, pairs).some((resource) =>
    signedBytesCandidates(head + resource).some((bytes) => sameBase64(signature, createHmac('sha1', secret).update(bytes).digest('base64'))),
  );
}

/** Verifies `Authorization: AWS <ak>:<signature>` at `nowMs`; `vhostBucket` is the virtual host's bucket, if any. */
export function verifyV2Header(req: SignedS3Request, secretOf: SecretLookup, nowMs: number, vhostBucket: string | undefined): { accessKey: string } {
  const m = /^AWS ([^:\s]+):(\S+)$/.exec(first(req, 'authorization').trim());
  if (!m) throw S3Errors.InvalidArgument('AWS authorization header is invalid. Expected AwsAccessKeyId:signature');
  const [, accessKey, signature] = m as unknown as [string, string, string];
  const secret = secretOf(accessKey);
  if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
  const amzDate = first(req, 'x-amz-date');
  // An x-amz-date header sent, even empty, is the request time (S3: an empty one is AccessDenied, not the Date).
  const hasAmzDate = req.headers['x-amz-date'] !== undefined;
  const timeMs = Date.parse(hasAmzDate ? amzDate : first(req, 'date'));
  if (Number.isNaN(timeMs) || timeMs < 0) throw S3Errors.AccessDenied('AWS authentication requires a valid Date or x-amz-date header');
  if (Math.abs(nowMs - timeMs) > CLOCK_WINDOW_MS) throw S3Errors.RequestTimeTooSkewed();
  const pairs = rawQueryPairs(req.rawUrl.includes('?') ? req.rawUrl.slice(req.rawUrl.indexOf('?') + 1) : '');
  if (!pairs) throw S3Errors.InvalidURI();
  // With x-amz-date, the Date line is empty (the header is among the x-amz-* lines).
  if (!check(req, secret, hasAmzDate ? '' : first(req, 'date'), signature, vhostBucket, pairs)) throw S3Errors.SignatureDoesNotMatch();
  return { accessKey };
}

/** Verifies a SigV2 query signature (`AWSAccessKeyId`, `Signature`, `Expires` in Unix seconds) at `nowMs`. */
export function verifyV2Query(req: SignedS3Request, secretOf: SecretLookup, nowMs: number, vhostBucket: string | undefined): { accessKey: string } {
  const pairs = rawQueryPairs(req.rawUrl.includes('?') ? req.rawUrl.slice(req.rawUrl.indexOf('?') + 1) : '');
  if (!pairs) throw S3Errors.InvalidURI();
  const q = new Map(pairs);
  const accessKey = q.get('AWSAccessKeyId') ?? '';
  const signature = q.get('Signature') ?? '';
  const expires = q.get('Expires') ?? '';
  if (!accessKey || !signature || !/^\d{1,12}$/.test(expires)) {
    throw S3Errors.AccessDenied('Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters');
  }
  const secret = secretOf(accessKey);
  if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
  if (nowMs > Number(expires) * 1000) throw S3Errors.AccessDenied('Request has expired');
  if (!check(req, secret, expires, signature, vhostBucket, pairs)) throw S3Errors.SignatureDoesNotMatch();
  return { accessKey };
}
