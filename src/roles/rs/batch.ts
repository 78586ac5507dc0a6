/**
 * `POST /batch` (docs/development/kodo-protocol.md §8.4): a form body of up to 1000 `op=<op path>` values (any buckets, authorised per
 * op), run in order. Answer: a JSON array of `{"code": <status>, "data": <stat object | {"error": …}>}` in the
 * same order; HTTP 200 when every op succeeded, 298 otherwise. 400 for a body that is not a form, has no op, or
 * more than 1000 ops.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import type { RouteCall } from '../../http/route-call.js';
import { bodyBuffer, sendJson } from '../../http/wire.js';
import { toJson } from '../../bigint-json.js';
import { parseOp, runOp } from './ops.js';

/** Most ops one batch may carry. */
export const MAX_BATCH_OPS = 1000;

interface OpResult {
  code: number;
  data?: unknown;
}

/** `POST /batch` (route table: management; every op's buckets authorised by `runOp` through `call`). */
export async function batch(call: RouteCall<Granary, Caller>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const body = bodyBuffer(request);
  const ct = String(request.headers['content-type'] ?? '');
  if (!body || !ct.startsWith('application/x-www-form-urlencoded')) {
    throw Errors.badRequest('batch expects an application/x-www-form-urlencoded body of op= values');
  }
  const ops = new URLSearchParams(body.toString('utf8')).getAll('op');
  if (ops.length === 0) throw Errors.badRequest('no op in the batch');
  if (ops.length > MAX_BATCH_OPS) throw Errors.tooManyOps(`${ops.length} > ${MAX_BATCH_OPS}`);

  const results: OpResult[] = [];
  for (const path of ops) {
    try {
      const data = await runOp(call, parseOp(path), request.id);
      results.push(data === undefined ? { code: 200 } : { code: 200, data });
    } catch (err) {
      if (!isKodoError(err)) throw err;
      results.push({ code: err.status, data: { error: err.message } });
    }
  }
  return sendJson(reply, results.every((r) => r.code === 200) ? 200 : 298, toJson(results));
}
