/**
 * Request metrics of a fastify app (the main listener and the console listener): on every answer, the request
 * count by role/operation/status, its duration (fastify's `elapsedTime`: request head to answer end) and the wire
 * bytes of the exchange — the connection's socket counters since the previous answer on it (request head and
 * body in; response head and body out). Keep-alive connections carry one exchange at a time, so the bytes of a
 * request are its own (a pipelined next request read early would be counted with the earlier one).
 */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.js';
import { operationOf, roleOf, type Role } from './operations.js';

/** A connection's socket counters at its previous answer. */
const counted = new WeakMap<Socket, { read: number; written: number }>();

/**
 * Adds the hook to `app` (call before its routes are declared). `role` forces the role label (the console
 * listener); otherwise it follows from the route (metrics/operations.ts).
 */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics, role?: Role): void {
  app.addHook('onResponse', (request, reply, done) => {
    const url = request.is404 ? undefined : request.routeOptions.url;
    const labels = { role: role ?? roleOf(url), operation: operationOf(request.method, url) };
    metrics.requests.inc({ ...labels, status: String(reply.statusCode) });
    metrics.requestSeconds.observe(labels, reply.elapsedTime / 1000);
    const socket = request.raw.socket;
    const before = counted.get(socket) ?? { read: 0, written: 0 };
    const now = { read: socket.bytesRead, written: socket.bytesWritten };
    counted.set(socket, now);
    metrics.bytesIn.inc({ role: labels.role }, Math.max(0, now.read - before.read));
    metrics.bytesOut.inc({ role: labels.role }, Math.max(0, now.written - before.written));
    done();
  });
}
