/**
 * Async fetch on the api role (docs/development/kodo-protocol.md §8.5), management credential (QBox or Qiniu; the JSON body is signed):
 * - `POST /sisyphus/fetch`, JSON body → 200 `{"id","wait"}`;
 * - `GET /sisyphus/fetch?id=<id>` → 200 `{"id","wait","state",…result}`; 400 without id, 612 unknown id.
 * Validation, semantics and codes: objects/fetch/async-fetch.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { Granary } from '../../context.js';
import { asyncFetchStatus, parseAsyncFetchRequest, submitAsyncFetch } from '../../objects/fetch/async-fetch.js';
import { bodyBuffer, params, requiredParam, requireManagement, sendJson } from '../http.js';

/** Registers `POST /sisyphus/fetch` and `GET /sisyphus/fetch`. */
export function registerAsyncFetch(app: FastifyInstance, g: Granary): void {
  app.post('/sisyphus/fetch', async (request, reply) => {
    const caller = requireManagement(g, request);
    const req = parseAsyncFetchRequest(bodyBuffer(request));
    return sendJson(reply, 200, await submitAsyncFetch(g, caller.accessKey, req));
  });
  app.get('/sisyphus/fetch', async (request, reply) => {
    const caller = requireManagement(g, request);
    const id = requiredParam(params(request), 'id');
    return sendJson(reply, 200, await asyncFetchStatus(g, caller.accessKey, id));
  });
}
