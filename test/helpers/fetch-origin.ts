/**
 * A local origin for fetch tests: a node:http server on a loopback address (port 0) with per-path handlers that
 * records every TCP connection and request, so a test can prove that a refused fetch never reached it.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OutboundConnectTarget } from '../../src/outbound/client.js';
import type { TestServer } from './server.js';

/** Handles one request of the origin (the request body is not read). */
export type OriginHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A request the origin received. */
export interface OriginRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface Origin {
  /** Listening address (`127.0.0.1`, `127.0.0.2`, `::1`). */
  host: string;
  port: number;
  /** `http://<host>:<port>` (IPv6 in brackets). */
  base: string;
  /** TCP connections accepted so far (`server.on('connection')`). */
  connections(): number;
  /** Requests received so far, in order. */
  requests: OriginRequest[];
  /** Serves `path` (the request-target, query included) with `handler`; other paths answer 404. */
  route(path: string, handler: OriginHandler): void;
  close(): Promise<void>;
}

/** Starts an origin on `host`:0. Rejects when the address is not available (e.g. no IPv6 loopback). */
export async function startOrigin(host = '127.0.0.1'): Promise<Origin> {
  const routes = new Map<string, OriginHandler>();
  const requests: OriginRequest[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const handler = routes.get(req.url ?? '');
    if (handler) handler(req, res);
    else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not here');
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host,
    port,
    base: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    connections: () => connections,
    requests,
    route: (path, handler) => void routes.set(path, handler),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Serves `body` with a `Content-Length` and, when given, a `Content-Type`. */
export function serveBytes(body: Buffer, contentType?: string): OriginHandler {
  return (_req, res) => {
    res.writeHead(200, { 'Content-Length': String(body.length), ...(contentType ? { 'Content-Type': contentType } : {}) });
    res.end(body);
  };
}

/** True for an address on this machine's loopback: 127.0.0.0/8, ::1, or an IPv4-mapped 127.x. */
export function isLoopback(address: string): boolean {
  const a = address.toLowerCase();
  return /^127\./.test(a) || a === '::1' || /^::ffff:127\./.test(a);
}

/**
 * Installs the outbound test seam `beforeConnect` on a running Granary and returns the list of connect steps it
 * reaches. `veto: 'all'` refuses every connection (for a server that must never connect anywhere);
 * `'non-loopback'` refuses anything outside loopback, so no test can ever open a connection off this machine.
 */
export function watchConnects(s: TestServer, veto: 'all' | 'non-loopback'): OutboundConnectTarget[] {
  const seen: OutboundConnectTarget[] = [];
  s.running.g.outbound.beforeConnect = (target) => {
    seen.push(target);
    if (veto === 'all' || !target.addresses.every(isLoopback)) {
      throw new Error(`test veto: no connection to ${target.addresses.join(', ')}`);
    }
  };
  return seen;
}
