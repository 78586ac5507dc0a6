/**
 * Async fetch on the api role (docs/development/kodo-protocol.md §8.5), management credential (QBox or Qiniu; the JSON body is signed; the route table's auth step):
 * - `POST /sisyphus/fetch`, JSON body → 200 `{"id","wait"}`;
 * - `GET /sisyphus/fetch?id=<id>` → 200 `{"id","wait","state",…result}`; 400 without id, 612 unknown id.
 * Validation, semantics and codes: objects/fetch/async-fetch.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { asyncFetchStatus, parseAsyncFetchRequest, submitAsyncFetch } from '../../objects/fetch/async-fetch.js';
import { bodyBuffer, params, requiredParam, sendJson } from '../../http/wire.js';

type Call = RouteCall<Granary, Caller>;

/** `POST /sisyphus/fetch`. */
export async function submitFetch(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const req = parseAsyncFetchRequest(bodyBuffer(request));
  return sendJson(reply, 200, await submitAsyncFetch(g, call.caller.accessKey, req));
}

/** `GET /sisyphus/fetch`. */
export async function fetchStatus(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const id = requiredParam(params(request), 'id');
  return sendJson(reply, 200, await asyncFetchStatus(g, call.caller.accessKey, id));
}
