/**
 * Plain-HTTP helpers for e2e tests: raw requests with a custom Host header (node:http), management requests
 * signed by hand with the SDK's own signing helpers, and an SDK form upload shortcut.
 */
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import qiniu from 'qiniu';
import { sdk, type TestServer } from './server.js';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RawRequestOptions {
  port: number;
  method?: string;
  /** Request-target sent as is (already percent-encoded). */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/** One HTTP request to 127.0.0.1:<port> with exactly the given request-target and headers (e.g. `Host`). */
export function rawRequest(opts: RawRequestOptions): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: opts.port, method: opts.method ?? 'GET', path: opts.path, headers: opts.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** `YYYYMMDDTHHmmssZ` of a date (the X-Qiniu-Date format). */
export function qiniuDate(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');
}

export interface SignedOptions {
  method?: string;
  /** Path + query, e.g. `/v2/domains?tbl=b`. */
  path: string;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** `Qiniu` (v2, default) or `QBox` (v1). */
  scheme?: 'Qiniu' | 'QBox';
  mac?: qiniu.auth.digest.Mac;
  /** Aborts the request (the client leaves). */
  signal?: AbortSignal;
}

/** A management request signed with `qiniu.util.generateAccessTokenV2` / `generateAccessToken`. */
export async function signedFetch(s: TestServer, opts: SignedOptions): Promise<Response> {
  const url = `${s.url}${opts.path}`;
  const method = opts.method ?? 'POST';
  const contentType = opts.contentType ?? 'application/x-www-form-urlencoded';
  const headers: Record<string, string> = { 'Content-Type': contentType, ...opts.headers };
  const mac = opts.mac ?? s.mac;
  headers.Authorization =
    opts.scheme === 'QBox'
      ? qiniu.util.generateAccessToken(mac, url, opts.body)
      : qiniu.util.generateAccessTokenV2(mac, url, method, contentType, opts.body, opts.headers);
  return fetch(url, { method, headers, ...(opts.body !== undefined ? { body: opts.body } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
}

/** Uploads `body` as `<bucket>:<key>` with the SDK's FormUploader; throws unless the server answers 200. */
export async function upload(
  s: TestServer,
  bucket: string,
  key: string,
  body: Buffer | string,
  opts: { mimeType?: string; config?: qiniu.conf.Config } = {},
): Promise<{ key: string; hash: string }> {
  const up = new qiniu.form_up.FormUploader(opts.config ?? s.zoneConfig());
  const extra = new qiniu.form_up.PutExtra(undefined, undefined, opts.mimeType);
  const token = s.uploadToken({ scope: `${bucket}:${key}` });
  const r = await sdk<{ key: string; hash: string; error?: string }>(up.put(token, key, Buffer.from(body), extra));
  if (r.status !== 200) throw new Error(`upload of ${bucket}:${key} failed: ${r.status} ${JSON.stringify(r.data)}`);
  return r.data;
}

/** Hex SHA-1 of a buffer. */
export function sha1(data: Buffer): string {
  return createHash('sha1').update(data).digest('hex');
}

/** Reads a fetch body as a stream and returns its hex SHA-1 and length (never holds the whole body). */
export async function sha1OfStream(res: Response): Promise<{ sha1: string; length: number }> {
  const h = createHash('sha1');
  let length = 0;
  if (!res.body) return { sha1: h.digest('hex'), length };
  for await (const chunk of res.body) {
    h.update(chunk);
    length += chunk.length;
  }
  return { sha1: h.digest('hex'), length };
}

/**
 * Sends a request head (with `headers`, e.g. a large `content-length`) and at most `firstBytes` of a body that never
 * ends, and resolves with the server's early answer (a refusal before it reads the body).
 */
export function sendHead(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  firstBytes = '',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, text });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no early answer')));
    if (firstBytes) req.write(firstBytes);
    else req.flushHeaders();
  });
}
