/**
 * The auth step of the route table: the one place a route's credential is checked and its bucket authorised
 * (`requireManagement` and `authorizeBucket` are called nowhere else under src/roles and src/console; a unit test
 * checks it). `authStep(entry, …)` builds, once at registration, the route's `preHandler` from its table entry
 * (types.ts `AuthKind`, `BucketRule`): it runs before the handler and leaves a `RouteCall` on the request, which the
 * handler receives. Routes whose credential is checked by their own path (upload tokens, downloads, none) get the
 * route's one constant `RouteCall`, built at registration: no per-request allocation on the hot paths.
 *
 * IAM (the table's `iam` column, types.ts `RouteIam`; docs/reference/iam.md): the credential's key is the root, an
 * account owner or a sub-user (auth/key-index.ts). `owner-only` routes refuse a sub-user here (403); a route's
 * action is evaluated here for a `param`/`query` bucket and handed to the handler's `call.authorize` for the buckets
 * it finds itself (`in-handler`), so a sub-user is checked on every bucket and key with the route's action; a
 * sub-user key unknown here (created through another process a moment ago) makes the index look at the store's
 * change counter once before the 401.
 *
 * Errors, in order: the route's `precheck` (400), then 401/403 for the credential (docs/development/kodo-protocol.md
 * §2.2–2.3; console: 403 `consoleCsrf`, 401 `consoleNoSession`, 400 `consoleCookieConflict`; metrics: 401), then
 * 403 for a sub-user on an `owner-only` route, 400 for a missing bucket parameter, 631 a missing bucket, 403
 * another account's or a sub-user's bucket its policies do not allow; 503 `iamUnavailable` (fail closed).
 */
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { authorizeBucket, requireAccountKey } from '../auth/authorize.js';
import { verifyManagement, type Caller } from '../auth/management.js';
import { upTokenFromAuthorization } from '../auth/upload-token.js';
import { callerOf } from '../console/guard.js';
import type { Granary } from '../context.js';
import { Errors, isKodoError } from '../errors.js';
import { checkMetricsToken } from '../metrics/route.js';
import type { BucketRecord } from '../ports/meta.js';
import { params, requiredParam, signedRequestOf } from '../http/wire.js';
import { RouteCall } from '../http/route-call.js';
import type { RouteEntry } from './types.js';

/**
 * Verifies a `QBox`/`Qiniu` management credential (401/403 on failure, docs/development/kodo-protocol.md §2.2–2.3);
 * an unknown key makes the key index look for a change made elsewhere once (KeyIndex.refresh) before the 401.
 */
export async function requireManagement(g: Granary, request: FastifyRequest): Promise<Caller> {
  const verify = (): Caller =>
    verifyManagement(signedRequestOf(request), g.secretOf, g.clock.nowMs(), { dateWindowSeconds: g.config.dateWindowSeconds });
  try {
    return verify();
  } catch (err) {
    if (isKodoError(err, 'unknownAccessKey') && (await g.keyIndex.refresh())) return verify();
    throw err;
  }
}

/** The route's Kodo action for this request (its `iam` column), or undefined for `none`/`owner-only`/`each`. */
export function routeAction(entry: RouteEntry<unknown, unknown>, request: FastifyRequest): string | undefined {
  const iam = entry.iam;
  if (typeof iam === 'string' || !('action' in iam)) return undefined;
  return typeof iam.action === 'string' ? iam.action : iam.action(request);
}

/** A path parameter the route needs (400 when absent or empty). */
function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

/**
 * The bucket named by the table's rule, authorised for `accessKey` with the route's action (`action`; undefined:
 * a sub-user is refused); undefined when the rule names none.
 */
function ruleBucket(
  g: Granary,
  entry: RouteEntry<unknown, unknown>,
  request: FastifyRequest,
  accessKey: string,
  action: string | undefined,
  door: 'kodo' | 'console',
): Promise<BucketRecord> | undefined {
  const rule = entry.bucket;
  const ask = action === undefined ? undefined : { action, door, requestId: request.id };
  if (rule.from === 'param') return authorizeBucket(g, accessKey, pathParam(request, rule.name), ask);
  if (rule.from === 'query') return authorizeBucket(g, accessKey, requiredParam(params(request), rule.name), ask);
  return undefined;
}

/** The IAM part of the step for an authenticated key: `owner-only` (403 for a sub-user), then the route's action. */
function iamOf(g: Granary, entry: RouteEntry<unknown, unknown>, request: FastifyRequest, accessKey: string, door: 'kodo' | 'console'): string | undefined {
  if (entry.iam === 'owner-only') requireAccountKey(g, accessKey, entry.operation, door, request.id);
  return routeAction(entry, request);
}

/** Refreshes the key index once when the `Authorization: UpToken <ak>:…` names an AccessKey it does not know. */
async function freshTokenKey(g: Granary, request: FastifyRequest): Promise<void> {
  const token = upTokenFromAuthorization(typeof request.headers.authorization === 'string' ? request.headers.authorization : undefined);
  const colon = token?.indexOf(':') ?? -1;
  if (token === undefined || colon <= 0) return;
  if (g.keyIndex.secretOf(token.slice(0, colon)) === undefined) await g.keyIndex.refresh();
}

/** What the console's auth step needs of its context. */
interface ConsoleContext {
  sessions: Parameters<typeof callerOf>[0];
}

/**
 * The route's `preHandler` (undefined when its auth kind is checked by the handler's own path) and the constant
 * `RouteCall` of routes without one. Built once per route at registration.
 */
export function authStep<Ctx, Who>(
  entry: RouteEntry<Ctx, Who>,
  ctx: Ctx,
  g: Granary,
): { preHandler?: preHandlerAsyncHookHandler; constant: RouteCall<Ctx, Who> } {
  const e = entry as RouteEntry<unknown, unknown>;
  const constant = new RouteCall<Ctx, Who>(ctx, g, undefined, undefined, undefined);
  const precheck = entry.precheck;
  const needsBucket = e.bucket.from === 'param' || e.bucket.from === 'query';
  switch (entry.auth) {
    case 'management':
      return {
        constant,
        preHandler: async (request) => {
          precheck?.(request);
          const caller = await requireManagement(g, request);
          const action = iamOf(g, e, request, caller.accessKey, 'kodo');
          const bucket = needsBucket ? await ruleBucket(g, e, request, caller.accessKey, action, 'kodo') : undefined;
          request.routeCall = new RouteCall(ctx, g, caller, bucket, { action, door: 'kodo', requestId: request.id }) as RouteCall<unknown, unknown>;
        },
      };
    case 'console-session': {
      const sessions = (ctx as unknown as ConsoleContext).sessions;
      return {
        constant,
        preHandler: async (request) => {
          precheck?.(request);
          const session = await callerOf(sessions, request);
          const action = iamOf(g, e, request, session.accessKey, 'console');
          const bucket = needsBucket ? await ruleBucket(g, e, request, session.accessKey, action, 'console') : undefined;
          request.routeCall = new RouteCall(ctx, g, session, bucket, { action, door: 'console', requestId: request.id }) as RouteCall<unknown, unknown>;
        },
      };
    }
    case 'console-session-optional': {
      const sessions = (ctx as unknown as ConsoleContext).sessions;
      if (needsBucket) throw new Error(`route table: ${entry.operation} authorises a bucket without a sure caller`);
      return {
        constant,
        preHandler: async (request) => {
          precheck?.(request);
          let session: Who | undefined;
          try {
            session = (await callerOf(sessions, request)) as Who;
          } catch (err) {
            // No session (401) is a normal answer here; a cookie conflict (400) or CSRF refusal stays an error.
            if (!(isKodoError(err) && err.status === 401)) throw err;
          }
          request.routeCall = new RouteCall(ctx, g, session, undefined, undefined) as RouteCall<unknown, unknown>;
        },
      };
    }
    case 'metrics-token':
      return {
        constant,
        preHandler: async (request) => {
          checkMetricsToken(g.config.metricsToken, request.headers.authorization);
        },
      };
    case 'uploadToken':
      if (needsBucket) throw new Error(`route table: ${entry.operation} authorises a bucket without a caller`);
      // The token is verified by the upload path; an AccessKey unknown here (a sub-user key pair created through
      // another process a moment ago) makes the key index look at the change counter once first. Form uploads carry
      // the token in the body: their key is known within the index's poll (250 ms).
      return {
        constant,
        preHandler: async (request) => {
          precheck?.(request);
          await freshTokenKey(g, request);
        },
      };
    case 'download':
    case 'none':
    case 'console-signin':
      if (needsBucket) throw new Error(`route table: ${entry.operation} authorises a bucket without a caller`);
      return precheck ? { constant, preHandler: async (request) => precheck(request) } : { constant };
  }
}
