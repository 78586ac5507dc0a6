/**
 * The console listener: a second fastify instance on its own port (GRANARY_CONSOLE_PORT, default 9001;
 * GRANARY_CONSOLE_HOST, default 127.0.0.1: loopback only), separate from the Kodo API port so it can be firewalled apart.
 * It serves `GET /metrics` (metrics/route.ts, when the Granary has a metrics registry) and whatever `register`
 * adds (the web console's routes and static files): every route from the route table (src/routes/console.ts). In a worker of a primary (GRANARY_WORKERS > 1) the primary
 * owns the port and hands each connection to a worker, as for the API port (workers/balancer.ts).
 *
 * Same conventions as the main listener (server.ts): X-Reqid on every answer and in every log line, one access-log
 * line per request at level info, every error a catalogue error answered as `{"error": …}` (unknown route → 404
 * `no such api`, unexpected failure → 599), Node parser refusals answered as 400 JSON with `Connection: close`.
 * Unlike the main listener, bodies use fastify's default parsers (JSON parsed into an object, text/plain as a
 * string, both bounded by GRANARY_MAX_BODY_SIZE); other content types are refused with 415 by fastify → 400 here.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Granary } from '../context.js';
import { trackHandlers } from '../handlers-in-flight.js';
import { startListener, type StartedListener } from '../start-listener.js';
import { Errors } from '../errors.js';
import { instrumentHttp } from '../metrics/http.js';
import { guardRoutes, registerRoutes } from '../routes/register.js';
import { CONSOLE_LISTENER_ROUTES, CONSOLE_PLUGIN_ROUTES } from '../routes/table.js';
import { sendError } from '../http/wire.js';
import { addAccessLog, clientError, handleError, reqIdGenerator, routerError } from '../server.js';

export interface ConsoleListenerOptions {
  /** TCP port; 0 = any free port (tests). Disabling (GRANARY_CONSOLE_PORT=0) is decided by the caller (main.ts). */
  port: number;
  /**
   * Worker slot of a worker of the primary (GRANARY_WORKERS > 1): the primary listens on `port` and hands the
   * connections over (workers/balancer.ts, channel `console`); this server then listens only on a private socket.
   */
  handedSlot?: number;
  /** Bind address. */
  host: string;
  /** Adds routes, hooks or plugins to the console app before it listens (the web console). */
  register?: (app: FastifyInstance) => Promise<void> | void;
}

/** A listening console listener (start-listener.ts): `url` a local client can reach it at (e.g. http://127.0.0.1:9001). */
export type ConsoleListener = StartedListener;

/** Builds the console app (not listening): conventions of server.ts, `/metrics`, then `register`. */
export async function buildConsoleApp(g: Granary, register?: ConsoleListenerOptions['register']): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: g.log.child({ listener: 'console' }) as FastifyBaseLogger,
    genReqId: reqIdGenerator(),
    logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: true }),
    bodyLimit: g.config.maxBodyBytes,
    return503OnClosing: true,
    // X-Forwarded-* are believed only from the proxies GRANARY_TRUST_PROXY names (request.ip, .protocol, .host).
    trustProxy: g.config.trustProxy,
    clientErrorHandler: clientError,
    frameworkErrors: routerError,
  });
  trackHandlers(app);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-reqid', request.id);
    done();
  });
  addAccessLog(app, g);
  if (g.metrics) instrumentHttp(app, g.metrics, { role: 'console' });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((_request, reply) => sendError(reply, Errors.noSuchRoute()));
  // Only routes of the route table (or the console app's files) may be added (routes/register.ts).
  guardRoutes(app, CONSOLE_PLUGIN_ROUTES);
  if (g.metrics) registerRoutes(app, CONSOLE_LISTENER_ROUTES, 'console-listener', g, g);
  if (register) await register(app);
  return app;
}

/**
 * Starts the console listener on `opts.host:opts.port` (or, in a worker, serves what the primary hands over);
 * resolves once it listens. Rejects with `listenError` (the address and the reason: EADDRINUSE…) when it cannot.
 */
export async function startConsoleListener(g: Granary, opts: ConsoleListenerOptions): Promise<ConsoleListener> {
  const app = await buildConsoleApp(g, opts.register);
  return startListener(app, {
    name: 'console',
    host: opts.host,
    port: opts.port,
    ...(opts.handedSlot !== undefined ? { handedSlot: opts.handedSlot } : {}),
    lingerMs: g.config.lingerTimeoutSeconds * 1000,
  });
}
