/**
 * Region discovery (protocol.md §1.2): `/v4/query`, `/v3/query`, `/v2/query` and `/regions`, all answering with
 * Granary's public URL for every service so the SDKs' auto-discovery works with only the uc host configured.
 * No authentication (the SDKs send none), but the `ak` parameter of the three queries must name a key pair that
 * exists (root or account, as signatures see them): otherwise 612 `{"error":"app/accesskey is not found"}`, Kodo's
 * answer. The Node SDK does not retry 612 and rejects with `Query regions failed with HTTP Status Code 612, Body
 * {"error":"app/accesskey is not found"}`; the Go SDK and qshell report `query region error, app/accesskey is not
 * found`. The `bucket` parameter is not checked (every bucket is in the one region).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { params, READ_METHODS, sendJson } from '../http.js';

/** Seconds clients may cache the answer. */
const TTL_SECONDS = 86400;

/** `host[:port]` of the public URL (the SDKs want endpoints without scheme). */
function publicHost(g: Granary): string {
  return new URL(g.publicUrl).host;
}

/** One region entry of the v4 shape; every service object must be present or the Node SDK throws. */
export function v4Region(g: Granary): Record<string, unknown> {
  const h = [publicHost(g)];
  return {
    region: g.config.region,
    ttl: TTL_SECONDS,
    up: { domains: h, acc_domains: [], old: [] },
    io: { domains: h },
    io_src: { domains: h },
    rs: { domains: h },
    rsf: { domains: h },
    api: { domains: h },
    uc: { domains: h },
    s3: { domains: h, region_alias: g.config.region },
  };
}

/** The legacy v2 shape read by qiniu-js (`up.acc.main`) and the Go SDK. */
function v2Region(g: Granary): Record<string, unknown> {
  const main = [publicHost(g)];
  return {
    region: g.config.region,
    ttl: TTL_SECONDS,
    up: {
      acc: { main, backup: [] },
      src: { main, backup: [] },
      old_acc: { main: [], info: '' },
      old_src: { main: [], info: '' },
    },
    io: { src: { main } },
    rs: { acc: { main } },
    rsf: { acc: { main } },
    api: { acc: { main } },
    uc: { acc: { main } },
  };
}

/** 612 unless the query's `ak` names a key pair that exists (an absent or empty `ak` names none). */
function checkQueryAccessKey(g: Granary, request: FastifyRequest): void {
  const ak = params(request).get('ak') ?? '';
  if (ak === '' || g.keyIndex.secretOf(ak) === undefined) throw Errors.unknownQueryAccessKey();
}

/** A query route: the `ak` checked, then `answer`. */
function query(g: Granary, answer: () => unknown) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    checkQueryAccessKey(g, request);
    return sendJson(reply, 200, answer());
  };
}

/** Registers the region-query routes (GET and POST). */
export function registerRegionQuery(app: FastifyInstance, g: Granary): void {
  const v4 = { method: READ_METHODS };
  app.route({ ...v4, url: '/v4/query', handler: query(g, () => ({ hosts: [v4Region(g)] })) });
  app.route({ ...v4, url: '/v3/query', handler: query(g, () => ({ hosts: [v4Region(g)] })) });
  app.route({ ...v4, url: '/v2/query', handler: query(g, () => v2Region(g)) });
  app.route({
    ...v4,
    url: '/regions',
    handler: (_req, reply) =>
      sendJson(reply, 200, { regions: [{ id: g.config.region, description: 'Granary local region' }] }),
  });
}
