/**
 * `granary iam …` offline: the IamBackend (transfer/iam-client.ts) over the configured stores (the data dir, or the
 * cluster's PostgreSQL), through the same domain functions as the Kodo IAM API (iam/admin.ts) and answering its JSON
 * shapes (roles/api/iam/wire.ts). The namespace is `owner` (an AccessKey: the root key's by default, any account's
 * with `--owner`); the audit log records the change with the root key as the actor when it acts for an account,
 * request id `cli-<32 hex>` and no source address.
 *
 * Errors: the KodoErrors of iam/admin.ts (400 naming the field, 612 no such object, 614 alias taken).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import * as admin from '../iam/admin.js';
import type { Page, PageRequest } from '../ports/iam.js';
import { randomHexId } from '../random-id.js';
import { auditJson } from '../roles/api/iam/audits.js';
import { ACTION_ROWS } from '../roles/api/iam/catalog.js';
import { groupJson, keyPairJson, policyJson, userJson } from '../roles/api/iam/wire.js';
import type { IamBackend, IamJson, IamLinkChange, IamStatement } from '../transfer/iam-client.js';

/** Every item of a paged store list; `missing` thrown when the object the list belongs to does not exist. */
async function all<T>(read: (p: PageRequest) => Promise<Page<T> | undefined>, missing: () => Error): Promise<T[]> {
  const out: T[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await read({ offset, limit: 1000 });
    if (!page) throw missing();
    out.push(...page.list);
    if (page.list.length < 1000) return out;
  }
}

const AUDIT_PAGE_DEFAULT = 20;

/** The offline backend of `owner`'s namespace in `g`; `close` closes the stores. */
export class OfflineIam implements IamBackend {
  constructor(
    private readonly g: Granary,
    readonly owner: string,
    private readonly closeStores: () => Promise<void>,
  ) {}

  private actor(): admin.IamActor {
    const root = this.g.keys.accessKey;
    return { owner: this.owner, ...(this.owner !== root ? { by: root } : {}), requestId: `cli-${randomHexId()}`, sourceIp: '' };
  }

  private get iam() {
    return this.g.meta.iam;
  }

  listUsers = async (prefix?: string) => (await all((p) => this.iam.listUsers(this.owner, p, prefix), () => Errors.internal())).map(userJson);
  getUser = async (alias: string) => userJson(await admin.getUser(this.g, this.owner, alias));
  createUser = async (alias: string, password: string) => userJson(await admin.createUser(this.g, this.actor(), { alias, password }));
  updateUser = async (alias: string, change: { enabled?: boolean; password?: string }) => userJson(await admin.modifyUser(this.g, this.actor(), alias, change));
  deleteUser = (alias: string) => admin.deleteUser(this.g, this.actor(), alias);
  userGroups = async (alias: string) => (await all((p) => this.iam.userGroups(this.owner, alias, p), () => Errors.noSuchIamUser(alias))).map(groupJson);
  userPolicies = async (alias: string) =>
    (await all((p) => this.iam.attachedPolicies(this.owner, 'user-policy', alias, p), () => Errors.noSuchIamUser(alias))).map(policyJson);
  changeUserPolicies = (alias: string, change: IamLinkChange, policies: string[]) =>
    admin.changeLinks(this.g, this.actor(), 'user-policy', alias, change, admin.checkAliasList(policies, 'policies'), LINK_AUDIT.user[change]);

  listKeys = async (alias: string) => {
    await admin.getUser(this.g, this.owner, alias);
    return (await all((p) => this.iam.listKeyPairs(this.owner, alias, p), () => Errors.noSuchIamUser(alias))).map(keyPairJson);
  };
  createKey = async (alias: string) => keyPairJson(await admin.createKeyPair(this.g, this.actor(), alias));
  setKeyEnabled = (alias: string, accessKey: string, enabled: boolean) => admin.setKeyPairEnabled(this.g, this.actor(), alias, accessKey, enabled);
  deleteKey = (alias: string, accessKey: string) => admin.deleteKeyPair(this.g, this.actor(), alias, accessKey);

  listGroups = async () => (await all((p) => this.iam.listGroups(this.owner, p), () => Errors.internal())).map(groupJson);
  getGroup = async (alias: string) => groupJson(await admin.getGroup(this.g, this.owner, alias));
  createGroup = async (alias: string, description: string) => groupJson(await admin.createGroup(this.g, this.actor(), { alias, description }));
  updateGroup = async (alias: string, change: { alias?: string; description?: string }) => groupJson(await admin.modifyGroup(this.g, this.actor(), alias, change));
  deleteGroup = (alias: string) => admin.deleteGroup(this.g, this.actor(), alias);
  groupUsers = async (alias: string) => (await all((p) => this.iam.groupUsers(this.owner, alias, p), () => Errors.noSuchIamGroup(alias))).map(userJson);
  changeGroupUsers = (alias: string, change: IamLinkChange, users: string[]) =>
    admin.changeLinks(this.g, this.actor(), 'group-user', alias, change, admin.checkAliasList(users, 'users'), LINK_AUDIT.members[change]);
  groupPolicies = async (alias: string) =>
    (await all((p) => this.iam.attachedPolicies(this.owner, 'group-policy', alias, p), () => Errors.noSuchIamGroup(alias))).map(policyJson);
  changeGroupPolicies = (alias: string, change: IamLinkChange, policies: string[]) =>
    admin.changeLinks(this.g, this.actor(), 'group-policy', alias, change, admin.checkAliasList(policies, 'policies'), LINK_AUDIT.group[change]);

  listPolicies = async () => (await all((p) => this.iam.listPolicies(this.owner, p), () => Errors.internal())).map(policyJson);
  getPolicy = async (alias: string) => policyJson(await admin.getPolicy(this.g, this.owner, alias));
  createPolicy = async (alias: string, description: string, statement: IamStatement[]) =>
    policyJson((await admin.createPolicy(this.g, this.actor(), { alias, description, edit_type: 1, statement })).policy);
  updatePolicy = async (alias: string, change: { description?: string; statement?: IamStatement[] }) => policyJson(await admin.modifyPolicy(this.g, this.actor(), alias, change));
  deletePolicy = (alias: string) => admin.deletePolicy(this.g, this.actor(), alias);
  policyUsers = async (alias: string) => (await all((p) => this.iam.policyUsers(this.owner, alias, p), () => Errors.noSuchIamPolicy(alias))).map(userJson);
  policyGroups = async (alias: string) => (await all((p) => this.iam.policyGroups(this.owner, alias, p), () => Errors.noSuchIamPolicy(alias))).map(groupJson);

  actions = async (): Promise<IamJson[]> => ACTION_ROWS.map((a) => ({ ...a }));
  audits = async (f: { action?: string; resource?: string; limit?: number; marker?: string }) => {
    const limit = f.limit ?? AUDIT_PAGE_DEFAULT;
    const list = await this.iam.listAudits(this.owner, {
      afterSeq: Number(f.marker || 0),
      limit,
      ...(f.action ? { action: f.action } : {}),
      ...(f.resource ? { resource: f.resource } : {}),
    });
    return { marker: list.length === limit ? String(list[list.length - 1]!.seq) : '', list: list.map(auditJson) };
  };
  close = (): Promise<void> => this.closeStores();
}

/** The audit action of each link change, named as the go-sdk call that makes it. */
const LINK_AUDIT: Record<'user' | 'group' | 'members', Record<IamLinkChange, string>> = {
  user: { set: 'UpdateUserPolicies', add: 'ModifyUserPolicies', remove: 'DeleteUserPolicy' },
  group: { set: 'UpdateGroupPolicies', add: 'ModifyGroupPolicies', remove: 'DeleteGroupPolicies' },
  members: { set: 'UpdateGroupUsers', add: 'ModifyGroupUsers', remove: 'DeleteGroupUsers' },
};
