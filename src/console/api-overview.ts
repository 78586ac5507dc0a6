/**
 * The Overview screen's API: `GET /api/overview` →
 * `{buckets: [{name, objects, bytes}], totals: {buckets, objects, bytes}, jobs: {waiting, running, notifying, failed}
 *  (the caller's jobs; every job for the root key), disk: {freeBytes, totalBytes, reserveBytes, ok} | null,
 *  scrub: ScrubStatus | null (root only), requests: RequestRates | null (root only, when the Granary has metrics:
 *  totals since the start and per-second rates over about a minute, request-rates.ts), uptimeSeconds}`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess } from '../auth/authorize.js';
import type { RouteCall } from '../routes/auth-step.js';
import type { ConsoleApi } from './app.js';
import type { ConsoleSession } from './sessions.js';

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** `GET /api/overview`. */
export async function overviewApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const mine = (await g.meta.listBuckets()).filter((b) => mayAccess(g, s.accessKey, b));
  const buckets = await Promise.all(
    mine.map(async (b) => {
      const u = await g.meta.bucketUsage(b.name);
      return { name: b.name, objects: u?.count ?? 0, bytes: u?.bytes ?? 0 };
    }),
  );
  const totals = buckets.reduce((t, b) => ({ buckets: t.buckets + 1, objects: t.objects + b.objects, bytes: t.bytes + b.bytes }), {
    buckets: 0,
    objects: 0,
    bytes: 0,
  });
  const jobs = await g.jobs.countByState(s.root ? undefined : s.accessKey);
  return {
    buckets,
    totals,
    jobs,
    disk: (await g.space.reading()) ?? null,
    scrub: s.root ? (g.scrubber?.status() ?? null) : null,
    requests: s.root && call.ctx.rates ? await call.ctx.rates.rates() : null,
    uptimeSeconds: Math.round(process.uptime()),
  };
}
