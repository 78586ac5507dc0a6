/**
 * Request metrics of a fastify app (the main, console and S3 listeners): on every answer, the request
 * count by role/operation/status, its duration (fastify's `elapsedTime`: request head to answer end) and the wire
 * bytes of the exchange — the connection's socket counters since the previous answer on it (request head and
 * body in; response head and body out). Keep-alive connections carry one exchange at a time, so the bytes of a
 * request are its own (a pipelined next request read early would be counted with the earlier one).
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from './metrics.js';
import type { RouteLabels } from '../routes/register.js';
import { labelsOf, type Role } from './operations.js';

/** The prom-client children one answer updates. */
interface Series {
  requests: { inc(): void };
  seconds: { observe(value: number): void };
  bytesIn: { inc(value: number): void };
  bytesOut: { inc(value: number): void };
}

/** A connection's socket counters at its previous answer. */
const counted = new WeakMap<Socket, { read: number; written: number }>();

/** How a listener labels its requests when not by its fastify routes' `config`. */
export interface HttpLabelling {
  /** Forces the role label (the console listener, the S3 listener). */
  role?: Role;
  /**
   * The operation of a request, for a listener with one catch-all route and a table of its own (the S3 listener:
   * `ListObjectsV2`, `PutObject`, …); undefined → `unmatched`.
   */
  operationOf?: (request: FastifyRequest) => string | undefined;
}

/**
 * Adds the hook to `app` (call before its routes are declared). The labels are the route's, as the route table
 * declares it (metrics/operations.ts), unless `labelling` says otherwise.
 */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics, labelling: HttpLabelling = {}): void {
  const { role, operationOf } = labelling;
  // The series of each role/operation/status, looked up once (prom-client hashes the labels on every call otherwise:
  // about 4× the cost). Bounded like the labels themselves.
  const series = new Map<string, Series>();
  const seriesOf = (operation: string | undefined, routeRole: RouteLabels['role'] | undefined, status: number): Series => {
    const key = `${operation ?? 'unmatched'} ${status}`;
    let s = series.get(key);
    if (!s) {
      const labels = role ? { role, operation: operation ?? 'unmatched' } : labelsOf({ role: routeRole, operation });
      s = {
        requests: metrics.requests.labels({ ...labels, status: String(status) }),
        seconds: metrics.requestSeconds.labels(labels),
        bytesIn: metrics.bytesIn.labels({ role: labels.role }),
        bytesOut: metrics.bytesOut.labels({ role: labels.role }),
      };
      series.set(key, s);
    }
    return s;
  };
  app.addHook('onResponse', (request, reply, done) => {
    const config = operationOf || request.is404 ? undefined : (request.routeOptions.config as Partial<RouteLabels>);
    const s = seriesOf(operationOf ? operationOf(request) : config?.operation, config?.role, reply.statusCode);
    s.requests.inc();
    s.seconds.observe(reply.elapsedTime / 1000);
    const socket = request.raw.socket;
    const before = counted.get(socket) ?? { read: 0, written: 0 };
    const now = { read: socket.bytesRead, written: socket.bytesWritten };
    counted.set(socket, now);
    s.bytesIn.inc(Math.max(0, now.read - before.read));
    s.bytesOut.inc(Math.max(0, now.written - before.written));
    done();
  });
}
