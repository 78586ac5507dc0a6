/**
 * The IamStore port: Kodo IAM objects of each account (docs/reference/iam.md) — sub-users, their key pairs,
 * groups, policies, who belongs to which group, which policies are attached to which user or group, and a bounded
 * log of IAM changes (audits). Every object belongs to one account, named by `owner` (the account's AccessKey, the
 * root key's for the root account): aliases are unique per owner and kind, and every call names the owner, so an
 * account never sees or changes another account's objects.
 *
 * The store knows nothing of Kodo's wire shapes or of policy semantics: `statement` is opaque JSON text
 * (validated by iam/policy.ts), passwords arrive hashed (iam/password.ts). Links (membership, attachments) are
 * stored by id, so a group or policy renamed keeps its links; a link whose ends are gone is never returned (reads
 * join the objects). Deleting a user deletes its key pairs and its links in the same transaction; deleting a
 * group or policy its links.
 *
 * Key pairs of sub-users authenticate on every door (auth/key-index.ts loads them with `enforcementSnapshot` and
 * reloads when the store's `iam` change counter moves; docs/reference/iam.md, "Enforcement").
 *
 * Implementation: store/sql/iam.ts on SQLite and PostgreSQL; every read goes to the database, so a change made by
 * another process or node is seen at once. Times in Unix ms.
 */

/** A sub-user (Kodo "IAM user"). */
export interface IamUserRecord {
  owner: string;
  /** Record id: 24 lower-case hex characters. */
  id: string;
  /** The sub-user's numeric uid (Kodo `iuid`), > 0, unique across the store. */
  iuid: number;
  /** Unique per owner. */
  alias: string;
  /** `scrypt$<salt b64>$<hash b64>` (iam/password.ts); never the password. */
  passwordHash: string;
  enabled: boolean;
  createdMs: number;
  updatedMs: number;
  /** Last console sign-in; 0 = never. */
  lastLoginMs: number;
}

/** A key pair of a sub-user. */
export interface IamKeyPairRecord {
  owner: string;
  /** Record id: 24 lower-case hex characters. */
  id: string;
  /** The user's alias and record id. */
  userAlias: string;
  userId: string;
  /** Unique across the store (and distinct from every account key: 40 random URL-safe characters). */
  accessKey: string;
  secretKey: string;
  enabled: boolean;
  createdMs: number;
}

/** A group of sub-users. */
export interface IamGroupRecord {
  owner: string;
  id: string;
  alias: string;
  description: string;
  enabled: boolean;
  createdMs: number;
  updatedMs: number;
}

/** A policy: `statement` is the JSON text of `[{action: string[], resource: string[], effect}]`. */
export interface IamPolicyRecord {
  owner: string;
  id: string;
  alias: string;
  description: string;
  /** Kodo's `edit_type`: 1 edited as JSON, 2 in a UI (kept as given). */
  editType: number;
  statement: string;
  enabled: boolean;
  createdMs: number;
  updatedMs: number;
}

/**
 * What enforcement needs of every account, read at once (auth/key-index.ts): key pairs, users, groups, policies
 * (statement text as stored) and links by id.
 */
export interface IamSnapshot {
  keys: Array<{ accessKey: string; secretKey: string; owner: string; userId: string; enabled: boolean }>;
  users: Array<{ id: string; owner: string; alias: string; iuid: number; enabled: boolean }>;
  groups: Array<{ id: string; alias: string; enabled: boolean }>;
  policies: Array<{ id: string; alias: string; statement: string; enabled: boolean }>;
  links: Array<{ kind: IamLinkKind; fromId: string; toId: string }>;
}

/** One IAM change, as the audits API lists it. */
export interface IamAuditRecord {
  /** Increasing per store; the audits API's marker. */
  seq: number;
  owner: string;
  /** The AccessKey that made the change (the account's key, or the root key). */
  actor: string;
  /** `iam` for IAM changes. */
  service: string;
  /** What was done, e.g. `CreateUser`, `DeletePolicy` (the go-sdk method names). */
  action: string;
  /** What it was done to, e.g. `user/alice`, `policy/readonly`, `group/ci`. */
  resource: string;
  /** The sub-user concerned (its iuid), 0 when none. */
  iuid: number;
  requestId: string;
  sourceIp: string;
  /** 0 for success, else the HTTP status answered. */
  errorCode: number;
  errorMessage: string;
  /** Free-form details of the change (JSON text). */
  detail: string;
  atMs: number;
}

/** A page of a list: `count` is the total, `list` the page. */
export interface Page<T> {
  count: number;
  list: T[];
}

/** Which page of a list: skip `offset`, at most `limit`. */
export interface PageRequest {
  offset: number;
  limit: number;
}

/** The link kinds: group membership, policy attachment to a user or to a group. */
export type IamLinkKind = 'group-user' | 'user-policy' | 'group-policy';

/** How a list of aliases changes a link set: add them, remove them, or make the set exactly them. */
export type LinkChange = 'add' | 'remove' | 'set';

export interface IamStore {
  // ---- users ----
  /** False when the owner has a user of that alias (nothing changed). */
  createUser(rec: IamUserRecord): Promise<boolean>;
  getUser(owner: string, alias: string): Promise<IamUserRecord | undefined>;
  /** By alias; `aliasPrefix` filters. */
  listUsers(owner: string, page: PageRequest, aliasPrefix?: string): Promise<Page<IamUserRecord>>;
  /** Changes the given fields; the user after, or undefined when there is none. */
  updateUser(owner: string, alias: string, change: { enabled?: boolean; passwordHash?: string; updatedMs: number }): Promise<IamUserRecord | undefined>;
  /** Deletes the user, its key pairs and its links in one transaction; false when there is none. */
  deleteUser(owner: string, alias: string): Promise<boolean>;

  // ---- key pairs ----
  /** Stores a new pair for an existing user; false when the user is gone. */
  createKeyPair(rec: IamKeyPairRecord): Promise<boolean>;
  listKeyPairs(owner: string, userAlias: string, page: PageRequest): Promise<Page<IamKeyPairRecord>>;
  /** False when the user has no such pair. */
  setKeyPairEnabled(owner: string, userAlias: string, accessKey: string, enabled: boolean): Promise<boolean>;
  deleteKeyPair(owner: string, userAlias: string, accessKey: string): Promise<boolean>;
  /** The pair of an AccessKey, whoever owns it (for signature checks, once enforced). */
  getKeyPair(accessKey: string): Promise<IamKeyPairRecord | undefined>;

  // ---- groups ----
  createGroup(rec: IamGroupRecord): Promise<boolean>;
  getGroup(owner: string, alias: string): Promise<IamGroupRecord | undefined>;
  listGroups(owner: string, page: PageRequest): Promise<Page<IamGroupRecord>>;
  /** The group after, undefined when there is none, `'exists'` when the new alias is taken. */
  updateGroup(owner: string, alias: string, change: { alias?: string; description?: string; updatedMs: number }): Promise<IamGroupRecord | undefined | 'exists'>;
  deleteGroup(owner: string, alias: string): Promise<boolean>;

  // ---- policies ----
  createPolicy(rec: IamPolicyRecord): Promise<boolean>;
  getPolicy(owner: string, alias: string): Promise<IamPolicyRecord | undefined>;
  listPolicies(owner: string, page: PageRequest): Promise<Page<IamPolicyRecord>>;
  updatePolicy(
    owner: string,
    alias: string,
    change: { alias?: string; description?: string; statement?: string; updatedMs: number },
  ): Promise<IamPolicyRecord | undefined | 'exists'>;
  deletePolicy(owner: string, alias: string): Promise<boolean>;

  // ---- links ----
  /**
   * Changes the links of kind `kind` from the object `from` (its alias: the group of `group-user` and
   * `group-policy`, the user of `user-policy`) to the objects `to` (aliases; ones that do not exist are ignored),
   * in one transaction. False when `from` does not exist.
   */
  changeLinks(owner: string, kind: IamLinkKind, from: string, change: LinkChange, to: readonly string[]): Promise<boolean>;
  /**
   * The same, seen from the other end: makes the set of objects linked to `to` (a user of `group-user`, a policy
   * of `user-policy`/`group-policy`) exactly `from` (aliases; unknown ones ignored). False when `to` does not exist.
   */
  setLinksTo(owner: string, kind: IamLinkKind, to: string, from: readonly string[]): Promise<boolean>;
  /** Users of a group (`group-user`), by alias; undefined when the group does not exist. */
  groupUsers(owner: string, group: string, page: PageRequest): Promise<Page<IamUserRecord> | undefined>;
  /** Groups of a user, by alias; undefined when the user does not exist. */
  userGroups(owner: string, user: string, page: PageRequest): Promise<Page<IamGroupRecord> | undefined>;
  /** Policies attached to a user (`user-policy`) or a group (`group-policy`), by alias; undefined: no such object. */
  attachedPolicies(owner: string, kind: 'user-policy' | 'group-policy', alias: string, page: PageRequest): Promise<Page<IamPolicyRecord> | undefined>;
  /** Users a policy is attached to; undefined when the policy does not exist. */
  policyUsers(owner: string, policy: string, page: PageRequest): Promise<Page<IamUserRecord> | undefined>;
  /** Groups a policy is attached to; undefined when the policy does not exist. */
  policyGroups(owner: string, policy: string, page: PageRequest): Promise<Page<IamGroupRecord> | undefined>;
  /**
   * Every policy that applies to a user: its own and its groups' (each once, enabled groups only); undefined
   * when the user does not exist. What the evaluator (iam/evaluate.ts) is given.
   */
  effectivePolicies(owner: string, user: string): Promise<{ own: IamPolicyRecord[]; groups: Array<{ group: string; policies: IamPolicyRecord[] }> } | undefined>;

  /**
   * Deletes every IAM object of an account — users with their key pairs, groups, policies, links and audit records —
   * in one transaction (its AccessKey was deleted); how many users went.
   */
  deleteOwner(owner: string): Promise<number>;

  /** Everything enforcement reads (IamSnapshot), in one consistent read of the store. */
  enforcementSnapshot(): Promise<IamSnapshot>;

  // ---- audits ----
  /** Appends a record (its `seq` assigned) and drops the owner's oldest beyond `max`, in one transaction. */
  appendAudit(rec: Omit<IamAuditRecord, 'seq'>, max: number): Promise<void>;
  /** The owner's records after `afterSeq` (0: from the oldest), oldest first, matching the filter. */
  listAudits(
    owner: string,
    filter: { afterSeq: number; limit: number; iuid?: number; service?: string; action?: string; resource?: string; fromMs?: number; toMs?: number },
  ): Promise<IamAuditRecord[]>;
}
