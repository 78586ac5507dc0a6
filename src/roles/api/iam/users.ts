/**
 * Kodo IAM sub-users and their key pairs (go-sdk iam/apis: CreateUser, GetUsers, GetUser, ModifyUser, DeleteUser,
 * CreateUserKeypairs, GetUserKeypairs, EnableUserKeypair, DisableUserKeypair, DeleteUserKeypair):
 * - `POST /iam/v1/users` `{alias, password}` → `{data: user}`; 400 bad alias/password, 614 alias taken.
 * - `GET /iam/v1/users?alias=&page=&page_size=` → `{data: {count, list}}` (alias: a prefix filter).
 * - `GET|PATCH|DELETE /iam/v1/users/<alias>` (PATCH `{enabled, password}`) → `{data: user}` / `{}`; 612 unknown.
 * - `POST /iam/v1/users/<alias>/keypairs` → `{data: keypair}` (a new AccessKey/SecretKey); `GET` → the list.
 * - `POST /iam/v1/users/<alias>/keypairs/<ak>/enable|disable`, `DELETE /iam/v1/users/<alias>/keypairs/<ak>` → `{}`;
 *   612 unknown user or pair.
 * A user as JSON: `{id, root_uid, iuid, alias, created_at, updated_at, last_login_time, enabled}`; a key pair:
 * `{id, access_key, secret_key, user_id, created_at, enabled}`. Deleting a user deletes its key pairs in the same
 * transaction. Sub-user key pairs do not authenticate any request yet (docs/reference/iam.md).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../../errors.js';
import * as admin from '../../../iam/admin.js';
import { sendEmpty } from '../../../http/wire.js';
import { actorOf, type Call, jsonBody, keyPairJson, pageOf, pathParam, queryOf, sendData, sendPage, userJson } from './wire.js';

export async function createUser(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, userJson(await admin.createUser(call.g, actorOf(call, request), jsonBody(request))));
}

export async function getUsers(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = queryOf(request).get('alias') || undefined;
  return sendPage(reply, await call.g.meta.iam.listUsers(call.caller.accessKey, pageOf(request), alias), userJson);
}

export async function getUser(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, userJson(await admin.getUser(call.g, call.caller.accessKey, pathParam(request, 'alias'))));
}

export async function modifyUser(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, userJson(await admin.modifyUser(call.g, actorOf(call, request), pathParam(request, 'alias'), jsonBody(request))));
}

export async function deleteUser(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deleteUser(call.g, actorOf(call, request), pathParam(request, 'alias'));
  return sendEmpty(reply);
}

export async function createUserKeypairs(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, keyPairJson(await admin.createKeyPair(call.g, actorOf(call, request), pathParam(request, 'alias'))));
}

export async function getUserKeypairs(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const alias = pathParam(request, 'alias');
  const page = pageOf(request);
  await admin.getUser(call.g, call.caller.accessKey, alias);
  return sendPage(reply, await call.g.meta.iam.listKeyPairs(call.caller.accessKey, alias, page), keyPairJson);
}

/** `POST …/keypairs/:accessKey/enable` and `/disable`. */
function setEnabled(enabled: boolean) {
  return async (call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    await admin.setKeyPairEnabled(call.g, actorOf(call, request), pathParam(request, 'alias'), pathParam(request, 'accessKey'), enabled);
    return sendEmpty(reply);
  };
}
export const enableUserKeypair = setEnabled(true);
export const disableUserKeypair = setEnabled(false);

export async function deleteUserKeypair(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const accessKey = pathParam(request, 'accessKey');
  if (accessKey.length > 256) throw Errors.noSuchIamKeyPair();
  await admin.deleteKeyPair(call.g, actorOf(call, request), pathParam(request, 'alias'), accessKey);
  return sendEmpty(reply);
}
