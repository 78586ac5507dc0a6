/**
 * Glue between fastify requests and the framework-free auth/domain code: building the signed-request view (the
 * route table's auth step verifies it, src/routes/auth-step.ts), reading small bodies, and JSON answers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SignedRequest } from '../auth/management.js';
import { Errors, type KodoError } from '../errors.js';

/**
 * Methods of read-only management routes: the specs say GET, the Node SDK often POSTs (docs/development/kodo-protocol.md §14 item 12).
 */
export const READ_METHODS: ('GET' | 'POST')[] = ['GET', 'POST'];

/** The raw request-target as received (path + query, never re-encoded; docs/development/kodo-protocol.md §14 item 23). */
export function rawUrlOf(request: FastifyRequest): string {
  return request.originalUrl ?? request.raw.url ?? request.url;
}

/** The body a buffering content-type parser left on the request, or undefined for streamed bodies. */
export function bodyBuffer(request: FastifyRequest): Buffer | undefined {
  return Buffer.isBuffer(request.body) ? request.body : undefined;
}

/** The framework-free view of a request that signature checks need. */
export function signedRequestOf(request: FastifyRequest): SignedRequest {
  return {
    method: request.method.toUpperCase(),
    rawUrl: rawUrlOf(request),
    headers: request.headers,
    body: bodyBuffer(request),
    distinctHeaders: request.raw.headersDistinct,
  };
}

/** Query string parameters plus, for form bodies, the form fields (query first). */
export function params(request: FastifyRequest): URLSearchParams {
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  const out = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
  const body = bodyBuffer(request);
  const ct = String(request.headers['content-type'] ?? '');
  if (body && ct.startsWith('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) if (!out.has(k)) out.set(k, v);
  }
  return out;
}

/** A required parameter; missing → 400. */
export function requiredParam(p: URLSearchParams, name: string): string {
  const v = p.get(name);
  if (v === null || v === '') throw Errors.badRequest(`${name} is required`);
  return v;
}

/**
 * Sets the response status. fastify's `reply.code()` only accepts 100–599 and throws on Kodo's 6xx codes
 * (612, 614, 631, 701, …), so those are set on the raw response (Node writes any 100–999 status).
 */
export function setStatus(reply: FastifyReply, status: number): FastifyReply {
  if (status >= 100 && status <= 599) return reply.code(status);
  reply.raw.statusCode = status;
  return reply;
}

/**
 * The body size a request declares (`Content-Length`), bytes; undefined for chunked bodies or a malformed value
 * (Node's parser refuses those before any route runs).
 */
export function declaredLength(request: FastifyRequest): number | undefined {
  const v = request.headers['content-length'];
  if (typeof v !== 'string' || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

/** Answers JSON with `Cache-Control: no-store` (management and upload responses, docs/development/kodo-protocol.md §12). */
export function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return setStatus(reply, status)
    .header('cache-control', 'no-store')
    .type('application/json')
    .send(typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * Answers a catalogue error: its status (Kodo's code, 400–701), its headers (e.g. a 416's `Content-Range`) and the
 * JSON body `{"error": "<message>"}`, with `Cache-Control: no-store`. The one way an error reaches the client.
 */
export function sendError(reply: FastifyReply, err: KodoError): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  return sendJson(reply, err.status, { error: err.message });
}

/**
 * Answers 200 with the empty JSON object `{}` (management operations without a result). Every 2xx JSON answer has a
 * JSON body: the Go, Java, Python and PHP SDKs decode every 200 as JSON, and Kodo answers `{}` (docs/development/kodo-protocol.md §15,
 * "Success body of delete/copy/move/chgm etc."; §14 item 4, "Always JSON").
 */
export function sendEmpty(reply: FastifyReply): FastifyReply {
  return reply.code(200).header('cache-control', 'no-store').type('application/json').send('{}');
}
