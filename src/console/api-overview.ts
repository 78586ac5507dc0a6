/**
 * The Overview screen's API: `GET /api/overview` →
 * `{buckets: [{name, objects, bytes}], totals: {buckets, objects, bytes}, jobs: {waiting, running, notifying, failed}
 *  (the caller's jobs; every job for the root key), disk: {freeBytes, totalBytes, reserveBytes, ok} | null,
 *  scrub: ScrubStatus | null (root only), requests: RequestRates | null (root only, when the Granary has metrics:
 *  totals since the start and per-second rates over about a minute, request-rates.ts), uptimeSeconds}`.
 * `GET /api/history` → the Overview's graphs (history.ts `History`): `{intervalSeconds, traffic: [{at, seconds,
 *  requests, clientErrors, serverErrors, bytesIn, bytesOut, p50Ms, p99Ms}] (root only, else null), storage: [{at,
 *  buckets: {name: bytes}}] (the caller's buckets, the last point now)}`; `at` in Unix seconds.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess, VISIBLE } from '../auth/authorize.js';
import type { RouteCall } from '../http/route-call.js';
import type { ConsoleApi } from './api-context.js';
import type { ConsoleSession } from './sessions.js';

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** The caller's buckets with their object counts and bytes. */
async function usageOf(g: Call['g'], accessKey: string): Promise<{ name: string; objects: number; bytes: number }[]> {
  const mine = (await g.meta.listBuckets()).filter((b) => mayAccess(g, accessKey, b, { action: VISIBLE }));
  return Promise.all(
    mine.map(async (b) => {
      const u = await g.meta.bucketUsage(b.name);
      return { name: b.name, objects: u?.count ?? 0, bytes: u?.bytes ?? 0 };
    }),
  );
}

/** `GET /api/history`: the Overview's graphs (traffic for the root key only). */
export async function historyApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const s = call.caller;
  const buckets = await usageOf(call.g, s.accessKey);
  const names = new Set(buckets.map((b) => b.name));
  return call.ctx.history.history({
    traffic: s.root,
    mayRead: (bucket) => names.has(bucket),
    current: Object.fromEntries(buckets.map((b) => [b.name, b.bytes])),
  });
}

/** `GET /api/overview`. */
export async function overviewApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const buckets = await usageOf(g, s.accessKey);
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
