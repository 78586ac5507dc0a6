/**
 * The S3 listener (docs/development/kodo-protocol.md §18; docs/reference/s3-compatibility.md): a fastify instance
 * of its own on GRANARY_S3_PORT (default 9002; 0 disables it, main.ts), bound to GRANARY_S3_HOST (default
 * GRANARY_HOST), serving the AWS S3 REST API over the same buckets and entries as the Kodo API. In a worker of a
 * primary (GRANARY_WORKERS > 1) the primary owns the port and hands each connection to a worker (channel `s3`,
 * workers/balancer.ts), as for the other listeners.
 *
 * Every request goes through one handler: the bucket and key are read from the path (path style, always) or the
 * Host (virtual-hosted style `<bucket>.<GRANARY_S3_DOMAIN>`, when set); the caller is authenticated
 * (auth/authenticate.ts); the route table (routes.ts) picks the operation; the operation (ops/) answers an
 * `S3Response`, written here. Every answer carries `x-amz-request-id` (the request id of the logs) and
 * `x-amz-id-2`; every error is an S3 XML error (errors.ts, xml.ts), without a body for HEAD. Bodies are never
 * parsed by fastify: operations read the (verified) stream themselves.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Granary } from '../context.js';
import { trackHandlers } from '../handlers-in-flight.js';
import { startListener, type StartedListener } from '../start-listener.js';
import { instrumentHttp } from '../metrics/http.js';
import { downloadSecurityHeaders } from '../roles/io/active-content.js';
import { logAnswerError } from '../log.js';
import { addAccessLog, clientError, reqIdGenerator } from '../server.js';
import { authenticate, unauthenticated } from './auth/authenticate.js';
import { s3AuthStep } from './auth-step.js';
import { corsAnswerHeaders } from './cors.js';
import { checkExpectedOwner } from './expected-owner.js';
import { S3Error, S3Errors, toS3Error } from './errors.js';
import { matchRoute, type PathShape, type S3Route } from './routes.js';
import type { S3Request, S3Response } from './types.js';
import { errorXml } from './xml.js';

export interface S3ListenerOptions {
  /** TCP port; 0 = any free port (tests). Disabling (GRANARY_S3_PORT=0) is decided by the caller (main.ts). */
  port: number;
  /** Bind address. */
  host: string;
  /** Worker slot of a worker of the primary: the primary listens and hands the connections over (channel `s3`). */
  handedSlot?: number;
}

/** A listening S3 listener (start-listener.ts): `url` a local client can reach it at. */
export type S3Listener = StartedListener;

/** The bucket a virtual host names (`<bucket>.<domain>[:port]`), or undefined (path style). */
export function virtualHostBucket(host: string | undefined, domain: string | undefined): string | undefined {
  if (!domain || !host) return undefined;
  const name = host.replace(/:\d+$/, '').toLowerCase().replace(/\.$/, '');
  const suffix = `.${domain.toLowerCase()}`;
  if (!name.endsWith(suffix)) return undefined;
  const bucket = name.slice(0, -suffix.length);
  return bucket === '' ? undefined : bucket;
}

/** Bucket, key and shape of a request path; InvalidURI when its escapes are malformed. */
export function addressOf(rawPath: string, vhostBucket: string | undefined): { bucket?: string; key?: string; shape: PathShape } {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw S3Errors.InvalidURI();
  }
  if (vhostBucket !== undefined) {
    const key = path.slice(1);
    return key === '' ? { bucket: vhostBucket, shape: 'bucket' } : { bucket: vhostBucket, key, shape: 'object' };
  }
  const rest = path.slice(1);
  if (rest === '') return { shape: 'service' };
  const slash = rest.indexOf('/');
  if (slash < 0) return { bucket: rest, shape: 'bucket' };
  const bucket = rest.slice(0, slash);
  const key = rest.slice(slash + 1);
  return key === '' ? { bucket, shape: 'bucket' } : { bucket, key, shape: 'object' };
}

/** `x-amz-id-2` of this process: a fixed random host id (S3's is opaque too). */
const HOST_ID = randomBytes(24).toString('base64');

/** The S3 operation of each request the route table matched (the `operation` label of its metrics). */
const operations = new WeakMap<FastifyRequest, string>();

/**
 * `body` that first answers `100 Continue` to a request sent with `Expect: 100-continue` (RFC 9110 §10.1.1): the
 * client sends its body only once an operation reads it, so a request refused before (a bad signature, a missing
 * bucket, a failed precondition) is answered with its final error and no body is sent (the S3 listener takes
 * `checkContinue` itself: buildS3App). Node closes the connection after such an answer.
 */
function continueOnRead(raw: IncomingMessage, res: ServerResponse, body: () => Readable): () => Readable {
  const expect = raw.headers.expect;
  if (expect === undefined || expect.toLowerCase() !== '100-continue') return body;
  let sent = false;
  return () => {
    if (!sent && !res.headersSent) res.writeContinue();
    sent = true;
    return body();
  };
}

/** Handles one request through the route table. */
async function dispatch(g: Granary, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const raw = request.raw as IncomingMessage;
  const rawUrl = raw.url ?? '/';
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
  const vhost = virtualHostBucket(raw.headers.host, g.config.s3Domain);
  const address = addressOf(rawPath, vhost);
  const method = raw.method ?? 'GET';
  // The route is matched before authentication (its operation labels the metrics; a preflight is never
  // authenticated: routes.ts auth `none`), but a request failing both is answered with the authentication error.
  let route: S3Route | undefined;
  let routeError: unknown;
  try {
    route = matchRoute(method, address.shape, query, (name) => raw.headers[name] !== undefined);
    operations.set(request, route.operation);
  } catch (err) {
    routeError = err;
  }
  // A browser's actual request: the bucket's CORS rules answer it, errors included (cors.ts).
  if (method !== 'OPTIONS' && raw.headers.origin !== undefined) {
    const asked = raw.headers['access-control-request-method'];
    const cors = await corsAnswerHeaders(g, address.bucket, raw.headers.origin, typeof asked === 'string' && asked !== '' ? asked : method);
    if (cors) reply.headers(cors);
  }
  const authenticateOnce = (): ReturnType<typeof authenticate> =>
    (route?.auth === 'none' ? unauthenticated : authenticate)(
      g,
      { method, rawUrl, headers: raw.headersDistinct, merged: raw.headers, stream: raw },
      g.clock.nowMs(),
      vhost,
    );
  let auth: ReturnType<typeof authenticate>;
  try {
    auth = authenticateOnce();
  } catch (err) {
    // A key unknown here may have been created through another process a moment ago (a sub-user's new key pair):
    // the key index looks at the store's change counter once before the refusal.
    if (!(err instanceof S3Error && err.code === 'InvalidAccessKeyId' && (await g.keyIndex.refresh()))) throw err;
    auth = authenticateOnce();
  }
  if (!route) throw routeError;
  if (auth.caller.accessKey === undefined && route.auth === 'signed') {
    // A missing bucket is NoSuchBucket (404) to anyone, as S3 answers (a DELETE in a deleted bucket).
    if (address.bucket !== undefined && route.operation !== 'CreateBucket' && !(await g.meta.getBucket(address.bucket))) throw S3Errors.NoSuchBucket();
    throw S3Errors.AccessDenied();
  }
  const req: S3Request = {
    method,
    rawUrl,
    query,
    headers: raw.headers,
    bucket: address.bucket,
    key: address.key,
    reqId: request.id,
    caller: auth.caller,
    sourceIp: request.ip,
    secure: request.protocol === 'https',
    body: continueOnRead(raw, reply.raw, auth.body),
    contentLength: auth.contentLength,
    checksum: auth.checksum,
  };
  // The route table's IAM step (auth-step.ts): the one permission check of a signed caller.
  await s3AuthStep(g, route, req);
  request.log.debug({ operation: route.operation, bucket: req.bucket, key: req.key }, 's3 operation');
  await checkExpectedOwner(g, req);
  const res = await route.handler(g, req);
  return send(reply, req.method, res, route.operation === 'GetObject' || route.operation === 'HeadObject');
}

/** Writes an operation's answer (no body for HEAD; object answers get the download security headers). */
function send(reply: FastifyReply, method: string, res: S3Response, objectRead: boolean): FastifyReply {
  reply.code(res.status);
  if (res.headers) reply.headers(res.headers);
  if (objectRead) reply.headers(downloadSecurityHeaders(res.headers?.['content-type']));
  if (res.body === undefined || method === 'HEAD') {
    if (res.body !== undefined && typeof res.body === 'object' && 'destroy' in res.body) res.body.destroy();
    return reply.send();
  }
  if (typeof res.body === 'string' && !res.headers?.['content-type']) reply.header('content-type', 'application/xml');
  return reply.send(res.body);
}

/** The XML error answer of any failure (see errors.ts `toS3Error`). */
function handleS3Error(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // A body left unread is not read to its end: the connection closes after the answer (connections.ts lingers).
  if (!request.raw.complete) reply.header('connection', 'close');
  // A client that hung up mid-body is nobody's fault (a 400 no one hears), as on the Kodo listener.
  const gone = !request.raw.complete && (err as { code?: unknown } | null)?.code === 'ECONNRESET';
  const { error } = gone ? { error: S3Errors.IncompleteBody() } : toS3Error(err);
  logAnswerError(request.log, error.status, err, `s3: ${error.code}`);
  reply.code(error.status);
  if (error.headers) reply.headers(error.headers);
  if (request.method === 'HEAD') return reply.send();
  const rawUrl = request.raw.url ?? '/';
  const resource = rawUrl.split('?', 1)[0] ?? '/';
  reply.header('content-type', 'application/xml');
  return reply.send(errorXml({ code: error.code, message: error.message, resource, requestId: request.id }));
}

/** Builds the S3 app (not listening). */
export async function buildS3App(g: Granary): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: g.log.child({ listener: 's3' }) as FastifyBaseLogger,
    genReqId: reqIdGenerator(),
    logController: new LogController({ requestIdLogLabel: 'reqId', disableRequestLogging: true }),
    bodyLimit: g.config.maxBodyBytes,
    return503OnClosing: true,
    clientErrorHandler: clientError,
    routerOptions: { maxParamLength: 16 * 1024, ignoreDuplicateSlashes: false },
  });
  // `Expect: 100-continue`: Node answers 100 before any handler runs unless `checkContinue` is handled; the request
  // goes through the route table as any other, and `100 Continue` is sent when an operation reads the body
  // (continueOnRead).
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => app.server.emit('request', req, res));
  // Any other expectation (`Expect: 200`, an empty one) is ignored, as S3 ignores it, instead of Node's 417.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => app.server.emit('request', req, res));
  trackHandlers(app);
  if (g.metrics) instrumentHttp(app, g.metrics, { role: 's3', operationOf: (request) => operations.get(request) });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-amz-request-id', request.id);
    reply.header('x-amz-id-2', HOST_ID);
    reply.header('server', 'Granary');
    // An empty Content-Type is no type (S3 accepts it; Fastify's body step would refuse it as a bad media type). The
    // signature still sees it as sent (auth reads headersDistinct, built from the raw headers).
    if (request.headers['content-type'] === '') delete request.headers['content-type'];
    done();
  });
  addAccessLog(app, g);
  // Bodies stay streams whatever their type: operations read them through the verifying stream.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
  app.setErrorHandler(handleS3Error);
  app.setNotFoundHandler((request, reply) => handleS3Error(S3Errors.MethodNotAllowed(), request, reply));
  const handler = (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => dispatch(g, request, reply);
  const methods = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'PATCH'];
  app.route({ method: methods, url: '/', handler, exposeHeadRoute: false });
  app.route({ method: methods, url: '/*', handler, exposeHeadRoute: false });
  await app.ready();
  return app;
}

/**
 * Starts the S3 listener on `opts.host:opts.port` (or, in a worker, serves what the primary hands over on channel
 * `s3`); resolves once it listens. Rejects with `listenError` (the address and the reason) when it cannot.
 */
export async function startS3Listener(g: Granary, opts: S3ListenerOptions): Promise<S3Listener> {
  const app = await buildS3App(g);
  return startListener(app, {
    name: 's3',
    host: opts.host,
    port: opts.port,
    ...(opts.handedSlot !== undefined ? { handedSlot: opts.handedSlot } : {}),
    lingerMs: g.config.lingerTimeoutSeconds * 1000,
  });
}
