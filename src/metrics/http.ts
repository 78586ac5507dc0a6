/**
 * Request metrics of a fastify app (the main listener and the console listener): on every answer, the request
 * count by role/operation/status, its duration (fastify's `elapsedTime`: request head to answer end) and the bytes
 * the connection carried meanwhile (socket counters read at the request head and at the answer's end: the request
 * body in, the response head and body out; keep-alive connections carry one request at a time).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from './metrics.js';
import { operationOf, roleOf, type Role } from './operations.js';

/** Socket byte counters at the request head. */
const atStart = new WeakMap<FastifyRequest, { read: number; written: number }>();

/**
 * Adds the hooks to `app` (call before its routes are declared). `role` forces the role label (the console
 * listener); otherwise it follows from the route (metrics/operations.ts).
 */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics, role?: Role): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const socket = request.raw.socket;
    atStart.set(request, { read: socket.bytesRead, written: socket.bytesWritten });
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const url = request.is404 ? undefined : request.routeOptions.url;
    const labels = { role: role ?? roleOf(url), operation: operationOf(request.method, url) };
    metrics.requests.inc({ ...labels, status: String(reply.statusCode) });
    metrics.requestSeconds.observe(labels, reply.elapsedTime / 1000);
    const start = atStart.get(request);
    if (start) {
      const socket = request.raw.socket;
      metrics.bytesIn.inc({ role: labels.role }, Math.max(0, socket.bytesRead - start.read));
      metrics.bytesOut.inc({ role: labels.role }, Math.max(0, socket.bytesWritten - start.written));
    }
    done();
  });
}
