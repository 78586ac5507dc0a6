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
import type { FastifyInstance } from 'fastify';
import { mayAccess } from '../auth/authorize.js';
import type { ConsoleApi } from './app.js';
import { callerOf } from './guard.js';

/** Registers the overview route. */
export function registerOverviewApi(app: FastifyInstance, api: ConsoleApi): void {
  const { g, sessions } = api;
  const usageOf = async (accessKey: string) => {
    const mine = (await g.meta.listBuckets()).filter((b) => mayAccess(g, accessKey, b));
    return Promise.all(
      mine.map(async (b) => {
        const u = await g.meta.bucketUsage(b.name);
        return { name: b.name, objects: u?.count ?? 0, bytes: u?.bytes ?? 0 };
      }),
    );
  };
  app.get('/api/history', async (request) => {
    const s = await callerOf(sessions, request);
    const buckets = await usageOf(s.accessKey);
    const names = new Set(buckets.map((b) => b.name));
    return api.history.history({
      traffic: s.root,
      mayRead: (bucket) => names.has(bucket),
      current: Object.fromEntries(buckets.map((b) => [b.name, b.bytes])),
    });
  });
  app.get('/api/overview', async (request) => {
    const s = await callerOf(sessions, request);
    const buckets = await usageOf(s.accessKey);
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
      requests: s.root && api.rates ? await api.rates.rates() : null,
      uptimeSeconds: Math.round(process.uptime()),
    };
  });
}
