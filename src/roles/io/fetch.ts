/**
 * Sync fetch on the io role (docs/development/kodo-protocol.md §8.5): `POST /fetch/<EncodedURL>/to/<EncodedEntryURI>[/host/<b64 Host>]`,
 * management credential (the route table's auth step). EncodedURL and the entry are URL-safe base64, padded or not; an entry naming only a
 * bucket stores under the etag. Success: 200, `Cache-Control: no-store`, `{"fsize","hash","key","mimeType"}`.
 * Error codes: see objects/fetch/fetch-to-entry.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { fetchToEntry } from '../../objects/fetch/fetch-to-entry.js';
import { decodeEntryTarget, decodeParam, pathSegments } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf, sendJson } from '../../http/wire.js';

type Call = RouteCall<Granary, Caller>;

/** `POST /fetch/*`: the bucket authorised by fetchToEntry. */
export async function fetch(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const segments = pathSegments(rawUrlOf(request)).slice(1);
  const [encodedUrl, to, encodedEntry, ...rest] = segments;
  if (to !== 'to') throw Errors.badRequest('expected /fetch/<EncodedURL>/to/<EncodedEntryURI>');
  const url = decodeParam(encodedUrl, 'EncodedURL');
  const target = decodeEntryTarget(encodedEntry);
  let host: string | undefined;
  for (let i = 0; i < rest.length; i += 2) {
    if (rest[i] === 'host') host = decodeParam(rest[i + 1], 'host');
    else throw Errors.badRequest(`unknown fetch parameter ${rest[i]}`);
  }
  const result = await fetchToEntry(g, call.caller.accessKey, { url, ...(host ? { host } : {}) }, target);
  const r = result.record;
  g.metrics?.upload('fetch', r.fsize);
  return sendJson(reply, 200, { fsize: r.fsize, hash: r.hash, key: r.key, mimeType: r.mimeType });
}
