/**
 * The console's IAM group screens (docs/guides/iam.md), in the namespace of iam-scope.ts (`?account=`), over
 * iam/admin.ts and in the Kodo IAM API's JSON shapes (roles/api/iam/wire.ts):
 * - `GET /api/iam/groups?page=&page_size=` → `{count, list: [group]}`; `POST /api/iam/groups` `{alias, description}`
 *   → group (400 bad alias, 614 taken);
 * - `GET /api/iam/groups/:alias` → `{group, users: [user], policies: [policy]}`;
 * - `PATCH /api/iam/groups/:alias` `{alias?, description?}` → group (a rename keeps members and policies);
 *   `DELETE` → 204;
 * - `PUT /api/iam/groups/:alias/users` `{users: [alias]}`, `PUT /api/iam/groups/:alias/policies`
 *   `{policies: [alias]}`: make the members / attached policies exactly these (unknown aliases ignored) → 204.
 * 612 for an unknown group.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as admin from '../iam/admin.js';
import { groupJson, pageOf, policyJson, userJson } from '../roles/api/iam/wire.js';
import { bodyOf, pathParam } from './body.js';
import { allPages } from './iam-lists.js';
import { iamActor, iamOwner, type IamCall } from './iam-scope.js';

export async function listIamGroupsApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const page = await call.g.meta.iam.listGroups(await iamOwner(call, request), pageOf(request));
  return { count: page.count, list: page.list.map(groupJson) };
}

export async function createIamGroupApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  return groupJson(await admin.createGroup(call.g, await iamActor(call, request), bodyOf(request)));
}

export async function iamGroupApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const owner = await iamOwner(call, request);
  const alias = pathParam(request, 'alias');
  const group = await admin.getGroup(call.g, owner, alias);
  const iam = call.g.meta.iam;
  const [users, policies] = await Promise.all([
    allPages((p) => iam.groupUsers(owner, alias, p)),
    allPages((p) => iam.attachedPolicies(owner, 'group-policy', alias, p)),
  ]);
  return { group: groupJson(group), users: (users ?? []).map(userJson), policies: (policies ?? []).map(policyJson) };
}

export async function updateIamGroupApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  return groupJson(await admin.modifyGroup(call.g, await iamActor(call, request), pathParam(request, 'alias'), bodyOf(request)));
}

export async function deleteIamGroupApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deleteGroup(call.g, await iamActor(call, request), pathParam(request, 'alias'));
  return reply.code(204).send();
}

export async function setIamGroupUsersApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const users = admin.checkAliasList(bodyOf(request).users, 'users');
  await admin.changeLinks(call.g, await iamActor(call, request), 'group-user', pathParam(request, 'alias'), 'set', users, 'UpdateGroupUsers');
  return reply.code(204).send();
}

export async function setIamGroupPoliciesApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const policies = admin.checkAliasList(bodyOf(request).policies, 'policies');
  await admin.changeLinks(call.g, await iamActor(call, request), 'group-policy', pathParam(request, 'alias'), 'set', policies, 'UpdateGroupPolicies');
  return reply.code(204).send();
}
