/**
 * The console's IAM sub-user screens (docs/guides/iam.md), over the same domain functions as the Kodo IAM API
 * (iam/admin.ts) and in its JSON shapes (roles/api/iam/wire.ts), in the namespace of iam-scope.ts (`?account=`):
 * - `GET /api/iam/users?alias=<prefix>&page=&page_size=` → `{count, list: [user]}`;
 * - `POST /api/iam/users` `{alias, password}` → user (400 bad alias/password, 614 taken);
 * - `GET /api/iam/users/:alias` → `{user, keys: [key pair without secret_key], groups: [group], policies: [policy]}`;
 * - `PATCH /api/iam/users/:alias` `{enabled?, password?}` → user; `DELETE` → 204 (its key pairs go with it);
 * - `POST /api/iam/users/:alias/keys` → key pair with its `secret_key` (the only answer that carries it: the page
 *   shows it once); `PATCH /api/iam/users/:alias/keys/:accessKey` `{enabled}` → 204; `DELETE` → 204;
 * - `PUT /api/iam/users/:alias/groups` `{groups: [alias]}`, `PUT /api/iam/users/:alias/policies`
 *   `{policies: [alias]}`: make the user's groups / attached policies exactly these (unknown aliases ignored) → 204.
 * 612 for an unknown user or key pair.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import * as admin from '../iam/admin.js';
import { groupJson, keyPairJson, pageOf, policyJson, userJson } from '../roles/api/iam/wire.js';
import { bodyOf, flag, pathParam, queryParam } from './body.js';
import { allPages } from './iam-lists.js';
import { iamActor, iamOwner, type IamCall } from './iam-scope.js';

/** A key pair as the console lists it: never its SecretKey. */
function listedKey(k: Parameters<typeof keyPairJson>[0]): Record<string, unknown> {
  const { secret_key: _secret, ...rest } = keyPairJson(k);
  return rest;
}

export async function listIamUsersApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const owner = await iamOwner(call, request);
  const page = await call.g.meta.iam.listUsers(owner, pageOf(request), queryParam(request, 'alias') || undefined);
  return { count: page.count, list: page.list.map(userJson) };
}

export async function createIamUserApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  return userJson(await admin.createUser(call.g, await iamActor(call, request), bodyOf(request)));
}

export async function iamUserApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const owner = await iamOwner(call, request);
  const alias = pathParam(request, 'alias');
  const user = await admin.getUser(call.g, owner, alias);
  const iam = call.g.meta.iam;
  const [keys, groups, policies] = await Promise.all([
    allPages((p) => iam.listKeyPairs(owner, alias, p)),
    allPages((p) => iam.userGroups(owner, alias, p)),
    allPages((p) => iam.attachedPolicies(owner, 'user-policy', alias, p)),
  ]);
  return {
    user: userJson(user),
    keys: (keys ?? []).map(listedKey),
    groups: (groups ?? []).map(groupJson),
    policies: (policies ?? []).map(policyJson),
  };
}

export async function updateIamUserApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  return userJson(await admin.modifyUser(call.g, await iamActor(call, request), pathParam(request, 'alias'), bodyOf(request)));
}

export async function deleteIamUserApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deleteUser(call.g, await iamActor(call, request), pathParam(request, 'alias'));
  return reply.code(204).send();
}

export async function createIamKeyApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const pair = await admin.createKeyPair(call.g, await iamActor(call, request), pathParam(request, 'alias'));
  request.log.info({ user: pair.userAlias, accessKey: pair.accessKey }, 'console: IAM key pair created');
  return keyPairJson(pair);
}

/** The `:accessKey` of a key pair path (612 for one no key pair can have). */
function accessKeyOf(request: FastifyRequest): string {
  const ak = pathParam(request, 'accessKey');
  if (ak.length > 256) throw Errors.noSuchIamKeyPair();
  return ak;
}

export async function updateIamKeyApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const enabled = flag(bodyOf(request), 'enabled');
  await admin.setKeyPairEnabled(call.g, await iamActor(call, request), pathParam(request, 'alias'), accessKeyOf(request), enabled);
  return reply.code(204).send();
}

export async function deleteIamKeyApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deleteKeyPair(call.g, await iamActor(call, request), pathParam(request, 'alias'), accessKeyOf(request));
  return reply.code(204).send();
}

export async function setIamUserGroupsApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const groups = admin.checkAliasList(bodyOf(request).groups, 'groups');
  await admin.setLinksTo(call.g, await iamActor(call, request), 'group-user', pathParam(request, 'alias'), groups, 'UpdateUserGroups');
  return reply.code(204).send();
}

export async function setIamUserPoliciesApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const policies = admin.checkAliasList(bodyOf(request).policies, 'policies');
  await admin.changeLinks(call.g, await iamActor(call, request), 'user-policy', pathParam(request, 'alias'), 'set', policies, 'UpdateUserPolicies');
  return reply.code(204).send();
}
