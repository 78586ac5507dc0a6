/**
 * The Kodo IAM API as the `granary iam …` commands use it (docs/reference/iam.md, docs/reference/cli.md): one
 * interface, `IamBackend`, answered either by a remote's `/iam/v1/…` calls (`RemoteIam`, here: the remote's api host,
 * signed with the remote's key pair — a Qiniu management token, as go-sdk's `iam/apis` signs them) or offline on the
 * data dir (cli/iam-offline.ts). Both answer the API's JSON shapes (the `data` of each answer: users, key pairs,
 * groups, policies, actions, audits as go-sdk reads them); lists are read to the end (1,000 a page).
 *
 * Errors: a TransferError per refused call, `remote <name>: <status> <message>` (401 wrong keys, 400 naming the
 * field, 612 no such object, 614 alias taken); network failures name the host.
 */
import qiniu from 'qiniu';
import { TransferError } from './errors.js';
import { apiHostOf } from './hosts.js';
import type { RemoteProfile } from './remotes.js';

/** An object of the API's answers (user, key pair, group, policy, action, audit record). */
export type IamJson = Record<string, unknown>;

/** How a link set changes: add the aliases, remove them, or make the set exactly them. */
export type IamLinkChange = 'add' | 'remove' | 'set';

/** One policy statement as the API takes it. */
export interface IamStatement {
  action: string[];
  resource: string[];
  effect: string;
}

/** What `granary iam …` asks of the Kodo IAM API, in one account's namespace. */
export interface IamBackend {
  listUsers(prefix?: string): Promise<IamJson[]>;
  getUser(alias: string): Promise<IamJson>;
  createUser(alias: string, password: string): Promise<IamJson>;
  updateUser(alias: string, change: { enabled?: boolean; password?: string }): Promise<IamJson>;
  deleteUser(alias: string): Promise<void>;
  userGroups(alias: string): Promise<IamJson[]>;
  userPolicies(alias: string): Promise<IamJson[]>;
  changeUserPolicies(alias: string, change: IamLinkChange, policies: string[]): Promise<void>;

  listKeys(alias: string): Promise<IamJson[]>;
  createKey(alias: string): Promise<IamJson>;
  setKeyEnabled(alias: string, accessKey: string, enabled: boolean): Promise<void>;
  deleteKey(alias: string, accessKey: string): Promise<void>;

  listGroups(): Promise<IamJson[]>;
  getGroup(alias: string): Promise<IamJson>;
  createGroup(alias: string, description: string): Promise<IamJson>;
  updateGroup(alias: string, change: { alias?: string; description?: string }): Promise<IamJson>;
  deleteGroup(alias: string): Promise<void>;
  groupUsers(alias: string): Promise<IamJson[]>;
  changeGroupUsers(alias: string, change: IamLinkChange, users: string[]): Promise<void>;
  groupPolicies(alias: string): Promise<IamJson[]>;
  changeGroupPolicies(alias: string, change: IamLinkChange, policies: string[]): Promise<void>;

  listPolicies(): Promise<IamJson[]>;
  getPolicy(alias: string): Promise<IamJson>;
  createPolicy(alias: string, description: string, statement: IamStatement[]): Promise<IamJson>;
  updatePolicy(alias: string, change: { description?: string; statement?: IamStatement[] }): Promise<IamJson>;
  deletePolicy(alias: string): Promise<void>;
  policyUsers(alias: string): Promise<IamJson[]>;
  policyGroups(alias: string): Promise<IamJson[]>;

  actions(): Promise<IamJson[]>;
  /** One page of the audit log, oldest first; `marker` '' when there is no more. */
  audits(filter: { action?: string; resource?: string; limit?: number; marker?: string }): Promise<{ marker: string; list: IamJson[] }>;
  /** Releases what the backend holds (the offline stores). */
  close(): Promise<void>;
}

/** Items per page when reading a list to its end. */
const PAGE = 1000;
const TIMEOUT_MS = 30_000;
/** The HTTP method of each link change (go-sdk: UpdateX POST sets, ModifyX PATCH adds, DeleteX DELETE removes). */
const LINK_METHOD: Record<IamLinkChange, string> = { set: 'POST', add: 'PATCH', remove: 'DELETE' };

const seg = (alias: string): string => encodeURIComponent(alias);

/** The Kodo IAM API of a remote. */
export class RemoteIam implements IamBackend {
  private readonly mac: qiniu.auth.digest.Mac;
  private readonly base: string;

  constructor(readonly profile: RemoteProfile) {
    this.mac = new qiniu.auth.digest.Mac(profile.accessKey, profile.secretKey);
    this.base = `${profile.https ? 'https' : 'http'}://${apiHostOf(profile)}`;
  }

  /** One call; the answer's `data` (undefined for calls without a result). */
  async call<T = IamJson>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.base}/iam/v1${path}`;
    const text = body === undefined ? undefined : JSON.stringify(body);
    const contentType = text === undefined ? 'application/x-www-form-urlencoded' : 'application/json';
    const headers = { 'content-type': contentType, authorization: qiniu.util.generateAccessTokenV2(this.mac, url, method, contentType, text ?? '') as string };
    let res: Response;
    try {
      res = await fetch(url, { method, headers, ...(text !== undefined ? { body: text } : {}), signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err) {
      const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message;
      throw new TransferError(`remote ${this.profile.name}: ${method} ${this.base} failed (${cause})`);
    }
    const answer = await res.text();
    let parsed: { data?: unknown; error?: unknown } | undefined;
    try {
      parsed = answer.trim() === '' ? undefined : (JSON.parse(answer) as typeof parsed);
    } catch {
      parsed = undefined;
    }
    if (res.status !== 200) {
      const detail = typeof parsed?.error === 'string' ? parsed.error : answer.trim().replace(/\s+/g, ' ').slice(0, 200);
      const why = res.status === 401 ? ' (the AccessKey/SecretKey were refused)' : '';
      throw new TransferError(`remote ${this.profile.name}: ${res.status} ${detail}${why}`, res.status);
    }
    return parsed?.data as T;
  }

  /** Every item of a list call (`page`/`page_size` followed to the end). */
  async all(path: string, query: Record<string, string> = {}): Promise<IamJson[]> {
    const out: IamJson[] = [];
    for (let page = 1; ; page++) {
      const q = new URLSearchParams({ ...query, page: String(page), page_size: String(PAGE) });
      const data = await this.call<{ count?: number; list?: IamJson[] }>('GET', `${path}?${q.toString()}`);
      const list = data?.list ?? [];
      out.push(...list);
      if (list.length < PAGE) return out;
    }
  }

  listUsers = (prefix?: string) => this.all('/users', prefix ? { alias: prefix } : {});
  getUser = (alias: string) => this.call('GET', `/users/${seg(alias)}`);
  createUser = (alias: string, password: string) => this.call('POST', '/users', { alias, password });
  updateUser = (alias: string, change: { enabled?: boolean; password?: string }) => this.call('PATCH', `/users/${seg(alias)}`, change);
  deleteUser = async (alias: string) => void (await this.call('DELETE', `/users/${seg(alias)}`));
  userGroups = (alias: string) => this.all(`/users/${seg(alias)}/groups`);
  userPolicies = (alias: string) => this.all(`/users/${seg(alias)}/policies`);
  changeUserPolicies = async (alias: string, change: IamLinkChange, policies: string[]) =>
    void (await this.call(LINK_METHOD[change], `/users/${seg(alias)}/policies`, { policy_aliases: policies }));

  listKeys = (alias: string) => this.all(`/users/${seg(alias)}/keypairs`);
  createKey = (alias: string) => this.call('POST', `/users/${seg(alias)}/keypairs`);
  setKeyEnabled = async (alias: string, accessKey: string, enabled: boolean) =>
    void (await this.call('POST', `/users/${seg(alias)}/keypairs/${seg(accessKey)}/${enabled ? 'enable' : 'disable'}`));
  deleteKey = async (alias: string, accessKey: string) => void (await this.call('DELETE', `/users/${seg(alias)}/keypairs/${seg(accessKey)}`));

  listGroups = () => this.all('/groups');
  getGroup = (alias: string) => this.call('GET', `/groups/${seg(alias)}`);
  createGroup = (alias: string, description: string) => this.call('POST', '/groups', { alias, description });
  updateGroup = (alias: string, change: { alias?: string; description?: string }) => this.call('PATCH', `/groups/${seg(alias)}`, change);
  deleteGroup = async (alias: string) => void (await this.call('DELETE', `/groups/${seg(alias)}`));
  groupUsers = (alias: string) => this.all(`/groups/${seg(alias)}/users`);
  changeGroupUsers = async (alias: string, change: IamLinkChange, users: string[]) =>
    void (await this.call(LINK_METHOD[change], `/groups/${seg(alias)}/users`, { user_aliases: users }));
  groupPolicies = (alias: string) => this.all(`/groups/${seg(alias)}/policies`);
  changeGroupPolicies = async (alias: string, change: IamLinkChange, policies: string[]) =>
    void (await this.call(LINK_METHOD[change], `/groups/${seg(alias)}/policies`, { policy_aliases: policies }));

  listPolicies = () => this.all('/policies');
  getPolicy = (alias: string) => this.call('GET', `/policies/${seg(alias)}`);
  createPolicy = (alias: string, description: string, statement: IamStatement[]) => this.call('POST', '/policies', { alias, description, edit_type: 1, statement });
  updatePolicy = (alias: string, change: { description?: string; statement?: IamStatement[] }) => this.call('PATCH', `/policies/${seg(alias)}`, change);
  deletePolicy = async (alias: string) => void (await this.call('DELETE', `/policies/${seg(alias)}`));
  policyUsers = (alias: string) => this.all(`/policies/${seg(alias)}/users`);
  policyGroups = (alias: string) => this.all(`/policies/${seg(alias)}/groups`);

  actions = () => this.all('/actions');
  audits = async (f: { action?: string; resource?: string; limit?: number; marker?: string }) => {
    const q = new URLSearchParams();
    if (f.action) q.set('action', f.action);
    if (f.resource) q.set('resource', f.resource);
    if (f.limit) q.set('limit', String(f.limit));
    if (f.marker) q.set('marker', f.marker);
    const data = await this.call<{ marker?: string; list?: IamJson[] }>('GET', `/audits?${q.toString()}`);
    return { marker: data?.marker ?? '', list: data?.list ?? [] };
  };
  close = async (): Promise<void> => undefined;
}
