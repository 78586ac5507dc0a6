/**
 * IAM administration: the operations behind the Kodo IAM API (roles/api/iam/, docs/reference/iam.md) — creating and
 * changing sub-users, key pairs, groups, policies and their links in one account's namespace, each change recorded
 * in the account's audit log (bounded by GRANARY_IAM_AUDIT_MAX). Every function takes the acting account
 * (`IamActor`): its AccessKey is the namespace (`owner`), so an account only ever sees and changes its own objects.
 *
 * Errors (KodoError): 400 `badIamAlias`, `badIamPolicy`, `badRequest` (a field named); 612 `noSuchIamUser|Group|
 * Policy|KeyPair`; 614 `iamUserExists|GroupExists|PolicyExists`.
 *
 * Enforcement reads what is changed here through the key index (auth/key-index.ts), reloaded in this process
 * after every change and in the others when the store's `iam` change counter moves.
 */
import { randomBytes } from 'node:crypto';
import { urlsafeB64Encode } from '../auth/base64.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type {
  IamAuditRecord,
  IamGroupRecord,
  IamKeyPairRecord,
  IamLinkKind,
  IamPolicyRecord,
  IamUserRecord,
  LinkChange,
} from '../ports/iam.js';
import { accountUid, newIuid, newRecordId } from './ids.js';
import { hashPassword } from './password.js';
import { parseStatements, type Statement } from './policy.js';

/** Who acts, and the request's facts for the audit log. */
export interface IamActor {
  /** The signing AccessKey: the namespace of the objects. */
  owner: string;
  /**
   * The AccessKey that acted when it is not the owner's (the root key managing an account's sub-users from the
   * console or the CLI); the audit log records it as the actor. Default: the owner.
   */
  by?: string;
  requestId: string;
  sourceIp: string;
}

/** Aliases of users, groups and policies: 1–64 of `A-Z a-z 0-9 _ . @ -`, starting with a letter or digit. */
const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;
/** Most aliases in one link change, and most key pairs per sub-user. */
export const MAX_ALIASES = 100;
export const MAX_KEYPAIRS = 20;
const PASSWORD_MIN = 8;
const PASSWORD_MAX = 128;
const DESCRIPTION_MAX = 1024;

/** Checks an alias given for a new or renamed object (400 `badIamAlias` naming the field). */
export function checkAlias(alias: unknown, field: string): string {
  if (typeof alias !== 'string' || !ALIAS.test(alias)) throw Errors.badIamAlias(`${field}: ${JSON.stringify(alias ?? null)}`);
  return alias;
}

function checkDescription(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > DESCRIPTION_MAX) throw Errors.badRequest(`${field} must be a string of at most ${DESCRIPTION_MAX} characters`);
  return v;
}

function checkPassword(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.length < PASSWORD_MIN || v.length > PASSWORD_MAX) {
    throw Errors.badRequest(`${field} must be a string of ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  return v;
}

/** Aliases of a link change (a JSON array of strings; at most MAX_ALIASES). */
export function checkAliasList(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((a) => typeof a !== 'string')) throw Errors.badRequest(`${field} must be an array of strings`);
  if (v.length > MAX_ALIASES) throw Errors.badRequest(`${field}: at most ${MAX_ALIASES} aliases`);
  return [...new Set(v as string[])];
}

/** Records one change in the actor's audit log. */
async function audit(g: Granary, actor: IamActor, action: string, resource: string, iuid = 0, detail: Record<string, unknown> = {}): Promise<void> {
  const rec: Omit<IamAuditRecord, 'seq'> = {
    owner: actor.owner,
    actor: actor.by ?? actor.owner,
    service: 'iam',
    action,
    resource,
    iuid,
    requestId: actor.requestId,
    sourceIp: actor.sourceIp,
    errorCode: 0,
    errorMessage: '',
    detail: JSON.stringify(detail),
    atMs: g.clock.nowMs(),
  };
  await g.meta.iam.appendAudit(rec, g.config.iamAuditMax);
  // This process sees the change at once (other processes and nodes within their poll: auth/key-index.ts).
  await g.keyIndex.refresh();
}

// ---- users ----

export async function createUser(g: Granary, actor: IamActor, body: { alias?: unknown; password?: unknown }): Promise<IamUserRecord> {
  const alias = checkAlias(body.alias, 'alias');
  const password = checkPassword(body.password, 'password');
  const now = g.clock.nowMs();
  const user: IamUserRecord = {
    owner: actor.owner,
    id: newRecordId(),
    iuid: newIuid(),
    alias,
    passwordHash: await hashPassword(password),
    enabled: true,
    createdMs: now,
    updatedMs: now,
    lastLoginMs: 0,
  };
  if (!(await g.meta.iam.createUser(user))) throw Errors.iamUserExists(alias);
  await audit(g, actor, 'CreateUser', `user/${alias}`, user.iuid);
  return user;
}

export async function getUser(g: Granary, owner: string, alias: string): Promise<IamUserRecord> {
  const user = await g.meta.iam.getUser(owner, alias);
  if (!user) throw Errors.noSuchIamUser(alias);
  return user;
}

export async function modifyUser(g: Granary, actor: IamActor, alias: string, body: { enabled?: unknown; password?: unknown }): Promise<IamUserRecord> {
  if (body.enabled !== undefined && body.enabled !== null && typeof body.enabled !== 'boolean') throw Errors.badRequest('enabled must be true or false');
  const enabled = typeof body.enabled === 'boolean' ? body.enabled : undefined;
  const password = body.password === undefined || body.password === null || body.password === '' ? undefined : checkPassword(body.password, 'password');
  const passwordHash = password === undefined ? undefined : await hashPassword(password);
  const user = await g.meta.iam.updateUser(actor.owner, alias, {
    ...(enabled !== undefined ? { enabled } : {}),
    ...(passwordHash !== undefined ? { passwordHash } : {}),
    updatedMs: g.clock.nowMs(),
  });
  if (!user) throw Errors.noSuchIamUser(alias);
  await audit(g, actor, 'ModifyUser', `user/${alias}`, user.iuid, { ...(enabled !== undefined ? { enabled } : {}), ...(password ? { password: 'changed' } : {}) });
  return user;
}

export async function deleteUser(g: Granary, actor: IamActor, alias: string): Promise<void> {
  const user = await getUser(g, actor.owner, alias);
  if (!(await g.meta.iam.deleteUser(actor.owner, alias))) throw Errors.noSuchIamUser(alias);
  await audit(g, actor, 'DeleteUser', `user/${alias}`, user.iuid);
}

// ---- key pairs ----

export async function createKeyPair(g: Granary, actor: IamActor, alias: string): Promise<IamKeyPairRecord> {
  const user = await getUser(g, actor.owner, alias);
  const existing = await g.meta.iam.listKeyPairs(actor.owner, alias, { offset: 0, limit: 0 });
  if (existing.count >= MAX_KEYPAIRS) throw Errors.badRequest(`a sub-user has at most ${MAX_KEYPAIRS} key pairs`);
  const pair: IamKeyPairRecord = {
    owner: actor.owner,
    id: newRecordId(),
    userAlias: alias,
    userId: user.id,
    // 40 URL-safe characters each, like account keys (auth/key-index.ts).
    accessKey: urlsafeB64Encode(randomBytes(30)),
    secretKey: urlsafeB64Encode(randomBytes(30)),
    enabled: true,
    createdMs: g.clock.nowMs(),
  };
  if (!(await g.meta.iam.createKeyPair(pair))) throw Errors.noSuchIamUser(alias);
  await audit(g, actor, 'CreateUserKeypairs', `user/${alias}/keypair/${pair.accessKey}`, user.iuid);
  return pair;
}

export async function setKeyPairEnabled(g: Granary, actor: IamActor, alias: string, accessKey: string, enabled: boolean): Promise<void> {
  const user = await getUser(g, actor.owner, alias);
  if (!(await g.meta.iam.setKeyPairEnabled(actor.owner, alias, accessKey, enabled))) throw Errors.noSuchIamKeyPair(accessKey);
  await audit(g, actor, enabled ? 'EnableUserKeypair' : 'DisableUserKeypair', `user/${alias}/keypair/${accessKey}`, user.iuid);
}

export async function deleteKeyPair(g: Granary, actor: IamActor, alias: string, accessKey: string): Promise<void> {
  const user = await getUser(g, actor.owner, alias);
  if (!(await g.meta.iam.deleteKeyPair(actor.owner, alias, accessKey))) throw Errors.noSuchIamKeyPair(accessKey);
  await audit(g, actor, 'DeleteUserKeypair', `user/${alias}/keypair/${accessKey}`, user.iuid);
}

// ---- groups ----

export async function createGroup(g: Granary, actor: IamActor, body: { alias?: unknown; description?: unknown }): Promise<IamGroupRecord> {
  const alias = checkAlias(body.alias, 'alias');
  const now = g.clock.nowMs();
  const group: IamGroupRecord = {
    owner: actor.owner,
    id: newRecordId(),
    alias,
    description: checkDescription(body.description, 'description') ?? '',
    enabled: true,
    createdMs: now,
    updatedMs: now,
  };
  if (!(await g.meta.iam.createGroup(group))) throw Errors.iamGroupExists(alias);
  await audit(g, actor, 'CreateGroup', `group/${alias}`);
  return group;
}

export async function getGroup(g: Granary, owner: string, alias: string): Promise<IamGroupRecord> {
  const group = await g.meta.iam.getGroup(owner, alias);
  if (!group) throw Errors.noSuchIamGroup(alias);
  return group;
}

export async function modifyGroup(g: Granary, actor: IamActor, alias: string, body: { alias?: unknown; description?: unknown }): Promise<IamGroupRecord> {
  const newAlias = body.alias === undefined || body.alias === null || body.alias === '' ? undefined : checkAlias(body.alias, 'alias');
  const description = checkDescription(body.description, 'description');
  const r = await g.meta.iam.updateGroup(actor.owner, alias, {
    ...(newAlias !== undefined ? { alias: newAlias } : {}),
    ...(description !== undefined ? { description } : {}),
    updatedMs: g.clock.nowMs(),
  });
  if (r === 'exists') throw Errors.iamGroupExists(newAlias);
  if (!r) throw Errors.noSuchIamGroup(alias);
  await audit(g, actor, 'ModifyGroup', `group/${alias}`, 0, { ...(newAlias !== undefined ? { alias: newAlias } : {}), ...(description !== undefined ? { description } : {}) });
  return r;
}

export async function deleteGroup(g: Granary, actor: IamActor, alias: string): Promise<void> {
  if (!(await g.meta.iam.deleteGroup(actor.owner, alias))) throw Errors.noSuchIamGroup(alias);
  await audit(g, actor, 'DeleteGroup', `group/${alias}`);
}

// ---- policies ----

export async function createPolicy(
  g: Granary,
  actor: IamActor,
  body: { alias?: unknown; description?: unknown; edit_type?: unknown; statement?: unknown },
): Promise<{ policy: IamPolicyRecord; statements: Statement[] }> {
  const alias = checkAlias(body.alias, 'alias');
  const description = checkDescription(body.description, 'description') ?? '';
  const editType = body.edit_type === undefined || body.edit_type === null ? 1 : body.edit_type;
  if (editType !== 1 && editType !== 2) throw Errors.badIamPolicy('edit_type: must be 1 (JSON) or 2 (UI)');
  const statements = parseStatements(body.statement, accountUid(actor.owner));
  const now = g.clock.nowMs();
  const policy: IamPolicyRecord = {
    owner: actor.owner,
    id: newRecordId(),
    alias,
    description,
    editType,
    statement: JSON.stringify(statements),
    enabled: true,
    createdMs: now,
    updatedMs: now,
  };
  if (!(await g.meta.iam.createPolicy(policy))) throw Errors.iamPolicyExists(alias);
  await audit(g, actor, 'CreatePolicy', `policy/${alias}`, 0, { statement: statements });
  return { policy, statements };
}

export async function getPolicy(g: Granary, owner: string, alias: string): Promise<IamPolicyRecord> {
  const policy = await g.meta.iam.getPolicy(owner, alias);
  if (!policy) throw Errors.noSuchIamPolicy(alias);
  return policy;
}

export async function modifyPolicy(
  g: Granary,
  actor: IamActor,
  alias: string,
  body: { alias?: unknown; description?: unknown; statement?: unknown },
): Promise<IamPolicyRecord> {
  const newAlias = body.alias === undefined || body.alias === null || body.alias === '' ? undefined : checkAlias(body.alias, 'alias');
  const description = checkDescription(body.description, 'description');
  const statements = body.statement === undefined || body.statement === null ? undefined : parseStatements(body.statement, accountUid(actor.owner));
  const r = await g.meta.iam.updatePolicy(actor.owner, alias, {
    ...(newAlias !== undefined ? { alias: newAlias } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(statements !== undefined ? { statement: JSON.stringify(statements) } : {}),
    updatedMs: g.clock.nowMs(),
  });
  if (r === 'exists') throw Errors.iamPolicyExists(newAlias);
  if (!r) throw Errors.noSuchIamPolicy(alias);
  await audit(g, actor, 'ModifyPolicy', `policy/${alias}`, 0, {
    ...(newAlias !== undefined ? { alias: newAlias } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(statements !== undefined ? { statement: statements } : {}),
  });
  return r;
}

export async function deletePolicy(g: Granary, actor: IamActor, alias: string): Promise<void> {
  if (!(await g.meta.iam.deletePolicy(actor.owner, alias))) throw Errors.noSuchIamPolicy(alias);
  await audit(g, actor, 'DeletePolicy', `policy/${alias}`);
}

// ---- links ----

/** The "no such" error of the object a link change starts from. */
const missingFrom: Record<IamLinkKind, (alias: string) => Error> = {
  'group-user': (a) => Errors.noSuchIamGroup(a),
  'user-policy': (a) => Errors.noSuchIamUser(a),
  'group-policy': (a) => Errors.noSuchIamGroup(a),
};
const missingTo: Record<IamLinkKind, (alias: string) => Error> = {
  'group-user': (a) => Errors.noSuchIamUser(a),
  'user-policy': (a) => Errors.noSuchIamPolicy(a),
  'group-policy': (a) => Errors.noSuchIamPolicy(a),
};
const fromName: Record<IamLinkKind, string> = { 'group-user': 'group', 'user-policy': 'user', 'group-policy': 'group' };
const toName: Record<IamLinkKind, string> = { 'group-user': 'user', 'user-policy': 'policy', 'group-policy': 'policy' };

/**
 * Adds, removes or sets the links from `from` (a group's users, a user's or group's policies). Aliases that name
 * nothing are ignored, as Kodo does (go-sdk's own IAM test adds a group alias to a group's policies and expects
 * success). `auditAction` is the go-sdk method name.
 */
export async function changeLinks(
  g: Granary,
  actor: IamActor,
  kind: IamLinkKind,
  from: string,
  change: LinkChange,
  to: readonly string[],
  auditAction: string,
): Promise<void> {
  if (!(await g.meta.iam.changeLinks(actor.owner, kind, from, change, to))) throw missingFrom[kind](from);
  await audit(g, actor, auditAction, `${fromName[kind]}/${from}`, 0, { [change]: to });
}

/** Sets the objects linked to `to` (a user's groups, a policy's users or groups); unknown aliases ignored. */
export async function setLinksTo(g: Granary, actor: IamActor, kind: IamLinkKind, to: string, from: readonly string[], auditAction: string): Promise<void> {
  if (!(await g.meta.iam.setLinksTo(actor.owner, kind, to, from))) throw missingTo[kind](to);
  await audit(g, actor, auditAction, `${toName[kind]}/${to}`, 0, { set: from });
}
