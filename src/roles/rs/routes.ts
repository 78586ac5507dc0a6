/**
 * Single-op rs routes (docs/development/kodo-protocol.md §8.1): `POST /<op>/<args…>` for every op of ops.ts, plus `GET /stat/…`
 * (the Node SDK's stat is a GET). `QBox` and `Qiniu` credentials. Answers: the stat object, or an empty 200.
 * The op path is read from the raw request-target, exactly as signed.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import { rawUrlOf, requireManagement, sendEmpty, sendJson } from '../http.js';
import { toJson } from '../json.js';
import { OP_NAMES, parseOp, runOp } from './ops.js';

async function handle(g: Granary, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const caller = requireManagement(g, request);
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  const op = parseOp(q >= 0 ? raw.slice(0, q) : raw, new URLSearchParams(q >= 0 ? raw.slice(q + 1) : ''));
  const answer = await runOp(g, caller.accessKey, op, request.id);
  return answer === undefined ? sendEmpty(reply) : sendJson(reply, 200, toJson(answer));
}

/** Registers `POST /<op>/*` for every op and `GET /stat/*`. */
export function registerRsOps(app: FastifyInstance, g: Granary): void {
  const handler = (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => handle(g, request, reply);
  for (const name of OP_NAMES) app.post(`/${name}/*`, handler);
  app.get('/stat/*', handler);
}
