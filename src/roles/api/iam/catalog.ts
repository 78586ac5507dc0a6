/**
 * The Kodo IAM catalogue and what a principal may do (go-sdk iam/apis: GetActions, GetServices,
 * GetUserAvailableServices, GetUserServiceActionResources, GetGroupServiceActionResources):
 * - `GET /iam/v1/actions?service=&page=&page_size=` → `{data: {count, list: [{id, name, alias, service, scope,
 *   enabled, created_at, updated_at}]}}`: `alias` is the action (`Get`), `name` what it allows, `scope` 0 service-level,
 *   1 resource-level (iam/actions.ts).
 * - `GET /iam/v1/services` → `{data: ["kodo"]}`.
 * - `GET /iam/v1/users/<alias>/services` → `{data: [service…]}`: services some statement of the user's policies
 *   (its own and its groups') allows.
 * - `GET /iam/v1/users|groups/<alias>/services/<service>/actions/<action>/resources` → `{data: {allow: […],
 *   deny: […]}}`: the resources of the statements naming that action (its own and, for a user, its groups').
 * 612 for an unknown user or group.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KODO_ACTIONS, SERVICES } from '../../../iam/actions.js';
import * as admin from '../../../iam/admin.js';
import { actionMatches } from '../../../iam/evaluate.js';
import { storedStatements, type Statement } from '../../../iam/policy.js';
import { Errors } from '../../../errors.js';
import type { IamPolicyRecord } from '../../../ports/iam.js';
import { type Call, pageOf, pathParam, queryOf, sendData } from './wire.js';

/** When the catalogue was taken from Qiniu's page (its "last updated"): the actions' created_at/updated_at. */
const CATALOGUE_TIME = '2023-06-29T12:31:57Z';

/** The action catalogue as `GET /iam/v1/actions` lists it (also `granary iam actions` offline). */
export const ACTION_ROWS = KODO_ACTIONS.map((a) => ({
  id: createHash('sha256').update(`${a.service}/${a.name}`).digest('hex').slice(0, 24),
  name: a.description,
  alias: a.name,
  service: a.service,
  scope: a.scope === 'service' ? 0 : 1,
  enabled: true,
  created_at: CATALOGUE_TIME,
  updated_at: CATALOGUE_TIME,
}));

export async function getActions(_call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const service = queryOf(request).get('service') || undefined;
  const page = pageOf(request);
  const rows = ACTION_ROWS.filter((a) => service === undefined || a.service === service);
  return sendData(reply, { count: rows.length, list: rows.slice(page.offset, page.offset + page.limit) });
}

export async function getServices(_call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const page = pageOf(request);
  return sendData(reply, SERVICES.slice(page.offset, page.offset + page.limit));
}

/** Every statement of the policies. */
const statementsOf = (policies: readonly IamPolicyRecord[]): Statement[] => policies.filter((p) => p.enabled).flatMap((p) => storedStatements(p.statement));

/** A user's statements: its own policies' and its enabled groups'. 612 unknown user. */
async function userStatements(call: Call, alias: string): Promise<Statement[]> {
  const eff = await call.g.meta.iam.effectivePolicies(call.caller.accessKey, alias);
  if (!eff) throw Errors.noSuchIamUser(alias);
  return [...statementsOf(eff.own), ...eff.groups.flatMap((gr) => statementsOf(gr.policies))];
}

/** A group's statements (every policy attached to it). 612 unknown group. */
async function groupStatements(call: Call, alias: string): Promise<Statement[]> {
  const group = await admin.getGroup(call.g, call.caller.accessKey, alias);
  const out: Statement[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await call.g.meta.iam.attachedPolicies(call.caller.accessKey, 'group-policy', group.alias, { offset, limit: 1000 });
    if (!page) throw Errors.noSuchIamGroup(alias);
    out.push(...statementsOf(page.list));
    if (page.list.length < 1000) return out;
  }
}

export async function getUserAvailableServices(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const services = new Set<string>();
  for (const s of await userStatements(call, pathParam(request, 'alias'))) {
    if (s.effect !== 'Allow') continue;
    for (const a of s.action) {
      if (a === '*') SERVICES.forEach((x) => services.add(x));
      else services.add(a.slice(0, a.indexOf('/')));
    }
  }
  return sendData(reply, [...services].sort());
}

/** `{allow, deny}`: the resources of the statements naming `<service>/<action>`. */
function resourcesFor(statements: readonly Statement[], request: FastifyRequest): { allow: string[]; deny: string[] } {
  const action = `${pathParam(request, 'service')}/${pathParam(request, 'action')}`;
  const allow = new Set<string>();
  const deny = new Set<string>();
  for (const s of statements) {
    if (!s.action.some((a) => actionMatches(a, action))) continue;
    for (const r of s.resource) (s.effect === 'Allow' ? allow : deny).add(r);
  }
  return { allow: [...allow], deny: [...deny] };
}

export async function getUserServiceActionResources(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, resourcesFor(await userStatements(call, pathParam(request, 'alias')), request));
}

export async function getGroupServiceActionResources(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  return sendData(reply, resourcesFor(await groupStatements(call, pathParam(request, 'alias')), request));
}
