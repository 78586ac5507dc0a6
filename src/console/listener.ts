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
import { trackConnections } from '../connections.js';
import { abandonHandlers, trackHandlers, type RunningHandler } from '../handlers-in-flight.js';
import { listenError } from '../listen-error.js';
import { listenQuietly } from '../listen-quietly.js';
import { acceptHandedConnections, privateListenPath, type HandedConnections } from '../workers/handoff.js';
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

/** A listening console listener. `url` is a URL a local client can reach it at (e.g. http://127.0.0.1:9001). */
export interface ConsoleListener {
  url: string;
  port: number;
  /** Stops listening: in-flight requests finish, idle keep-alive connections end. */
  close(): Promise<void>;
  /**
   * During `close()`, past the stop timeout: closes every connection now and stops waiting for the handlers still
   * running, which it returns (main.ts logs them).
   */
  abort(): RunningHandler[];
}

/** The host part of a URL that reaches a server bound to `host` from this machine. */
function localUrlHost(host: string): string {
  if (host === '' || host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

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
  const connections = trackConnections(app.server, { lingerMs: g.config.lingerTimeoutSeconds * 1000 });
  let handed: HandedConnections | undefined;
  try {
    if (opts.handedSlot !== undefined) {
      await listenQuietly(app, { path: privateListenPath(opts.handedSlot, 'console'), exclusive: true });
      handed = acceptHandedConnections(app.server, 'console');
    } else {
      await listenQuietly(app, { port: opts.port, host: opts.host });
    }
  } catch (err) {
    await app.close();
    throw listenError('console', opts.host, opts.port, err);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${localUrlHost(opts.host)}:${port}`,
    port,
    close: () =>
      (closing ??= (async () => {
        const closed = Promise.all([app.close(), handed?.stop()]);
        connections.drain();
        await closed;
      })()),
    abort: () => {
      connections.destroyAll();
      return abandonHandlers(app);
    },
  };
}
