/**
 * Kodo IAM policies and their attachments (go-sdk iam/apis: CreatePolicy, GetPolicies, GetPolicy, ModifyPolicy,
 * DeletePolicy, GetPolicyUsers, UpdatePolicyUsers, GetPolicyGroups, UpdatePolicyGroups, GetUserPolicies,
 * UpdateUserPolicies, ModifyUserPolicies, DeleteUserPolicy, GetGroupPolicies, UpdateGroupPolicies,
 * ModifyGroupPolicies, DeleteGroupPolicies):
 * - `POST /iam/v1/policies` `{alias, description, edit_type, statement: [{action, resource, effect}]}` →
 *   `{data: policy}`; 400 `badIamPolicy` naming the field (iam/policy.ts), 614 alias taken.
 * - `GET /iam/v1/policies` → `{data: {count, list}}`; `GET|PATCH|DELETE /iam/v1/policies/<alias>` (PATCH `{alias,
 *   description, statement}`) → `{data: policy}` / `{}`; 612 unknown. Deleting detaches it everywhere.
 * - `GET /iam/v1/policies/<alias>/users|groups` → who it is attached to; `POST` `{user_aliases}` / `{group_aliases}`
 *   sets them.
 * - `GET /iam/v1/users/<alias>/policies`, `/iam/v1/groups/<alias>/policies` → attached policies; `POST`
 *   `{policy_aliases}` sets, `PATCH` adds, `DELETE` removes. Aliases that name nothing are ignored (as Kodo: the
 *   go-sdk IAM test relies on it).
 * A policy as JSON: `{id, root_uid, alias, description, edit_type, enabled, created_at, updated_at, statement}`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../../errors.js';
import * as admin from '../../../iam/admin.js';
import type { LinkChange } from '../../../ports/iam.js';
import { sendEmpty } from '../../../http/wire.js';
import { actorOf, type Call, groupJson, jsonBody, pageOf, pathParam, policyJson, sendData, sendPage, userJson } from './wire.js';

export async function createPolicy(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { policy } = await admin.createPolicy(call.g, actorOf(call, request), jsonBody(request));
  return sendData(reply, policyJson(policy));
}

export async function getPolicies(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendPage(reply, await call.g.meta.iam.listPolicies(call.caller.accessKey, pageOf(request)), policyJson);
}

export async function getPolicy(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, policyJson(await admin.getPolicy(call.g, call.caller.accessKey, pathParam(request, 'alias'))));
}

export async function modifyPolicy(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, policyJson(await admin.modifyPolicy(call.g, actorOf(call, request), pathParam(request, 'alias'), jsonBody(request))));
}

export async function deletePolicy(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deletePolicy(call.g, actorOf(call, request), pathParam(request, 'alias'));
  return sendEmpty(reply);
}

export async function getPolicyUsers(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = pathParam(request, 'alias');
  const page = await call.g.meta.iam.policyUsers(call.caller.accessKey, alias, pageOf(request));
  if (!page) throw Errors.noSuchIamPolicy(alias);
  return sendPage(reply, page, userJson);
}

export async function getPolicyGroups(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = pathParam(request, 'alias');
  const page = await call.g.meta.iam.policyGroups(call.caller.accessKey, alias, pageOf(request));
  if (!page) throw Errors.noSuchIamPolicy(alias);
  return sendPage(reply, page, groupJson);
}

export async function updatePolicyUsers(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const users = admin.checkAliasList(jsonBody(request).user_aliases, 'user_aliases');
  await admin.setLinksTo(call.g, actorOf(call, request), 'user-policy', pathParam(request, 'alias'), users, 'UpdatePolicyUsers');
  return sendEmpty(reply);
}

export async function updatePolicyGroups(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const groups = admin.checkAliasList(jsonBody(request).group_aliases, 'group_aliases');
  await admin.setLinksTo(call.g, actorOf(call, request), 'group-policy', pathParam(request, 'alias'), groups, 'UpdatePolicyGroups');
  return sendEmpty(reply);
}

/** `GET /iam/v1/users/:alias/policies` and `/iam/v1/groups/:alias/policies`. */
function attached(kind: 'user-policy' | 'group-policy') {
  return async (call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const alias = pathParam(request, 'alias');
    const page = await call.g.meta.iam.attachedPolicies(call.caller.accessKey, kind, alias, pageOf(request));
    if (!page) throw kind === 'user-policy' ? Errors.noSuchIamUser(alias) : Errors.noSuchIamGroup(alias);
    return sendPage(reply, page, policyJson);
  };
}
export const getUserPolicies = attached('user-policy');
export const getGroupPolicies = attached('group-policy');

/** `POST|PATCH|DELETE …/policies` `{policy_aliases}`: set, add, remove. */
function attach(kind: 'user-policy' | 'group-policy', change: LinkChange, auditAction: string) {
  return async (call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const policies = admin.checkAliasList(jsonBody(request).policy_aliases, 'policy_aliases');
    await admin.changeLinks(call.g, actorOf(call, request), kind, pathParam(request, 'alias'), change, policies, auditAction);
    return sendEmpty(reply);
  };
}
export const updateUserPolicies = attach('user-policy', 'set', 'UpdateUserPolicies');
export const modifyUserPolicies = attach('user-policy', 'add', 'ModifyUserPolicies');
export const deleteUserPolicy = attach('user-policy', 'remove', 'DeleteUserPolicy');
export const updateGroupPolicies = attach('group-policy', 'set', 'UpdateGroupPolicies');
export const modifyGroupPolicies = attach('group-policy', 'add', 'ModifyGroupPolicies');
export const deleteGroupPolicies = attach('group-policy', 'remove', 'DeleteGroupPolicies');
