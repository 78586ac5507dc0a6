/**
 * `GET /metrics` on the console listener: the Granary's registry in the Prometheus text exposition format
 * (version 0.0.4), `Cache-Control: no-store` — with workers (GRANARY_WORKERS > 1), the totals of every worker
 * whichever worker answers (docs/operations/metrics-and-workers.md; 599 when they cannot be gathered). With GRANARY_METRICS_TOKEN set, the request must carry
 * `Authorization: Bearer <token>` (compared in constant time): none → 401 `token not specified`, another →
 * 401 `bad token`, both as `{"error": …}`.
 */
import type { FastifyReply } from 'fastify';
import { safeEqual } from '../auth/compare.js';
import { Errors } from '../errors.js';
import type { Metrics } from './metrics.js';

/** Throws 401 unless `authorization` carries the metrics token (when one is configured). */
export function checkMetricsToken(token: string | undefined, authorization: string | undefined): void {
  if (token === undefined) return;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) throw Errors.tokenMissing();
  if (!safeEqual(m[1] ?? '', token)) throw Errors.badToken();
}

/**
 * `GET /metrics` (route table: `metrics-token`, checked by the auth step before this runs): the totals of every
 * worker, 599 when they cannot be gathered.
 */
export async function metricsRoute(metrics: Metrics, reply: FastifyReply): Promise<FastifyReply> {
  // With workers, the totals of all of them (metrics.ts `totals`); a gather that fails is a 599, never short totals.
  const totals = await metrics.totals().catch((err: unknown) => {
    throw Errors.internal(`the metrics of the workers could not be gathered: ${(err as Error).message}`);
  });
  const body = await totals.metrics();
  return reply.code(200).header('cache-control', 'no-store').type(metrics.registry.contentType).send(body);
}
