/**
 * The Keys screen's API (root key only: 403 for an account session):
 * - `GET /api/keys` → `{root: {accessKey}, accounts: [{accessKey, ctime, buckets}]}` (secrets are never listed);
 * - `POST /api/keys` → `{accessKey, secretKey}`: a new account pair (the secret is shown once, by the page);
 * - `DELETE /api/keys/:accessKey` → 204 (612-style 404 when unknown); the key index reloads at once and the
 *   account's console sessions end. The account's buckets stay (the root key still reaches them).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import type { RouteCall } from '../http/route-call.js';
import type { ConsoleApi } from './api-context.js';
import type { ConsoleSession } from './sessions.js';
import { pathParam } from './body.js';
import { requireRoot } from './guard.js';

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** `GET /api/keys`. */
export async function listKeysApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  requireRoot(call.caller, 'manage key pairs');
  const buckets = await g.meta.listBuckets();
  const accounts = (await g.meta.listAccessKeys()).map((k) => ({
    accessKey: k.accessKey,
    ctime: k.ctime,
    buckets: buckets.filter((b) => b.owner === k.accessKey).map((b) => b.name),
  }));
  return { root: { accessKey: g.keys.accessKey }, accounts };
}

/** `POST /api/keys`. */
export async function createKeyApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  requireRoot(call.caller, 'manage key pairs');
  const pair = await g.keyIndex.create(nowSeconds(g.clock));
  request.log.info({ accessKey: pair.accessKey }, 'console: account key pair created');
  return pair;
}

/** `DELETE /api/keys/:accessKey`. */
export async function deleteKeyApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  requireRoot(call.caller, 'manage key pairs');
  const accessKey = pathParam(request, 'accessKey');
  if (g.keyIndex.isRoot(accessKey)) throw Errors.badRequest('the root key pair cannot be deleted here');
  if (!(await g.meta.deleteAccessKey(accessKey))) throw Errors.notFound(`no account key ${accessKey}`);
  // The account's IAM sub-users, their key pairs, groups and policies go with it (docs/reference/iam.md).
  await g.meta.iam.deleteOwner(accessKey);
  await g.keyIndex.reload();
  await call.ctx.sessions.endAllOf(accessKey);
  request.log.info({ accessKey }, 'console: account key pair deleted');
  return reply.code(204).send();
}
