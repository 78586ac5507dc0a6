/**
 * Region discovery (docs/development/kodo-protocol.md §1.2, "Region query"): `/v1/query`, `/v2/query`, `/v3/query`, `/v4/query` and
 * `/regions`, each query version in its own shape (region-answers.ts), naming the hosts the operator advertises for
 * each service (GRANARY_<SERVICE>_HOSTS, config-hosts.ts; the public URL's host by default), main host first.
 *
 * No authentication (the SDKs send none; `/regions` is signed by the Go SDK and the signature is not needed). The
 * queries check, in this order (Kodo's answers, read by the SDKs' tests):
 * - `ak` must name a key pair that exists (root or account, as signatures see them): otherwise
 *   612 `{"error":"app/accesskey is not found"}`. The Node SDK does not retry 612 and rejects with `Query regions
 *   failed with HTTP Status Code 612 …`; the Go SDK and qshell report `query region error, app/accesskey is not found`;
 * - `bucket` must name a bucket that key may use: otherwise 631 `{"error":"no such bucket"}` (an absent or empty
 *   `bucket` names none).
 * GET and POST (query string or form body) are accepted.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ACCOUNT, mayAccess } from '../../auth/authorize.js';
import { ADVERTISED_SERVICES } from '../../config-hosts.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import type { RouteCall } from '../../http/route-call.js';
import { params, sendJson } from '../../http/wire.js';
import { regionsAnswer, v1Answer, v3Answer, v2Region, v4Answer, type RegionFacts, type RegionHosts } from './region-answers.js';

/** Seconds clients may cache the answer. */
const TTL_SECONDS = 86400;

/**
 * The facts every answer is built from: the advertised hosts (public URL's `host[:port]` by default), and for a
 * query naming a bucket its default source (io-src) domains (`DomainIndex.sourceDomainsOf`: the bucket's source
 * domain under GRANARY_SOURCE_DOMAIN, its bound domains that are not CDN domains), each with the public URL's port
 * when that is not the scheme's default; none: the io hosts.
 */
function regionFacts(g: Granary, bucket?: string): RegionFacts {
  const publicUrl = new URL(g.publicUrl);
  const fallback = [publicUrl.host];
  const hosts = Object.fromEntries(ADVERTISED_SERVICES.map((s) => [s, g.config.advertisedHosts[s] ?? fallback])) as RegionHosts;
  const port = publicUrl.port === '' ? '' : `:${publicUrl.port}`;
  const ioSrc = bucket === undefined ? [] : g.domains.sourceDomainsOf(bucket).map((d) => d + port);
  return { region: g.config.region, ttl: TTL_SECONDS, hosts, ...(ioSrc.length > 0 ? { ioSrc } : {}) };
}

/**
 * 612 unless `ak` names a key pair that exists; then 631 unless `bucket` names a bucket that key may use. Returns
 * the bucket's name.
 */
async function checkQuery(g: Granary, request: FastifyRequest): Promise<string> {
  const p = params(request);
  const ak = p.get('ak') ?? '';
  if (ak === '' || g.keyIndex.secretOf(ak) === undefined) throw Errors.unknownQueryAccessKey();
  const name = p.get('bucket') ?? '';
  const bucket = name === '' ? undefined : await g.meta.getBucket(name);
  if (!bucket || !mayAccess(g, ak, bucket, { action: ACCOUNT })) throw Errors.noSuchBucket();
  return bucket.name;
}

/** A query route's handler (route table: no credential; `ak` and `bucket` checked here), then `answer`. */
function query(answer: (f: RegionFacts) => unknown) {
  return async (call: RouteCall<Granary, unknown>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const bucket = await checkQuery(call.g, request);
    return sendJson(reply, 200, answer(regionFacts(call.g, bucket)));
  };
}

/** `GET|POST /v1/query` … `/v4/query`: the region answers of each version. */
export const queryV1 = query(v1Answer);
export const queryV2 = query(v2Region);
export const queryV3 = query(v3Answer);
export const queryV4 = query(v4Answer);

/** `GET|POST /regions`: every region (this one). */
export function regions(call: RouteCall<Granary, unknown>, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendJson(reply, 200, regionsAnswer(regionFacts(call.g)));
}
