/**
 * `Authorization: UpToken <upload token>` on resumable-upload calls (docs/development/kodo-protocol.md §2.4, §5, §6): verifies the
 * token, parses its put policy and checks its deadline on every call (401); the deadline and scope are checked
 * again when the file is created (putObject).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { upTokenFromAuthorization, verifyUploadToken } from '../../auth/upload-token.js';
import type { Granary } from '../../context.js';
import type { UploadAnswer } from '../../objects/upload-response.js';
import { checkDeadline, parsePutPolicy, type PutPolicy } from '../../policy/put-policy.js';
import { nowSeconds } from '../../ports/clock.js';
import { sendJson } from '../../http/wire.js';

/** The caller's AccessKey and put policy. */
export function requireUpToken(g: Granary, request: FastifyRequest): { accessKey: string; policy: PutPolicy } {
  const header = typeof request.headers.authorization === 'string' ? request.headers.authorization : undefined;
  const token = verifyUploadToken(upTokenFromAuthorization(header), g.secretOf);
  const policy = parsePutPolicy(token.policy);
  checkDeadline(policy, nowSeconds(g.clock));
  return { accessKey: token.accessKey, policy };
}

/**
 * Sends the answer of a finished upload (form, mkfile, complete, putb64): JSON, a rendered returnBody that is not
 * JSON (with its own Content-Type), or a 303 to returnUrl.
 */
export function sendUploadAnswer(reply: FastifyReply, answer: UploadAnswer): FastifyReply {
  reply.headers(answer.headers);
  if (answer.contentType) return reply.code(answer.status).header('cache-control', 'no-store').type(answer.contentType).send(answer.body);
  return sendJson(reply, answer.status, answer.body);
}
