/**
 * Region discovery (protocol.md §1.2): `/v4/query`, `/v3/query`, `/v2/query` and `/regions`, all answering with
 * Granary's public URL for every service so the SDKs' auto-discovery works with only the uc host configured.
 * No authentication (the SDKs send none).
 */
import type { FastifyInstance } from 'fastify';
import type { Granary } from '../../context.js';
import { READ_METHODS, sendJson } from '../http.js';

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

/** Registers the region-query routes (GET and POST). */
export function registerRegionQuery(app: FastifyInstance, g: Granary): void {
  const v4 = { method: READ_METHODS };
  app.route({ ...v4, url: '/v4/query', handler: (_req, reply) => sendJson(reply, 200, { hosts: [v4Region(g)] }) });
  app.route({ ...v4, url: '/v3/query', handler: (_req, reply) => sendJson(reply, 200, { hosts: [v4Region(g)] }) });
  app.route({ ...v4, url: '/v2/query', handler: (_req, reply) => sendJson(reply, 200, v2Region(g)) });
  app.route({
    ...v4,
    url: '/regions',
    handler: (_req, reply) =>
      sendJson(reply, 200, { regions: [{ id: g.config.region, description: 'Granary local region' }] }),
  });
}
