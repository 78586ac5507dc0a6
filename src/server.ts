/**
 * The fastify app: one port serves every role (up, io, rs, rsf, api, uc and downloads; docs/development/kodo-protocol.md §1),
 * every route registered from the route table (src/routes/table.ts) with its auth step before its handler.
 * Hooks: X-Reqid on every response (and in every log line), CORS with preflight, one error handler that turns
 * catalogue errors into `{"error": …}` with their Kodo status and headers, raw-body content-type parsers
 * (signatures need the exact bytes) and pass-through for streamed bodies (multipart, octet-stream). Every error
 * answer — router errors, thrown errors, unexpected failures (599), unknown routes (404) — is a catalogue error
 * sent by `sendError`, so no status or message is written here.
 */
import { logAnswerError } from './log.js';
import cors from '@fastify/cors';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { answerThenClose } from './connections.js';
import type { Granary } from './context.js';
import { Errors, isKodoError, storageError, type KodoError } from './errors.js';
import { trackHandlers } from './handlers-in-flight.js';
import { instrumentHttp } from './metrics/http.js';
import { DOMAIN_PREFIX } from './roles/io/download.js';
import { registerBucketPreflight } from './roles/io/preflight.js';
import { AllowedMethods } from './roles/allowed-methods.js';
import { CanonicalServerResponse } from './roles/canonical-headers.js';
import { sendError } from './http/wire.js';
import { guardRoutes, registerRoutes } from './routes/register.js';
import { KODO_PLUGIN_ROUTES, KODO_ROUTES } from './routes/table.js';

/**
 * Request ids in Kodo's style (URL-safe characters): a random per-process prefix and a counter, unique across
 * restarts without paying for random bytes on every request.
 */
export function reqIdGenerator(): () => string {
  const prefix = randomBytes(6).toString('base64url');
  let n = 0;
  return () => prefix + (n++).toString(36).padStart(6, '0');
}

/**
 * The X-Log of every answer. Kodo's is a trace of the services a request went through (`UP:12;RS:3`), free-form for
 * clients (docs/development/kodo-protocol.md §12): the SDKs only check that it is there.
 */
export const X_LOG = 'GRANARY';

/** Request ids of the answers written before any route runs (clientError). */
const rawReqId = reqIdGenerator();

/** fastify's own errors (bad JSON, body too large, …) mapped to catalogue errors. */
function frameworkError(err: { statusCode?: number; code?: string; message: string }) {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return Errors.bodyTooLarge();
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
    return Errors.badRequest(err.message);
  }
  return undefined;
}

/**
 * The error of a body the client stopped sending (it closed the connection mid-body: Node fails the request stream
 * with ECONNRESET "aborted") as a 400 — not a server failure, and nobody hears the answer.
 */
function clientGone(err: unknown, request: FastifyRequest): KodoError | undefined {
  if (request.raw.complete || (err as { code?: unknown } | null)?.code !== 'ECONNRESET') return undefined;
  return Errors.badRequest('the client closed the connection before the body ended');
}

/**
 * Answers what Node's HTTP parser refuses before any route runs (a request head over 16 KiB, malformed framing, a
 * request that took too long): 400 with a JSON error like every other refusal, and `Connection: close`, as the
 * socket closes after it (lingering while the client still sends, connections.ts). (fastify's default answered a
 * long head with 431 and omitted the header, so a keep-alive client sent its next request into the closed socket.)
 */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const why =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'the request head exceeds 16 KiB'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'the request took too long'
        : `malformed HTTP request (${err.code ?? err.message})`;
  const e = Errors.badRequest(why);
  const body = JSON.stringify({ error: e.message });
  const head = `HTTP/1.1 ${e.status} Bad Request\r\nConnection: close\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Reqid: ${rawReqId()}\r\nX-Log: ${X_LOG}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  // A client still sending its body reads the answer (lingering close), but one that took too long is not waited for.
  answerThenClose(socket as Socket, head + body, err.code !== 'ERR_HTTP_REQUEST_TIMEOUT');
}

/**
 * The one error handler (main and console listeners): catalogue errors as they are, storage failures as their
 * catalogue error (logged with errno and path), fastify's own 4xx as 400/413, anything else 599 (logged).
 */
export function handleError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // A body left unread (refused or failed before its end) is not read to its end before answering: the connection
  // closes after the answer, lingering meanwhile so the client reads it (connections.ts).
  if (!request.raw.complete) reply.header('connection', 'close');
  const storage = isKodoError(err) ? undefined : storageError(err);
  const kodo = isKodoError(err)
    ? err
    : (storage ?? clientGone(err, request) ?? frameworkError(err as { statusCode?: number; code?: string; message: string }));
  if (kodo) {
    // A storage failure is logged with the original error (errno, path); the client sees the catalogue message.
    // Refusals are logged at info without a stack, server faults at error (log.ts `logAnswerError`).
    if (storage) request.log.error({ err }, kodo.message);
    else logAnswerError(request.log, kodo.status, err, kodo.message);
    return sendError(reply, kodo);
  }
  request.log.error({ err }, 'unexpected error');
  return sendError(reply, Errors.internal());
}

/**
 * Errors raised by the router before any hook runs (malformed percent-encoding in the path → 400, over-long path
 * parameter → 414): answered like every other error, with X-Reqid and a `{"error": …}` body.
 */
export function routerError(err: { code?: string; message: string }, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('x-reqid', request.id);
  reply.header('x-log', X_LOG);
  return sendError(reply, err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? Errors.uriTooLong(err.message) : Errors.badRequest(err.message));
}

/**
 * What the 405 of `GET /` adds for a person who opened the Kodo port in a browser: what the port is, where the web
 * console listens (GRANARY_CONSOLE_PORT; its URL when the port is fixed) and where the docs start.
 */
function rootHint(config: Granary['config']): string {
  const port = config.consolePort;
  const consoleAt =
    port === undefined ? 'the web console is off (GRANARY_CONSOLE_PORT=0)'
    : port === 0 ? 'the web console has a port of its own (GRANARY_CONSOLE_PORT)'
    : `the web console is at http://${config.consoleHost === '0.0.0.0' || config.consoleHost === '::' ? '127.0.0.1' : config.consoleHost}:${port}/`;
  return `this is Granary's Kodo API port: SDKs upload with POST / and download /<bucket>/<key>; ${consoleAt}; docs: README.md and docs/`;
}

/** Builds the app (not listening). */
export async function buildServer(g: Granary): Promise<FastifyInstance> {
  const app = Fastify({
    // Header names go out in Go's canonical form, as Kodo sends them (roles/canonical-headers.ts).
    http: { ServerResponse: CanonicalServerResponse },
    loggerInstance: g.log as FastifyBaseLogger,
    genReqId: reqIdGenerator(),
    logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: true }),
    bodyLimit: g.config.maxBodyBytes,
    routerOptions: { maxParamLength: 16 * 1024 },
    return503OnClosing: true,
    clientErrorHandler: clientError,
    frameworkErrors: routerError,
    rewriteUrl(req) {
      const url = req.url ?? '/';
      if ((req.method === 'GET' || req.method === 'HEAD') && g.domains.bucketOfHost(req.headers.host) !== undefined) {
        return DOMAIN_PREFIX + url;
      }
      return url;
    },
  });

  // Before any route: a stop waits for handlers whose client left (handlers-in-flight.ts); only routes of the route
  // table (or its plugin routes) may be added (routes/register.ts); 405 answers come from the table too.
  trackHandlers(app);
  guardRoutes(app, KODO_PLUGIN_ROUTES);
  const allowed = new AllowedMethods([...KODO_ROUTES, ...KODO_PLUGIN_ROUTES], rootHint(g.config));
  // Every answer carries X-Reqid and X-Log, as Kodo's do: the Python SDK takes a 200 without X-Reqid for "server is
  // not qiniu" and a missing X-Reqid for a connection failure (qiniu/http/response.py); PHP's tests read both.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-reqid', request.id);
    reply.header('x-log', X_LOG);
    done();
  });
  if (g.metrics) instrumentHttp(app, g.metrics);
  addAccessLog(app, g);

  // Runs once routes answer 503 and just before the listener closes: marks the start of a graceful stop.
  app.addHook('preClose', async () => {
    g.log.info('closing: refusing new requests, finishing in-flight ones');
  });

  // Preflights of downloads of buckets with their own CORS rules are answered by those rules, before the global `*`.
  registerBucketPreflight(app, g);
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Content-MD5', 'Range', 'X-Qiniu-Date', 'X-Requested-With'],
    exposedHeaders: ['X-Reqid', 'X-Log', 'ETag', 'Content-Length', 'Content-Range', 'Content-Disposition'],
    maxAge: 86400,
    // An OPTIONS request without Origin/Access-Control-Request-Method is answered like a preflight (204)
    // instead of the plugin's plain-text 400: every answer stays JSON or empty (docs/development/kodo-protocol.md §14 item 4).
    strictPreflight: false,
  });

  // Bodies: small ones are buffered raw (signatures cover the exact bytes), everything else stays a stream.
  app.removeAllContentTypeParsers();
  const buffered = ['application/x-www-form-urlencoded', 'application/json', 'text/plain'];
  app.addContentTypeParser(buffered, { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  // A path that exists for other methods answers 405 with Allow (the download catch-all's "no such api" too).
  app.setErrorHandler((err, request, reply) => handleError(allowed.refine(err, request), request, reply));
  app.setNotFoundHandler((request, reply) => sendError(reply, allowed.notFound(request)));

  // Every route from the route table (src/routes/table.ts): its auth step runs before its handler.
  registerRoutes(app, KODO_ROUTES, 'main', g, g);
  // Chunk, part and putb64 bodies always stream to disk, whatever their Content-Type: a scope whose only parser
  // passes through.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    registerRoutes(scope, KODO_ROUTES, 'stream', g, g);
  });
  return app;
}

/**
 * One access-log line per request (method, url, status, ms, with its reqId), only when the level shows it: a hook
 * costs even when it logs nothing. Shared by the Kodo API listener and the console listener.
 */
export function addAccessLog(app: FastifyInstance, g: Granary): void {
  if (!g.log.isLevelEnabled('info')) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.originalUrl, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
    done();
  });
}
