/**
 * Whose IAM objects a console IAM call acts on (the console's IAM screens, api-iam-*.ts; docs/guides/iam.md).
 * IAM objects are namespaced by an account's AccessKey (ports/iam.ts). An account session manages its own
 * sub-users, groups and policies; the root session manages its own and — with `?account=<AccessKey>` — any
 * account's, so the root key sees all. The audit log records the session's AccessKey as the actor (the root key
 * when it acts in an account's namespace).
 *
 * Errors: 403 `forbidden` when an account session names another account; 404 `notFound` when the root session
 * names an AccessKey that is neither the root key nor an account key.
 */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import type { RouteCall } from '../http/route-call.js';
import type { IamActor } from '../iam/admin.js';
import type { ConsoleApi } from './api-context.js';
import { queryParam } from './body.js';
import type { ConsoleSession } from './sessions.js';

export type IamCall = RouteCall<ConsoleApi, ConsoleSession>;

/** The namespace (account AccessKey) of the call: the session's own, or for the root session `?account=`. */
export async function iamOwner(call: IamCall, request: FastifyRequest): Promise<string> {
  const session = call.caller;
  const asked = queryParam(request, 'account');
  if (asked === '' || asked === session.accessKey) return session.accessKey;
  if (!session.root) throw Errors.forbidden("an account manages only its own sub-users, groups and policies");
  const { g } = call;
  if (g.keyIndex.isRoot(asked) || g.keyIndex.pairOf(asked)) return asked;
  if ((await g.meta.listAccessKeys()).some((k) => k.accessKey === asked)) return asked;
  throw Errors.notFound(`no account key ${asked}`);
}

/** The acting account for the audit log: the namespace, and the session's AccessKey when it differs. */
export async function iamActor(call: IamCall, request: FastifyRequest): Promise<IamActor> {
  const owner = await iamOwner(call, request);
  return {
    owner,
    ...(owner !== call.caller.accessKey ? { by: call.caller.accessKey } : {}),
    requestId: String(request.id),
    sourceIp: request.ip,
  };
}
