/**
 * The Keys screen's API (root key only: 403 for an account session):
 * - `GET /api/keys` → `{root: {accessKey}, accounts: [{accessKey, ctime, buckets}]}` (secrets are never listed);
 * - `POST /api/keys` → `{accessKey, secretKey}`: a new account pair (the secret is shown once, by the page);
 * - `DELETE /api/keys/:accessKey` → 204 (612-style 404 when unknown); the key index reloads at once and the
 *   account's console sessions end. The account's buckets stay (the root key still reaches them).
 */
import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import type { ConsoleApi } from './app.js';
import { pathParam } from './body.js';
import { callerOf, requireRoot } from './guard.js';

/** Registers the key routes. */
export function registerKeyApi(app: FastifyInstance, api: ConsoleApi): void {
  const { g, sessions } = api;

  app.get('/api/keys', async (request) => {
    requireRoot(await callerOf(sessions, request), 'manage key pairs');
    const buckets = await g.meta.listBuckets();
    const accounts = (await g.meta.listAccessKeys()).map((k) => ({
      accessKey: k.accessKey,
      ctime: k.ctime,
      buckets: buckets.filter((b) => b.owner === k.accessKey).map((b) => b.name),
    }));
    return { root: { accessKey: g.keys.accessKey }, accounts };
  });

  app.post('/api/keys', async (request) => {
    requireRoot(await callerOf(sessions, request), 'manage key pairs');
    const pair = await g.keyIndex.create(nowSeconds(g.clock));
    request.log.info({ accessKey: pair.accessKey }, 'console: account key pair created');
    return pair;
  });

  app.delete('/api/keys/:accessKey', async (request, reply) => {
    requireRoot(await callerOf(sessions, request), 'manage key pairs');
    const accessKey = pathParam(request, 'accessKey');
    if (g.keyIndex.isRoot(accessKey)) throw Errors.badRequest('the root key pair cannot be deleted here');
    if (!(await g.meta.deleteAccessKey(accessKey))) throw Errors.notFound(`no account key ${accessKey}`);
    await g.keyIndex.reload();
    await sessions.endAllOf(accessKey);
    request.log.info({ accessKey }, 'console: account key pair deleted');
    return reply.code(204).send();
  });
}
