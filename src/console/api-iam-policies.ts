/**
 * The console's IAM policy screens and audit log (docs/guides/iam.md), in the namespace of iam-scope.ts
 * (`?account=`), over iam/admin.ts and in the Kodo IAM API's JSON shapes (roles/api/iam/wire.ts, audits.ts):
 * - `GET /api/iam/policies?page=&page_size=` → `{count, list: [policy]}`;
 * - `POST /api/iam/policies` `{alias, description, statement: [{action, resource, effect}]}` → policy; a bad
 *   statement answers 400 `invalid IAM policy: statement[i].<field>[j]: <why>` (iam/policy.ts), which the editor
 *   shows against that field; 614 alias taken;
 * - `GET /api/iam/policies/:alias` → `{policy, users: [user], groups: [group]}`;
 * - `PATCH /api/iam/policies/:alias` `{alias?, description?, statement?}` → policy; `DELETE` → 204 (detached
 *   everywhere);
 * - `GET /api/iam/actions` → `{list: [{action, description, scope}]}`: the action catalogue (iam/actions.ts), with
 *   `*` and `kodo/*`;
 * - `GET /api/iam/audits?marker=&limit=&action=&resource=` → `{marker, list: [audit]}`, oldest first (`marker` ""
 *   when there is no more; `limit` 1–1000, default 50).
 * 612 for an unknown policy.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { KODO_ACTIONS } from '../iam/actions.js';
import * as admin from '../iam/admin.js';
import { auditJson } from '../roles/api/iam/audits.js';
import { groupJson, pageOf, policyJson, userJson } from '../roles/api/iam/wire.js';
import { bodyOf, pathParam, queryParam } from './body.js';
import { allPages } from './iam-lists.js';
import { iamActor, iamOwner, type IamCall } from './iam-scope.js';

export async function listIamPoliciesApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const page = await call.g.meta.iam.listPolicies(await iamOwner(call, request), pageOf(request));
  return { count: page.count, list: page.list.map(policyJson) };
}

export async function createIamPolicyApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const b = bodyOf(request);
  // The console's editor is the UI kind of Kodo's edit_type (2).
  const { policy } = await admin.createPolicy(call.g, await iamActor(call, request), { ...b, edit_type: b.edit_type ?? 2 });
  return policyJson(policy);
}

export async function iamPolicyApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const owner = await iamOwner(call, request);
  const alias = pathParam(request, 'alias');
  const policy = await admin.getPolicy(call.g, owner, alias);
  const iam = call.g.meta.iam;
  const [users, groups] = await Promise.all([allPages((p) => iam.policyUsers(owner, alias, p)), allPages((p) => iam.policyGroups(owner, alias, p))]);
  return { policy: policyJson(policy), users: (users ?? []).map(userJson), groups: (groups ?? []).map(groupJson) };
}

export async function updateIamPolicyApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  return policyJson(await admin.modifyPolicy(call.g, await iamActor(call, request), pathParam(request, 'alias'), bodyOf(request)));
}

export async function deleteIamPolicyApi(call: IamCall, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  await admin.deletePolicy(call.g, await iamActor(call, request), pathParam(request, 'alias'));
  return reply.code(204).send();
}

const ACTIONS = {
  list: [
    { action: '*', description: 'every action of every service', scope: 'resource' },
    { action: 'kodo/*', description: 'every Kodo action', scope: 'resource' },
    ...KODO_ACTIONS.map((a) => ({ action: `${a.service}/${a.name}`, description: a.description, scope: a.scope })),
  ],
};

export async function iamActionsApi(): Promise<unknown> {
  return ACTIONS;
}

/** Default and largest page of the audit log. */
const AUDITS_DEFAULT = 50;
const AUDITS_MAX = 1000;

export async function iamAuditsApi(call: IamCall, request: FastifyRequest): Promise<unknown> {
  const owner = await iamOwner(call, request);
  const marker = queryParam(request, 'marker') || '0';
  if (!/^\d{1,15}$/.test(marker)) throw Errors.badRequest('marker is not one this server gave');
  const limitText = queryParam(request, 'limit');
  const limit = limitText === '' ? AUDITS_DEFAULT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDITS_MAX) throw Errors.badRequest(`limit must be an integer between 1 and ${AUDITS_MAX}`);
  const action = queryParam(request, 'action');
  const resource = queryParam(request, 'resource');
  const list = await call.g.meta.iam.listAudits(owner, {
    afterSeq: Number(marker),
    limit,
    ...(action ? { action } : {}),
    ...(resource ? { resource } : {}),
  });
  return { marker: list.length === limit ? String(list[list.length - 1]!.seq) : '', list: list.map(auditJson) };
}
