/**
 * The only way Granary talks to third-party HTTP servers (upload callbacks, docs/development/kodo-protocol.md §4.3 / §2.6;
 * fetch, async fetch, prefetch and mirror §8.5; persistent-ops notifications §9.3; bucket event notifications;
 * remote watermark images §10.5). Every connection passes the SSRF guard (guard.ts) on the address actually
 * connected to:
 *
 * 1. IP-literal hosts are checked before connecting (Node does not call `lookup` for them);
 * 2. host names are resolved by a guarded `lookup` hook (`dns.lookup` with `all: true`, forbidden addresses
 *    filtered out, the allowed ones handed to the socket) so there is no window between check and connect;
 * 3. the connected socket's `remoteAddress` is checked again on `connect`;
 * 4. every redirect hop (only when `maxRedirects > 0`) goes through 1–3 again.
 *
 * Connections are never pooled (`agent: false`) and environment proxies are not used.
 *
 * Two test seams on the policy, unset in production: `resolve` replaces `dns.lookup` (a made-up host name can
 * resolve to a private address without DNS), and `beforeConnect` sees every admitted target right before the
 * socket gets it (and may veto it), which proves that a refused target never reaches the connect step.
 */
import * as dns from 'node:dns';
import * as http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import type { LookupFunction, Socket } from 'node:net';
import { OutboundError } from './error.js';
import { checkAddress, forbiddenAddressError, isAllowedAddress, normalizeHost } from './guard.js';
import type { OutboundPolicy, ResolvedAddress } from './guard.js';

export { OutboundError, isOutboundError, OUTBOUND_ALLOW_SETTING } from './error.js';
export type { OutboundErrorReason } from './error.js';
export type { OutboundConnectTarget, OutboundPolicy, OutboundResolver, ResolvedAddress } from './guard.js';

/** Options shared by `outboundRequest` and `outboundStream`. */
export interface OutboundRequestOptions {
  /** Absolute `http:` or `https:` URL. */
  url: string;
  /** HTTP method, default `GET`. */
  method?: string;
  /** Request headers (names case-insensitive). A `Host` header overrides the URL host on the wire. */
  headers?: Record<string, string>;
  /** Request body; `Content-Length` is set from it. */
  body?: Buffer | string;
  /** Guard exemptions (GRANARY_OUTBOUND_ALLOW). */
  policy: OutboundPolicy;
  /** Time limit in milliseconds. `outboundRequest`: whole exchange; `outboundStream`: until response headers. */
  timeoutMs: number;
  /** Largest accepted response body in bytes (more → `OutboundError('too-large')`). */
  maxBodyBytes: number;
  /**
   * Redirects to follow (301/302/303/307/308 with `Location`); default 0: a 3xx answer is returned as is.
   * More than this many → `OutboundError('too-many-redirects')`.
   */
  maxRedirects?: number;
  /** Aborts the exchange from outside (rejects with `OutboundError('aborted')`). */
  signal?: AbortSignal;
}

/** A buffered response. */
export interface OutboundResponse {
  /** HTTP status of the final response. */
  status: number;
  /** Response headers (lower-case names). */
  headers: IncomingHttpHeaders;
  /** Whole response body, at most `maxBodyBytes` bytes. */
  body: Buffer;
}

/** Options of `outboundStream`: `OutboundRequestOptions` plus an idle limit for the body. */
export interface OutboundStreamOptions extends OutboundRequestOptions {
  /** Longest pause in milliseconds between body chunks once headers arrived; default `timeoutMs`. */
  idleTimeoutMs?: number;
}

/** A streaming response: the body is not read yet. */
export interface OutboundStreamResponse {
  /** HTTP status of the final response. */
  status: number;
  /** Response headers (lower-case names). */
  headers: IncomingHttpHeaders;
  /** Final URL after redirects. */
  url: string;
  /**
   * The body stream (paused). It is destroyed with `OutboundError('too-large')` past `maxBodyBytes` and with
   * `OutboundError('timeout')` after `idleTimeoutMs` without socket activity (a consumer that stops reading
   * that long triggers it too). The caller must consume or destroy it.
   */
  stream: IncomingMessage;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Tracks the request/response in flight so a deadline can abort whichever stage is running. */
class Exchange {
  aborted: OutboundError | undefined;
  req: http.ClientRequest | undefined;
  res: IncomingMessage | undefined;
  pending: ((err: OutboundError) => void) | undefined;

  abort(err: OutboundError): void {
    if (this.aborted) return;
    this.aborted = err;
    this.pending?.(err);
    this.req?.destroy(err);
    this.res?.destroy(err);
  }
}

function badUrl(text: string, why: string): OutboundError {
  return new OutboundError('bad-url', `outbound request: invalid URL "${text}": ${why}`);
}

function parseUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw badUrl(text, 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badUrl(text, `scheme ${url.protocol} is not http: or https:`);
  if (!url.hostname) throw badUrl(text, 'no host');
  return url;
}

function toOutboundError(err: unknown, url: URL): OutboundError {
  if (err instanceof OutboundError) return err;
  const e = err as NodeJS.ErrnoException;
  const message = e?.message ?? String(err);
  const code = e?.code && !message.includes(e.code) ? `${e.code} ` : '';
  return new OutboundError('network', `outbound request to ${url.origin} failed: ${code}${message}`.trim(), {
    cause: err,
  });
}

function familyNumber(family: unknown): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/** Resolves `hostname` like `dns.lookup(hostname, {all: true, family})`, or through the policy's test resolver. */
function resolveAll(
  hostname: string,
  family: 0 | 4 | 6,
  hints: number | undefined,
  policy: OutboundPolicy,
  callback: (err: NodeJS.ErrnoException | null, addresses: ResolvedAddress[]) => void,
): void {
  const resolve = policy.resolve;
  if (!resolve) {
    dns.lookup(hostname, { all: true, family, ...(hints !== undefined ? { hints } : {}) }, (err, addresses) =>
      callback(err, addresses ?? []),
    );
    return;
  }
  resolve(hostname).then(
    (answer) => {
      const addresses = answer.filter((a) => family === 0 || familyNumber(a.family) === family);
      // Like dns.lookup, which never succeeds with no address.
      if (addresses.length === 0) callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      else callback(null, addresses);
    },
    (err: unknown) => callback(err as NodeJS.ErrnoException, []),
  );
}

/**
 * A `lookup` for `http.request` that resolves with `dns.lookup({all: true})` (or `policy.resolve`), drops
 * addresses the guard refuses for `urlHost`, and fails with `OutboundError('forbidden-address')` when none is
 * left. The admitted addresses pass `policy.beforeConnect` (test seam) before the socket gets them.
 */
export function guardedLookup(urlHost: string, port: number, policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname, familyNumber(options.family), options.hints, policy, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      const allowed = addresses.filter((a) => isAllowedAddress(a.address, urlHost, policy));
      const first = allowed[0];
      if (!first) {
        const refused = forbiddenAddressError(
          urlHost,
          addresses.map((a) => a.address),
        );
        callback(refused as unknown as NodeJS.ErrnoException, '');
        return;
      }
      try {
        policy.beforeConnect?.({ host: urlHost, port, addresses: allowed.map((a) => a.address) });
      } catch (vetoed) {
        callback(vetoed as NodeJS.ErrnoException, '');
        return;
      }
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

/** One HTTP exchange up to the response headers, guarded. */
function requestOnce(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Buffer | string | undefined,
  policy: OutboundPolicy,
  ex: Exchange,
): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    if (ex.aborted) {
      reject(ex.aborted);
      return;
    }
    const host = normalizeHost(url.hostname);
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    if (isIP(host)) {
      // Node does not call `lookup` for an IP literal: check it (and pass the test seam) here, before connecting.
      try {
        checkAddress(host, host, policy);
        policy.beforeConnect?.({ host, port, addresses: [host] });
      } catch (err) {
        reject(toOutboundError(err, url));
        return;
      }
    }
    let settled = false;
    let req: http.ClientRequest | undefined;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      ex.pending = undefined;
      reject(toOutboundError(err, url));
      req?.destroy();
    };
    const mod = url.protocol === 'https:' ? https : http;
    try {
      req = mod.request(
        {
          protocol: url.protocol,
          hostname: host,
          port: url.port || undefined,
          path: `${url.pathname}${url.search}`,
          method,
          headers,
          agent: false,
          lookup: guardedLookup(host, port, policy),
          ...(url.username || url.password
            ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
            : {}),
        },
        (res) => {
          if (settled) {
            res.destroy();
            return;
          }
          settled = true;
          ex.pending = undefined;
          ex.res = res;
          resolve(res);
        },
      );
    } catch (err) {
      fail(err);
      return;
    }
    ex.req = req;
    ex.pending = fail;
    req.on('error', fail);
    req.on('socket', (socket: Socket) => {
      const verify = (): void => {
        const remote = socket.remoteAddress;
        if (remote === undefined) return;
        try {
          checkAddress(remote, host, policy);
        } catch (err) {
          fail(err);
          socket.destroy();
        }
      };
      if (socket.connecting) socket.once('connect', verify);
      else verify();
    });
    req.end(body);
  });
}

function lowerHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v;
  return out;
}

/** Rethrows `err`, first telling `policy.onRefused` when it is the guard's refusal. */
function refused(err: unknown, policy: OutboundPolicy): never {
  if (err instanceof OutboundError && err.reason === 'forbidden-address') policy.onRefused?.();
  throw err;
}

/** Sends the request and follows redirects as allowed; resolves with the final response (body unread). */
async function openFollowing(opts: OutboundRequestOptions, ex: Exchange): Promise<{ res: IncomingMessage; url: URL }> {
  let url = parseUrl(opts.url);
  let method = (opts.method ?? 'GET').toUpperCase();
  let body = opts.body;
  const headers = lowerHeaders(opts.headers);
  const maxRedirects = opts.maxRedirects ?? 0;
  for (let hop = 0; ; hop++) {
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    else delete headers['content-length'];
    const res = await requestOnce(url, method, headers, body, opts.policy, ex).catch((err: unknown) => refused(err, opts.policy));
    const location = res.headers.location;
    if (maxRedirects <= 0 || !REDIRECT_STATUSES.has(res.statusCode ?? 0) || !location) return { res, url };
    res.resume();
    res.destroy();
    ex.res = undefined;
    if (hop >= maxRedirects) {
      throw new OutboundError(
        'too-many-redirects',
        `outbound request to ${parseUrl(opts.url).origin}: more than ${maxRedirects} redirect(s)`,
      );
    }
    const next = parseUrl(location, url);
    if (next.origin !== url.origin) {
      // Credentials and a virtual-host override belong to the original origin only.
      delete headers.authorization;
      delete headers.cookie;
      delete headers.host;
    }
    const status = res.statusCode ?? 0;
    if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
      if (method !== 'HEAD') method = 'GET';
      body = undefined;
      delete headers['content-type'];
    }
    url = next;
  }
}

function tooLarge(url: URL, maxBodyBytes: number): OutboundError {
  return new OutboundError('too-large', `outbound response from ${url.origin} is larger than ${maxBodyBytes} bytes`);
}

/** Fails early on a declared `Content-Length` above the limit. */
function declaredTooLarge(res: IncomingMessage, maxBodyBytes: number): boolean {
  const declared = res.headers['content-length'];
  return declared !== undefined && Number(declared) > maxBodyBytes;
}

/** Reads the whole body, enforcing `maxBodyBytes`; aborted by the exchange deadline. */
function readBody(res: IncomingMessage, url: URL, maxBodyBytes: number, ex: Exchange): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    let done = false;
    const finish = (err: unknown, buf?: Buffer): void => {
      if (done) return;
      done = true;
      ex.pending = undefined;
      if (err) {
        reject(toOutboundError(err, url));
        res.destroy();
      } else resolve(buf ?? Buffer.alloc(0));
    };
    ex.pending = finish;
    if (ex.aborted) {
      finish(ex.aborted);
      return;
    }
    if (declaredTooLarge(res, maxBodyBytes)) {
      finish(tooLarge(url, maxBodyBytes));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        finish(tooLarge(url, maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => finish(null, Buffer.concat(chunks, size)));
    res.on('error', (err) => finish(err));
    res.on('close', () => {
      if (!res.complete) finish(new OutboundError('network', `outbound response from ${url.origin} ended early`));
    });
  });
}

function timeoutError(opts: OutboundRequestOptions, what: string): OutboundError {
  let origin = opts.url;
  try {
    origin = new URL(opts.url).origin;
  } catch {
    // keep the text
  }
  return new OutboundError('timeout', `outbound request to ${origin} timed out: ${what} within ${opts.timeoutMs} ms`);
}

/**
 * Makes one guarded HTTP(S) request and buffers the answer.
 *
 * - `timeoutMs` (milliseconds) bounds the whole exchange: DNS, connect, TLS, every redirect hop, response
 *   headers and body.
 * - `maxBodyBytes` bounds the response body (declared `Content-Length` or bytes received).
 * - Redirects are followed only when `maxRedirects > 0` (303, and 301/302 after POST, become GET without body;
 *   `Authorization`, `Cookie` and `Host` are dropped when the origin changes); each hop is guarded again.
 * - Any HTTP status is a result, not an error (a 3xx is returned as is when not followed).
 *
 * Rejects with `OutboundError` (`reason`: `bad-url`, `forbidden-address` — message names
 * `GRANARY_OUTBOUND_ALLOW` —, `timeout`, `too-large`, `network`, `too-many-redirects`).
 * Used by upload callbacks (docs/development/kodo-protocol.md §4.3, §2.6).
 */
export async function outboundRequest(opts: OutboundRequestOptions): Promise<OutboundResponse> {
  const ex = new Exchange();
  const timer = setTimeout(() => ex.abort(timeoutError(opts, 'no complete answer')), opts.timeoutMs);
  const onAbort = (): void => ex.abort(new OutboundError('aborted', 'outbound request aborted by the caller'));
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const { res, url } = await openFollowing(opts, ex);
    const body = await readBody(res, url, opts.maxBodyBytes, ex);
    return { status: res.statusCode ?? 0, headers: res.headers, body };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    ex.res?.destroy();
  }
}

/**
 * Like `outboundRequest` but resolves as soon as the final response headers arrive, handing over the body as a
 * stream (for fetch-style copies, docs/development/kodo-protocol.md §8.5). `timeoutMs` (ms) bounds everything up to the headers; the
 * body is then bounded by `idleTimeoutMs` (ms of silence between chunks, default `timeoutMs`) and `maxBodyBytes`
 * (a declared larger `Content-Length` rejects at once; counted bytes past it destroy the stream with
 * `OutboundError('too-large')`). A no-op `error` listener is attached so an unconsumed failing stream cannot
 * crash the process; consumers still see the error through `pipeline`/async iteration/their own listener.
 * Rejects with `OutboundError` like `outboundRequest`.
 */
export async function outboundStream(opts: OutboundStreamOptions): Promise<OutboundStreamResponse> {
  const ex = new Exchange();
  const timer = setTimeout(() => ex.abort(timeoutError(opts, 'no response headers')), opts.timeoutMs);
  let res: IncomingMessage;
  let url: URL;
  try {
    ({ res, url } = await openFollowing(opts, ex));
  } finally {
    clearTimeout(timer);
  }
  if (declaredTooLarge(res, opts.maxBodyBytes)) {
    res.destroy();
    throw tooLarge(url, opts.maxBodyBytes);
  }
  res.on('error', () => {});
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > opts.maxBodyBytes) res.destroy(tooLarge(url, opts.maxBodyBytes));
  });
  // Attaching 'data' switched the stream to flowing mode; hand it over paused so no chunk is lost.
  res.pause();
  const idleMs = opts.idleTimeoutMs ?? opts.timeoutMs;
  res.socket.setTimeout(idleMs, () => {
    res.destroy(new OutboundError('timeout', `outbound response from ${url.origin} stalled for ${idleMs} ms`));
  });
  return { status: res.statusCode ?? 0, headers: res.headers, url: url.href, stream: res };
}
