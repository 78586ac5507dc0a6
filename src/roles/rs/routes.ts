/**
 * Single-op rs routes (docs/development/kodo-protocol.md §8.1): `POST /<op>/<args…>` for every op of ops.ts, plus `GET /stat/…`
 * (the Node SDK's stat is a GET). `QBox` and `Qiniu` credentials (the route table's auth step). Answers: the stat object, or an empty 200.
 * The op path is read from the raw request-target, exactly as signed.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { rawUrlOf, sendEmpty, sendJson } from '../../http/wire.js';
import { toJson } from '../../bigint-json.js';
import { parseOp, runOp } from './ops.js';

/** `POST /<op>/*` and `GET /stat/*` (route table: management; the op's buckets authorised by `runOp`). */
export async function rsOp(call: RouteCall<Granary, Caller>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  const op = parseOp(q >= 0 ? raw.slice(0, q) : raw, new URLSearchParams(q >= 0 ? raw.slice(q + 1) : ''));
  const answer = await runOp(call, op, request.id);
  return answer === undefined ? sendEmpty(reply) : sendJson(reply, 200, toJson(answer));
}
