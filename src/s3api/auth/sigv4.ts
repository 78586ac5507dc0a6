/**
 * AWS Signature Version 4 of the S3 listener (docs/development/kodo-protocol.md §18.3): the `Authorization:
 * AWS4-HMAC-SHA256 Credential=<ak>/<yyyymmdd>/<region>/s3/aws4_request, SignedHeaders=…, Signature=…` header and
 * the presigned query (`X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`,
 * `X-Amz-Signature`).
 *
 * Canonical request = method, canonical URI, canonical query, canonical headers, signed header names, payload hash
 * (one per line); string to sign = `AWS4-HMAC-SHA256`, the request time, the scope, hex SHA-256 of the canonical
 * request; signature = hex HMAC-SHA256 under the key derived from `AWS4<secret>` through date, region, `s3` and
 * `aws4_request`. Two canonical URIs are tried, both as S3 itself never normalises paths: the path exactly as
 * received, and the decoded path re-encoded the AWS way (every byte but `A-Za-z0-9-._~` and `/` as `%XX`), since
 * clients differ in what they leave unencoded. A canonical request with non-ASCII header values is tried as the
 * raw bytes received and as the UTF-8 of Node's text (signed-bytes.ts). Signatures are compared in constant time.
 *
 * Errors (S3Error): AuthorizationHeaderMalformed / AuthorizationQueryParametersError (400) for a malformed
 * credential or a region this server does not accept (region.ts), InvalidAccessKeyId (403), SignatureDoesNotMatch
 * (403), RequestTimeTooSkewed (403) beyond 15 minutes, AccessDenied (403) for an expired presigned URL (or
 * `X-Amz-Expires=0`), AuthorizationQueryParametersError with 403 for `X-Amz-Expires` negative or over 604800,
 * InvalidRequest (400) for a header-signed request without `x-amz-content-sha256`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { SecretLookup } from '../../auth/management.js';
import { S3Error, S3Errors } from '../errors.js';
import { signedBytesCandidates } from './signed-bytes.js';
import { acceptsSigningRegion, s3RegionOf } from '../region.js';

/** Allowed difference between the request time and the server's clock, ms (S3's 15 minutes). */
export const CLOCK_WINDOW_MS = 15 * 60 * 1000;
/** Longest validity of a presigned URL, seconds (7 days). */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
/** The hex SHA-256 of no bytes. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** What the verifiers need from a request (no framework types). */
export interface SignedS3Request {
  method: string;
  /** Request-target as received. */
  rawUrl: string;
  /** Every value of each header in order (Node's `headersDistinct`), lower-case names. */
  headers: Record<string, string[] | undefined>;
}

/** A verified SigV4 request: the caller, and what the chunk and trailer signatures of its body chain from. */
export interface V4Verified {
  accessKey: string;
  /** `x-amz-content-sha256` (header) or `UNSIGNED-PAYLOAD` (presigned without it). */
  payloadHash: string;
  /** For aws-chunked bodies: the seed signature, the signing key, the request time and the scope. */
  chain: { seedSignature: string; signingKey: Buffer; amzDate: string; scope: string };
}

const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** Milliseconds of an ISO 8601 basic time (`20261127T210500Z`), or NaN. */
export function parseAmzDate(text: string): number {
  const m = AMZ_DATE.exec(text);
  if (!m) return NaN;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  return Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
}

/** AWS URI encoding: every byte but `A-Za-z0-9-._~` as `%XX` (upper case); `/` kept when `keepSlash`. */
export function awsUriEncode(text: string, keepSlash: boolean): string {
  const out = encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return keepSlash ? out.replace(/%2F/g, '/') : out;
}

/** Decodes percent-escapes of a URI component; undefined when malformed. */
export function tryDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The raw query's parameters as [name, value] pairs, decoded (`+` stays `+`); undefined when an escape is malformed. */
export function rawQueryPairs(rawQuery: string): Array<[string, string]> | undefined {
  const pairs: Array<[string, string]> = [];
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = tryDecode(eq < 0 ? part : part.slice(0, eq));
    const value = tryDecode(eq < 0 ? '' : part.slice(eq + 1));
    if (name === undefined || value === undefined) return undefined;
    pairs.push([name, value]);
  }
  return pairs;
}

/** The canonical query string: names and values AWS-encoded, sorted by name then value; `exclude` left out. */
export function canonicalQuery(pairs: Array<[string, string]>, exclude?: string): string {
  return pairs
    .filter(([k]) => k !== exclude)
    .map(([k, v]) => [awsUriEncode(k, false), awsUriEncode(v, false)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** The canonical URIs to try for a raw path (see the module comment): as received, and re-encoded. */
export function canonicalUris(rawPath: string): string[] {
  const decoded = tryDecode(rawPath);
  const reencoded = decoded === undefined ? undefined : awsUriEncode(decoded, true);
  return reencoded === undefined || reencoded === rawPath ? [rawPath] : [rawPath, reencoded];
}

/** `name:value\n` lines of the signed headers: values trimmed, inner runs of spaces collapsed, repeats joined by `,`. */
function canonicalHeaders(headers: SignedS3Request['headers'], names: string[]): string {
  return names
    .map((n) => `${n}:${(headers[n] ?? []).map((v) => v.trim().replace(/ +/g, ' ')).join(',')}\n`)
    .join('');
}

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/**
 * Derived signing keys by secret, date, region and service: a key serves every request of its day (four HMACs saved
 * per request); bounded, least recently used out. A rotated secret is a different entry.
 */
const signingKeys = new LRUCache<string, Buffer>({ max: 1024 });

/** The SigV4 signing key of `secret` for a date (yyyymmdd) and region (cached: `signingKeys`). */
export function signingKey(secret: string, date: string, region: string, service = 's3'): Buffer {
  const id = `${date}\0${region}\0${service}\0${secret}`;
  let key = signingKeys.get(id);
  if (!key) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
    signingKeys.set(id, key);
  }
  return key;
}

/** hex SHA-256 of a string or bytes. */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Constant-time comparison of two hex signatures (lower-cased first). */
export function sameHex(received: string, expected: string): boolean {
  const a = Buffer.from(received.toLowerCase(), 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A parsed credential `<ak>/<date>/<region>/<service>/aws4_request`. */
interface Credential {
  accessKey: string;
  date: string;
  region: string;
  service: string;
}

function parseCredential(text: string, malformed: (why: string) => Error): Credential {
  const parts = text.split('/');
  // The AccessKey itself may not contain '/', but be strict about the four trailing parts.
  if (parts.length !== 5 || parts[4] !== 'aws4_request') throw malformed(`the credential '${text}' is malformed: expecting '<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request'`);
  const [accessKey, date, region, service] = parts as [string, string, string, string];
  if (!/^\d{8}$/.test(date)) throw malformed(`invalid credential date '${date}'`);
  if (service !== 's3') throw malformed(`the service '${service}' is wrong; expecting 's3'`);
  return { accessKey, date, region, service };
}

/** Checks the credential's region against the server's (Kodo id `serverRegion`). */
function checkRegion(cred: Credential, serverRegion: string, malformed: (why: string) => Error): void {
  if (!acceptsSigningRegion(serverRegion, cred.region)) {
    throw malformed(`the region '${cred.region}' is wrong; expecting '${s3RegionOf(serverRegion)}'`);
  }
}

/** The common check of a computed signature against the received one, over every canonical URI candidate. */
function verifyCandidates(
  req: SignedS3Request,
  build: (uri: string) => string,
  key: Buffer,
  amzDate: string,
  scope: string,
  signature: string,
): boolean {
  const path = req.rawUrl.split('?', 1)[0] ?? '/';
  return canonicalUris(path).some((uri) =>
    signedBytesCandidates(build(uri)).some((canonical) => {
      const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonical)}`;
      return sameHex(signature, hmac(key, stringToSign).toString('hex'));
    }),
  );
}

const first = (req: SignedS3Request, name: string): string | undefined => req.headers[name]?.[0];

/**
 * Verifies a header-signed SigV4 request (`Authorization: AWS4-HMAC-SHA256 …`) at `nowMs`; see the module comment
 * for the errors. `serverRegion` is Granary's Kodo region id.
 */
export function verifyV4Header(req: SignedS3Request, secretOf: SecretLookup, nowMs: number, serverRegion: string): V4Verified {
  const header = first(req, 'authorization') ?? '';
  const malformed = (why: string): Error => S3Errors.AuthorizationHeaderMalformed(`The authorization header is malformed; ${why}.`);
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(header.trim());
  if (!m) throw malformed('expecting AWS4-HMAC-SHA256');
  const fields = new Map<string, string>();
  for (const part of m[1]!.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) throw malformed(`'${part.trim()}' is not a name=value pair`);
    fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credText = fields.get('Credential');
  const signedText = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credText === undefined || signedText === undefined || signature === undefined) {
    throw malformed('Credential, SignedHeaders and Signature are all required');
  }
  const cred = parseCredential(credText, malformed);
  checkRegion(cred, serverRegion, malformed);
  const signedHeaders = signedText.split(';');
  if (!signedHeaders.includes('host') || signedHeaders.some((h) => h === '' || h !== h.toLowerCase())) {
    throw malformed('SignedHeaders must be lower-case names, host among them');
  }
  const secret = secretOf(cred.accessKey);
  if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
  const amzDate = first(req, 'x-amz-date') ?? '';
  let timeMs = parseAmzDate(amzDate);
  let dateText = amzDate;
  if (Number.isNaN(timeMs)) {
    // Without x-amz-date the Date header is the request time (and must then be signed as `date`).
    const d = first(req, 'date');
    timeMs = d ? Date.parse(d) : NaN;
    if (Number.isNaN(timeMs)) throw S3Errors.AccessDenied('AWS authentication requires a valid Date or x-amz-date header');
    dateText = new Date(timeMs).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  }
  if (Math.abs(nowMs - timeMs) > CLOCK_WINDOW_MS) throw S3Errors.RequestTimeTooSkewed();
  if (dateText.slice(0, 8) !== cred.date) throw malformed(`the credential date '${cred.date}' is not the request date`);
  const payloadHash = first(req, 'x-amz-content-sha256');
  if (payloadHash === undefined) throw S3Errors.InvalidRequest('Missing required header for this request: x-amz-content-sha256');
  const scope = `${cred.date}/${cred.region}/s3/aws4_request`;
  const key = signingKey(secret, cred.date, cred.region);
  const pairs = rawQueryPairs(req.rawUrl.includes('?') ? req.rawUrl.slice(req.rawUrl.indexOf('?') + 1) : '');
  if (!pairs) throw S3Errors.InvalidURI();
  const query = canonicalQuery(pairs);
  const headersText = canonicalHeaders(req.headers, signedHeaders);
  const ok = verifyCandidates(
    req,
    (uri) => `${req.method}\n${uri}\n${query}\n${headersText}\n${signedText}\n${payloadHash}`,
    key,
    dateText,
    scope,
    signature,
  );
  if (!ok) throw S3Errors.SignatureDoesNotMatch();
  return { accessKey: cred.accessKey, payloadHash, chain: { seedSignature: signature.toLowerCase(), signingKey: key, amzDate: dateText, scope } };
}

/** Verifies a presigned SigV4 URL (`X-Amz-Signature` in the query) at `nowMs`; see the module comment. */
export function verifyV4Query(req: SignedS3Request, secretOf: SecretLookup, nowMs: number, serverRegion: string): V4Verified {
  const malformed = (why: string): Error => S3Errors.AuthorizationQueryParametersError(`${why}.`);
  const pairs = rawQueryPairs(req.rawUrl.includes('?') ? req.rawUrl.slice(req.rawUrl.indexOf('?') + 1) : '');
  if (!pairs) throw S3Errors.InvalidURI();
  const q = new Map(pairs);
  if (q.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') throw malformed('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  const credText = q.get('X-Amz-Credential');
  const amzDate = q.get('X-Amz-Date');
  const expiresText = q.get('X-Amz-Expires');
  const signedText = q.get('X-Amz-SignedHeaders');
  const signature = q.get('X-Amz-Signature');
  if (!credText || !amzDate || !expiresText || !signedText || !signature) {
    throw malformed('Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters');
  }
  const cred = parseCredential(credText, malformed);
  checkRegion(cred, serverRegion, malformed);
  const timeMs = parseAmzDate(amzDate);
  if (Number.isNaN(timeMs)) throw malformed('X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'"');
  // An expiry out of range is refused as S3 refuses it: AuthorizationQueryParametersError with status 403, like
  // the URL's other time checks (0 is a URL expired as soon as signed: AccessDenied below).
  const expiresRefused = (why: string): Error => new S3Error('AuthorizationQueryParametersError', `${why}.`, undefined, 403);
  if (!/^-?\d{1,12}$/.test(expiresText)) throw malformed('X-Amz-Expires should be a number');
  const expires = Number(expiresText);
  if (expires < 0) throw expiresRefused('X-Amz-Expires must be non-negative');
  if (expires > MAX_PRESIGN_SECONDS) throw expiresRefused('X-Amz-Expires must be less than a week (in seconds) that is 604800');
  const signedHeaders = signedText.split(';');
  if (!signedHeaders.includes('host')) throw malformed('X-Amz-SignedHeaders must include host');
  const secret = secretOf(cred.accessKey);
  if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
  if (timeMs - nowMs > CLOCK_WINDOW_MS) throw S3Errors.AccessDenied('Request is not valid yet');
  if (expires === 0 || nowMs > timeMs + expires * 1000) throw S3Errors.AccessDenied('Request has expired');
  if (amzDate.slice(0, 8) !== cred.date) throw malformed(`the credential date '${cred.date}' is not the request date`);
  const payloadHash = q.get('X-Amz-Content-Sha256') ?? first(req, 'x-amz-content-sha256') ?? 'UNSIGNED-PAYLOAD';
  const scope = `${cred.date}/${cred.region}/s3/aws4_request`;
  const key = signingKey(secret, cred.date, cred.region);
  const query = canonicalQuery(pairs, 'X-Amz-Signature');
  const headersText = canonicalHeaders(req.headers, signedHeaders);
  const ok = verifyCandidates(
    req,
    (uri) => `${req.method}\n${uri}\n${query}\n${headersText}\n${signedText}\n${payloadHash}`,
    key,
    amzDate,
    scope,
    signature,
  );
  if (!ok) throw S3Errors.SignatureDoesNotMatch();
  return { accessKey: cred.accessKey, payloadHash, chain: { seedSignature: signature.toLowerCase(), signingKey: key, amzDate, scope } };
}
