/**
 * Fetch: store a resource from a URL as an entry (docs/development/kodo-protocol.md §8.5), through the outbound guard, streamed into
 * the one putObject path (constant memory, etag computed on the way; a failed fetch never replaces the entry
 * already under the key).
 *
 * Errors (documented in docs/buckets/mirror.md, "Fetch errors"): 400 not an http(s) URL; 403 refused by the outbound guard (private or
 * loopback address; the message names GRANARY_OUTBOUND_ALLOW); 404 the origin answered 404; 478 any other
 * non-200 answer (the message names the origin's status), an unreachable origin, too many redirects; 504 the
 * origin did not answer in time (GRANARY_FETCH_TIMEOUT); 413 a body over GRANARY_FETCH_MAX_SIZE; 599 storing
 * failed; 406 the content misses an expected md5/etag (async fetch); plus the put errors (631 bucket, 403 foreign
 * bucket).
 */
import { basename } from 'node:path';
import { authorizeBucket } from '../../auth/authorize.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError, type KodoError } from '../../errors.js';
import { isOutboundError, outboundStream, type OutboundStreamResponse } from '../../outbound/client.js';
import { parsePutPolicy } from '../../policy/put-policy.js';
import type { Digests } from '../etag.js';
import { putObject, type PutResult } from '../put-object.js';
import { receiveBody } from '../receive.js';
import { checkSourceUrl } from './source-url.js';

/** Where a fetched resource goes: `key` undefined → the etag becomes the key. */
export interface FetchTarget {
  bucket: string;
  key?: string;
}

/** The resource: an http(s) URL, optionally with a Host header to send (virtual hosting). */
export interface FetchSource {
  url: string;
  host?: string;
}

/** Digests the fetched content must have (async fetch `md5`/`etag`, §8.5): hex MD5 (any case), Kodo etag. */
export interface FetchExpect {
  md5?: string;
  etag?: string;
}

/** Largest uint32: the internal put policy of a fetch never expires. */
const NO_DEADLINE = 0xffffffff;

/** Named in 413 messages: the setting that bounds a fetched body. */
const SIZE_SETTING = '(GRANARY_FETCH_MAX_SIZE)';

/** Maps an outbound failure to its catalogue error. */
export function outboundFailure(err: unknown, url: string): KodoError {
  // The digesting stream enforces the same GRANARY_FETCH_MAX_SIZE as the outbound client: answer alike.
  if (isKodoError(err, 'objectTooLarge')) return Errors.originTooLarge(`${url}: ${err.message} ${SIZE_SETTING}`);
  if (isKodoError(err)) return err;
  if (!isOutboundError(err)) return Errors.originFailed(`${url}: ${(err as Error).message}`);
  switch (err.reason) {
    case 'forbidden-address':
      return Errors.outboundRefused(err.message);
    case 'bad-url':
      return Errors.badFetchUrl(err.message);
    case 'timeout':
      return Errors.originTimeout(err.message);
    case 'too-large':
      return Errors.originTooLarge(`${err.message} ${SIZE_SETTING}`);
    default:
      return Errors.originFailed(err.message);
  }
}

/** The last path segment of a URL, percent-decoded when possible ('' for none). */
function fileNameOf(url: string): string {
  const name = basename(new URL(url).pathname);
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** Which expected digest the content misses ('' when it matches every one given). */
function digestMismatch(digests: Digests, expect: FetchExpect | undefined): string {
  if (expect?.md5 !== undefined && expect.md5.toLowerCase() !== digests.md5) {
    return `md5 is ${digests.md5}, expected ${expect.md5}`;
  }
  if (expect?.etag !== undefined && expect.etag !== digests.etag) return `etag is ${digests.etag}, expected ${expect.etag}`;
  return '';
}

/** Opens the origin's response: 404 → 404, any other non-200 → 478 naming the status. */
export async function openOrigin(g: Granary, src: FetchSource): Promise<OutboundStreamResponse> {
  checkSourceUrl(src.url);
  let res: OutboundStreamResponse;
  try {
    res = await outboundStream({
      url: src.url,
      headers: src.host ? { host: src.host } : {},
      policy: g.outbound,
      timeoutMs: g.config.fetchTimeoutSeconds * 1000,
      maxBodyBytes: g.config.fetchMaxBytes,
      maxRedirects: 5,
    });
  } catch (err) {
    throw outboundFailure(err, src.url);
  }
  if (res.status !== 200) {
    res.stream.destroy();
    if (res.status === 404) throw Errors.originNotFound(src.url);
    throw Errors.originFailed(`the origin answered ${res.status} for ${src.url}`);
  }
  return res;
}

/**
 * Downloads `src` and commits it to `target` for the caller `accessKey` (who must be allowed on the bucket).
 * With a key the entry is overwritten (unless `opts.insertOnly`: then a different entry already under the key
 * answers 614 and stays); without, the etag is the key (identical content already stored succeeds).
 * `opts.expect`: digests checked before the commit, a mismatch → 406 and nothing is stored; `opts.fileType`:
 * storage class 0..4 of the new entry (default 0).
 */
export async function fetchToEntry(
  g: Granary,
  accessKey: string,
  src: FetchSource,
  target: FetchTarget,
  opts: { insertOnly?: boolean; expect?: FetchExpect; fileType?: number } = {},
): Promise<PutResult> {
  await authorizeBucket(g, accessKey, target.bucket, { action: 'kodo/Fetchfiles', ...(target.key !== undefined ? { key: target.key } : {}) });
  const res = await openOrigin(g, src);
  let body;
  try {
    body = await receiveBody(g, res.stream, { maxBytes: g.config.fetchMaxBytes, inlineMax: g.config.inlineMaxBytes });
  } catch (err) {
    throw outboundFailure(err, src.url);
  }
  const mismatch = digestMismatch(body.digests, opts.expect);
  if (mismatch) {
    await body.staged.discard();
    throw Errors.fetchDigestMismatch(`${mismatch} (${src.url})`);
  }
  const policy = parsePutPolicy({
    scope: target.key === undefined ? target.bucket : `${target.bucket}:${target.key}`,
    deadline: NO_DEADLINE,
    ...(opts.insertOnly ? { insertOnly: 1 } : {}),
    ...(opts.fileType ? { fileType: opts.fileType } : {}),
  });
  const type = res.headers['content-type'];
  return putObject(g, body, {
    policy,
    accessKey,
    ...(target.key !== undefined ? { clientKey: target.key } : {}),
    fname: fileNameOf(res.url),
    ...(typeof type === 'string' && type !== '' ? { clientMime: type.split(';')[0]!.trim() } : {}),
    custom: {},
    meta: {},
  });
}
