/**
 * Prefetch on the io role (docs/development/kodo-protocol.md §8.5): `POST /prefetch/<EncodedEntryURI>`, management credential (route table auth step). Re-pulls
 * the entry from the bucket's mirror source (set with `image`, §8.6) and replaces it (creates it when absent).
 * Success: 200, `{"fsize","hash","key","mimeType"}` of the stored entry, as sync fetch answers (the PHP and Python SDKs
 * read the entry from it). Errors: 400 bad entry or a bucket without a mirror source; 631 missing bucket;
 * 403 another account's bucket or refused by the outbound guard; 478 any origin failure (404 included); 599
 * storing failed. See objects/fetch/mirror.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { prefetchEntry } from '../../objects/fetch/mirror.js';
import { decodeEntry, pathSegments } from '../../objects/manage/encoded-entry.js';
import { rawUrlOf, sendJson } from '../../http/wire.js';

type Call = RouteCall<Granary, Caller>;

/** `POST /prefetch/*`: the bucket authorised by prefetchEntry. */
export async function prefetch(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const segments = pathSegments(rawUrlOf(request)).slice(1);
  if (segments.length !== 1) throw Errors.badRequest('expected /prefetch/<EncodedEntryURI>');
  const { bucket, key } = decodeEntry(segments[0]);
  const r = await prefetchEntry(g, call.caller.accessKey, bucket, key);
  return sendJson(reply, 200, { fsize: r.fsize, hash: r.hash, key: r.key, mimeType: r.mimeType });
}
