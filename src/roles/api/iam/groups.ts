/**
 * Kodo IAM groups and their members (go-sdk iam/apis: CreateGroup, GetGroups, GetGroup, ModifyGroup, DeleteGroup,
 * GetGroupUsers, UpdateGroupUsers, ModifyGroupUsers, DeleteGroupUsers, GetUserGroups, UpdateUserGroups):
 * - `POST /iam/v1/groups` `{alias, description}` → `{data: group}`; 400 bad alias, 614 alias taken.
 * - `GET /iam/v1/groups` → `{data: {count, list}}`; `GET|PATCH|DELETE /iam/v1/groups/<alias>` (PATCH `{alias,
 *   description}`: a rename keeps members and policies) → `{data: group}` / `{}`; 612 unknown.
 * - `GET /iam/v1/groups/<alias>/users` → the members; `POST` `{user_aliases}` sets them, `PATCH` adds, `DELETE`
 *   removes (`{}`); aliases that name no user are ignored.
 * - `GET /iam/v1/users/<alias>/groups` → the user's groups; `POST` `{group_aliases}` sets them.
 * A group as JSON: `{id, root_uid, alias, description, enabled, created_at, updated_at}`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as admin from '../../../iam/admin.js';
import type { LinkChange } from '../../../ports/iam.js';
import { sendEmpty } from '../../../http/wire.js';
import { actorOf, type Call, groupJson, jsonBody, pageOf, pathParam, sendData, sendPage, userJson } from './wire.js';
import { Errors } from '../../../errors.js';

export async function createGroup(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, groupJson(await admin.createGroup(call.g, actorOf(call, request), jsonBody(request))));
}

export async function getGroups(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendPage(reply, await call.g.meta.iam.listGroups(call.caller.accessKey, pageOf(request)), groupJson);
}

export async function getGroup(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, groupJson(await admin.getGroup(call.g, call.caller.accessKey, pathParam(request, 'alias'))));
}

export async function modifyGroup(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, groupJson(await admin.modifyGroup(call.g, actorOf(call, request), pathParam(request, 'alias'), jsonBody(request))));
}

export async function deleteGroup(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deleteGroup(call.g, actorOf(call, request), pathParam(request, 'alias'));
  return sendEmpty(reply);
}

export async function getGroupUsers(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = pathParam(request, 'alias');
  const page = await call.g.meta.iam.groupUsers(call.caller.accessKey, alias, pageOf(request));
  if (!page) throw Errors.noSuchIamGroup(alias);
  return sendPage(reply, page, userJson);
}

/** `POST|PATCH|DELETE /iam/v1/groups/:alias/users` `{user_aliases}`: set, add, remove. */
function groupUsers(change: LinkChange, auditAction: string) {
  return async (call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const users = admin.checkAliasList(jsonBody(request).user_aliases, 'user_aliases');
    await admin.changeLinks(call.g, actorOf(call, request), 'group-user', pathParam(request, 'alias'), change, users, auditAction);
    return sendEmpty(reply);
  };
}
export const updateGroupUsers = groupUsers('set', 'UpdateGroupUsers');
export const modifyGroupUsers = groupUsers('add', 'ModifyGroupUsers');
export const deleteGroupUsers = groupUsers('remove', 'DeleteGroupUsers');

export async function getUserGroups(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = pathParam(request, 'alias');
  const page = await call.g.meta.iam.userGroups(call.caller.accessKey, alias, pageOf(request));
  if (!page) throw Errors.noSuchIamUser(alias);
  return sendPage(reply, page, groupJson);
}

export async function updateUserGroups(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const groups = admin.checkAliasList(jsonBody(request).group_aliases, 'group_aliases');
  await admin.setLinksTo(call.g, actorOf(call, request), 'group-user', pathParam(request, 'alias'), groups, 'UpdateUserGroups');
  return sendEmpty(reply);
}
