/**
 * Clients of Granary's S3 listener for tests: the AWS SDK for JavaScript v3 pointed at it (path style, default
 * checksums), and raw HTTP/1.1 requests signed here with SigV4 (header), SigV2, or not at all — with aws-chunked
 * bodies whose chunk and trailer signatures the test controls — for what the SDK never sends.
 */
import { createHash, createHmac } from 'node:crypto';
import * as http from 'node:http';
import { S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { crc32 } from '@node-rs/crc32';

/** An SDK client for `endpoint` with the key pair (`region` defaults to z0's S3 name). */
export function s3Client(endpoint: string, ak: string, sk: string, region = 'cn-east-1'): S3Client {
  return new S3Client({ endpoint, region, forcePathStyle: true, credentials: { accessKeyId: ak, secretAccessKey: sk } });
}

/** The S3 error code of a rejected SDK call ('no error' when it resolved). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof S3ServiceException) return err.name;
    throw err;
  }
  return 'no error';
}

/** A raw answer. */
export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** The `<Code>` of an XML error body, or ''. */
export function errorCode(answer: RawAnswer): string {
  return /<Code>([^<]*)<\/Code>/.exec(answer.body)?.[1] ?? '';
}

/** Sends one request to `base` (`http://host:port`) with exactly these headers and body. */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string>, body?: Buffer | string): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** `20261127T210500Z` of a time. */
export function amzDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

/** What a SigV4 signature of a request needs. */
export interface SignV4Input {
  method: string;
  /** Path as sent (already encoded) plus optional `?query` (already encoded, any order). */
  path: string;
  host: string;
  headers?: Record<string, string>;
  /** `x-amz-content-sha256`. */
  payloadHash: string;
  ak: string;
  sk: string;
  region?: string;
  nowMs?: number;
}

/** The signing facts of a signed request: its headers, and what its chunks chain from. */
export interface SignedV4 {
  headers: Record<string, string>;
  seed: string;
  key: Buffer;
  date: string;
  scope: string;
}

/** Signs a request with SigV4 (every header given is signed, host and the x-amz-* ones added). */
export function signV4(input: SignV4Input): SignedV4 {
  const date = amzDate(input.nowMs ?? Date.now());
  const region = input.region ?? 'cn-east-1';
  const headers: Record<string, string> = {
    ...input.headers,
    host: input.host,
    'x-amz-date': date,
    'x-amz-content-sha256': input.payloadHash,
  };
  const names = Object.keys(headers).map((n) => n.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const [path, query = ''] = input.path.split('?') as [string, string?];
  const canonicalQuery = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => (p.includes('=') ? p : `${p}=`))
    .sort()
    .join('&');
  const canonical = [input.method, path, canonicalQuery, names.map((n) => `${n}:${lower[n]!.trim()}\n`).join(''), names.join(';'), input.payloadHash].join('\n');
  const scope = `${date.slice(0, 8)}/${region}/s3/aws4_request`;
  const key = hmac(hmac(hmac(hmac(`AWS4${input.sk}`, date.slice(0, 8)), region), 's3'), 'aws4_request');
  const seed = hmac(key, `AWS4-HMAC-SHA256\n${date}\n${scope}\n${hex(canonical)}`).toString('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${input.ak}/${scope}, SignedHeaders=${names.join(';')}, Signature=${seed}`;
  return { headers, seed, key, date, scope };
}

/** The hex SHA-256 of bytes (a payload hash). */
export function payloadHash(body: Buffer | string): string {
  return hex(body);
}

/** base64 CRC-32 (big-endian) of bytes, as `x-amz-checksum-crc32`. */
export function crc32Base64(body: Buffer): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc32(body) >>> 0);
  return b.toString('base64');
}

/**
 * An aws-chunked body of `data` in chunks of `chunkSize`: signed along `signed`'s chain when given (the signature of
 * chunk `tamper`, if set, replaced by a wrong one), unsigned otherwise; `trailers` after the last chunk (signed
 * with the chain when signed).
 */
export function chunkedBody(
  data: Buffer,
  chunkSize: number,
  opts: { signed?: SignedV4; trailers?: Record<string, string>; tamper?: number } = {},
): Buffer {
  const parts: Buffer[] = [];
  let previous = opts.signed?.seed ?? '';
  const pieces: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunkSize) pieces.push(data.subarray(i, i + chunkSize));
  pieces.push(Buffer.alloc(0));
  pieces.forEach((piece, i) => {
    let ext = '';
    if (opts.signed) {
      const s = opts.signed;
      const sig = hmac(s.key, `AWS4-HMAC-SHA256-PAYLOAD\n${s.date}\n${s.scope}\n${previous}\n${hex('')}\n${hex(piece)}`).toString('hex');
      previous = sig;
      ext = `;chunk-signature=${opts.tamper === i ? '0'.repeat(64) : sig}`;
    }
    parts.push(Buffer.from(`${piece.length.toString(16)}${ext}\r\n`), piece);
    if (piece.length > 0) parts.push(Buffer.from('\r\n'));
  });
  if (opts.trailers) {
    const lines = Object.entries(opts.trailers).map(([k, v]) => `${k}:${v}\n`).join('');
    parts.push(Buffer.from(lines.replace(/\n/g, '\r\n')));
    if (opts.signed) {
      const s = opts.signed;
      const sig = hmac(s.key, `AWS4-HMAC-SHA256-TRAILER\n${s.date}\n${s.scope}\n${previous}\n${hex(lines)}`).toString('hex');
      parts.push(Buffer.from(`x-amz-trailer-signature:${sig}\r\n`));
    }
  }
  parts.push(Buffer.from('\r\n'));
  return Buffer.concat(parts);
}

/** SigV2 `Authorization` of a request (`resource` = `/<bucket>/<key>` plus sub-resources). */
export function signV2(method: string, resource: string, headers: Record<string, string>, ak: string, sk: string): string {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const amz = Object.keys(lower)
    .filter((k) => k.startsWith('x-amz-'))
    .sort()
    .map((k) => `${k}:${lower[k]}\n`)
    .join('');
  const text = `${method}\n${lower['content-md5'] ?? ''}\n${lower['content-type'] ?? ''}\n${lower['x-amz-date'] ? '' : (lower.date ?? '')}\n${amz}${resource}`;
  return `AWS ${ak}:${createHmac('sha1', sk).update(text, 'utf8').digest('base64')}`;
}
