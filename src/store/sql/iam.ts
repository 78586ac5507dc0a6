/**
 * Kodo IAM objects (tables `iam_users`, `iam_keypairs`, `iam_groups`, `iam_policies`, `iam_links`, `iam_audits`),
 * implementing the IamStore port (ports/iam.ts) on SQLite and PostgreSQL (db.ts). Aliases are unique per owner
 * (`UNIQUE (owner, alias)`); links are stored by id in one table (`kind` = `group-user` | `user-policy` |
 * `group-policy`, from the group or user to the user or policy) and every read joins the objects, so a link whose
 * end is gone is never seen. Changes of several rows run in one transaction (`batch`): a user with its key pairs
 * and links, a link set. Lists are in byte order of the alias (PostgreSQL: `COLLATE "C"` columns). Every read goes
 * to the database. Times in Unix ms.
 */
import type {
  IamAuditRecord,
  IamGroupRecord,
  IamKeyPairRecord,
  IamLinkKind,
  IamPolicyRecord,
  IamSnapshot,
  IamStore,
  IamUserRecord,
  LinkChange,
  Page,
  PageRequest,
} from '../../ports/iam.js';
import { flag, type SqlDb, type SqlStep } from './db.js';

type Num = number | bigint;
type Flag = number | bigint | boolean;

interface UserRow {
  id: string;
  owner: string;
  alias: string;
  iuid: Num;
  password_hash: string;
  enabled: Flag;
  created_ms: Num;
  updated_ms: Num;
  last_login_ms: Num;
}
interface KeyPairRow {
  access_key: string;
  id: string;
  owner: string;
  user_id: string;
  user_alias: string;
  secret_key: string;
  enabled: Flag;
  created_ms: Num;
}
interface GroupRow {
  id: string;
  owner: string;
  alias: string;
  description: string;
  enabled: Flag;
  created_ms: Num;
  updated_ms: Num;
}
interface PolicyRow extends GroupRow {
  edit_type: Num;
  statement: string;
}
interface AuditRow {
  seq: Num;
  owner: string;
  actor: string;
  service: string;
  action: string;
  resource: string;
  iuid: Num;
  request_id: string;
  source_ip: string;
  error_code: Num;
  error_message: string;
  detail: string;
  at_ms: Num;
}

const toUser = (r: UserRow): IamUserRecord => ({
  owner: r.owner,
  id: r.id,
  iuid: Number(r.iuid),
  alias: r.alias,
  passwordHash: r.password_hash,
  enabled: flag(r.enabled),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
  lastLoginMs: Number(r.last_login_ms),
});
const toKeyPair = (r: KeyPairRow): IamKeyPairRecord => ({
  owner: r.owner,
  id: r.id,
  userAlias: r.user_alias,
  userId: r.user_id,
  accessKey: r.access_key,
  secretKey: r.secret_key,
  enabled: flag(r.enabled),
  createdMs: Number(r.created_ms),
});
const toGroup = (r: GroupRow): IamGroupRecord => ({
  owner: r.owner,
  id: r.id,
  alias: r.alias,
  description: r.description,
  enabled: flag(r.enabled),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
});
const toPolicy = (r: PolicyRow): IamPolicyRecord => ({
  ...toGroup(r),
  editType: Number(r.edit_type),
  statement: r.statement,
});
const toAudit = (r: AuditRow): IamAuditRecord => ({
  seq: Number(r.seq),
  owner: r.owner,
  actor: r.actor,
  service: r.service,
  action: r.action,
  resource: r.resource,
  iuid: Number(r.iuid),
  requestId: r.request_id,
  sourceIp: r.source_ip,
  errorCode: Number(r.error_code),
  errorMessage: r.error_message,
  detail: r.detail,
  atMs: Number(r.at_ms),
});

/** The tables at the two ends of each link kind. */
const ENDS: Record<IamLinkKind, { from: string; to: string }> = {
  'group-user': { from: 'iam_groups', to: 'iam_users' },
  'user-policy': { from: 'iam_users', to: 'iam_policies' },
  'group-policy': { from: 'iam_groups', to: 'iam_policies' },
};

/** `(?, ?, …)` for `n` values (n ≥ 1). */
const marks = (n: number): string => `(${new Array<string>(n).fill('?').join(', ')})`;

const KEYPAIR_SELECT = `SELECT k.access_key, k.id, k.owner, k.user_id, u.alias AS user_alias, k.secret_key, k.enabled, k.created_ms
  FROM iam_keypairs k JOIN iam_users u ON u.id = k.user_id`;

export class SqlIamStore implements IamStore {
  constructor(private readonly db: SqlDb) {}

  // ---- helpers ----

  /** A page of `select` (rows) and the total of `count` (`SELECT COUNT(*) AS n …`). */
  private async page<R, T>(select: string, count: string, args: readonly unknown[], page: PageRequest, map: (r: R) => T): Promise<Page<T>> {
    const total = await this.db.get<{ n: Num }>(count, args);
    const rows = await this.db.all<R>(`${select} LIMIT ? OFFSET ?`, [...args, page.limit, page.offset]);
    return { count: Number(total?.n ?? 0), list: rows.map(map) };
  }

  private async idOf(table: string, owner: string, alias: string): Promise<string | undefined> {
    return (await this.db.get<{ id: string }>(`SELECT id FROM ${table} WHERE owner = ? AND alias = ?`, [owner, alias]))?.id;
  }

  // ---- users ----

  async createUser(u: IamUserRecord): Promise<boolean> {
    const n = await this.db.run(
      `INSERT INTO iam_users (id, owner, alias, iuid, password_hash, enabled, created_ms, updated_ms, last_login_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [u.id, u.owner, u.alias, u.iuid, u.passwordHash, u.enabled ? 1 : 0, u.createdMs, u.updatedMs, u.lastLoginMs],
    );
    return n === 1;
  }

  async getUser(owner: string, alias: string): Promise<IamUserRecord | undefined> {
    const r = await this.db.get<UserRow>('SELECT * FROM iam_users WHERE owner = ? AND alias = ?', [owner, alias]);
    return r ? toUser(r) : undefined;
  }

  listUsers(owner: string, page: PageRequest, aliasPrefix?: string): Promise<Page<IamUserRecord>> {
    const where = aliasPrefix ? 'owner = ? AND substr(alias, 1, ?) = ?' : 'owner = ?';
    const args = aliasPrefix ? [owner, [...aliasPrefix].length, aliasPrefix] : [owner];
    return this.page(`SELECT * FROM iam_users WHERE ${where} ORDER BY alias`, `SELECT COUNT(*) AS n FROM iam_users WHERE ${where}`, args, page, toUser);
  }

  async updateUser(owner: string, alias: string, c: { enabled?: boolean; passwordHash?: string; updatedMs: number }): Promise<IamUserRecord | undefined> {
    const enabled = c.enabled === undefined ? null : c.enabled ? 1 : 0;
    const r = await this.db.get<UserRow>(
      `UPDATE iam_users SET enabled = COALESCE(?, enabled), password_hash = COALESCE(?, password_hash), updated_ms = ?
       WHERE owner = ? AND alias = ? RETURNING *`,
      [enabled, c.passwordHash ?? null, c.updatedMs, owner, alias],
    );
    return r ? toUser(r) : undefined;
  }

  async deleteUser(owner: string, alias: string): Promise<boolean> {
    const ids = 'SELECT id FROM iam_users WHERE owner = ? AND alias = ?';
    const results = await this.db.batch([
      { sql: `DELETE FROM iam_keypairs WHERE user_id IN (${ids})`, args: [owner, alias] },
      {
        sql: `DELETE FROM iam_links WHERE (kind = 'group-user' AND to_id IN (${ids})) OR (kind = 'user-policy' AND from_id IN (${ids}))`,
        args: [owner, alias, owner, alias],
      },
      { sql: 'DELETE FROM iam_users WHERE owner = ? AND alias = ?', args: [owner, alias] },
    ]);
    return results[2]!.changes === 1;
  }

  // ---- key pairs ----

  async createKeyPair(k: IamKeyPairRecord): Promise<boolean> {
    // The user is looked up first; a pair left by a user deleted meanwhile is never read (reads join the user).
    const userId = await this.idOf('iam_users', k.owner, k.userAlias);
    if (userId === undefined) return false;
    await this.db.run(
      'INSERT INTO iam_keypairs (access_key, id, owner, user_id, secret_key, enabled, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [k.accessKey, k.id, k.owner, userId, k.secretKey, k.enabled ? 1 : 0, k.createdMs],
    );
    return true;
  }

  listKeyPairs(owner: string, userAlias: string, page: PageRequest): Promise<Page<IamKeyPairRecord>> {
    const where = 'WHERE u.owner = ? AND u.alias = ?';
    return this.page(
      `${KEYPAIR_SELECT} ${where} ORDER BY k.created_ms, k.access_key`,
      `SELECT COUNT(*) AS n FROM iam_keypairs k JOIN iam_users u ON u.id = k.user_id ${where}`,
      [owner, userAlias],
      page,
      toKeyPair,
    );
  }

  async setKeyPairEnabled(owner: string, userAlias: string, accessKey: string, enabled: boolean): Promise<boolean> {
    const n = await this.db.run(
      'UPDATE iam_keypairs SET enabled = ? WHERE access_key = ? AND user_id IN (SELECT id FROM iam_users WHERE owner = ? AND alias = ?)',
      [enabled ? 1 : 0, accessKey, owner, userAlias],
    );
    return n === 1;
  }

  async deleteKeyPair(owner: string, userAlias: string, accessKey: string): Promise<boolean> {
    const n = await this.db.run(
      'DELETE FROM iam_keypairs WHERE access_key = ? AND user_id IN (SELECT id FROM iam_users WHERE owner = ? AND alias = ?)',
      [accessKey, owner, userAlias],
    );
    return n === 1;
  }

  async getKeyPair(accessKey: string): Promise<IamKeyPairRecord | undefined> {
    const r = await this.db.get<KeyPairRow>(`${KEYPAIR_SELECT} WHERE k.access_key = ?`, [accessKey]);
    return r ? toKeyPair(r) : undefined;
  }

  // ---- groups ----

  async createGroup(g: IamGroupRecord): Promise<boolean> {
    const n = await this.db.run(
      `INSERT INTO iam_groups (id, owner, alias, description, enabled, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
      [g.id, g.owner, g.alias, g.description, g.enabled ? 1 : 0, g.createdMs, g.updatedMs],
    );
    return n === 1;
  }

  async getGroup(owner: string, alias: string): Promise<IamGroupRecord | undefined> {
    const r = await this.db.get<GroupRow>('SELECT * FROM iam_groups WHERE owner = ? AND alias = ?', [owner, alias]);
    return r ? toGroup(r) : undefined;
  }

  listGroups(owner: string, page: PageRequest): Promise<Page<IamGroupRecord>> {
    return this.page('SELECT * FROM iam_groups WHERE owner = ? ORDER BY alias', 'SELECT COUNT(*) AS n FROM iam_groups WHERE owner = ?', [owner], page, toGroup);
  }

  async updateGroup(owner: string, alias: string, c: { alias?: string; description?: string; updatedMs: number }): Promise<IamGroupRecord | undefined | 'exists'> {
    if (c.alias !== undefined && c.alias !== alias && (await this.idOf('iam_groups', owner, c.alias)) !== undefined) return 'exists';
    const r = await this.db.get<GroupRow>(
      `UPDATE iam_groups SET alias = COALESCE(?, alias), description = COALESCE(?, description), updated_ms = ?
       WHERE owner = ? AND alias = ? RETURNING *`,
      [c.alias ?? null, c.description ?? null, c.updatedMs, owner, alias],
    );
    return r ? toGroup(r) : undefined;
  }

  async deleteGroup(owner: string, alias: string): Promise<boolean> {
    const ids = 'SELECT id FROM iam_groups WHERE owner = ? AND alias = ?';
    const results = await this.db.batch([
      { sql: `DELETE FROM iam_links WHERE kind IN ('group-user', 'group-policy') AND from_id IN (${ids})`, args: [owner, alias] },
      { sql: 'DELETE FROM iam_groups WHERE owner = ? AND alias = ?', args: [owner, alias] },
    ]);
    return results[1]!.changes === 1;
  }

  // ---- policies ----

  async createPolicy(p: IamPolicyRecord): Promise<boolean> {
    const n = await this.db.run(
      `INSERT INTO iam_policies (id, owner, alias, description, edit_type, statement, enabled, created_ms, updated_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [p.id, p.owner, p.alias, p.description, p.editType, p.statement, p.enabled ? 1 : 0, p.createdMs, p.updatedMs],
    );
    return n === 1;
  }

  async getPolicy(owner: string, alias: string): Promise<IamPolicyRecord | undefined> {
    const r = await this.db.get<PolicyRow>('SELECT * FROM iam_policies WHERE owner = ? AND alias = ?', [owner, alias]);
    return r ? toPolicy(r) : undefined;
  }

  listPolicies(owner: string, page: PageRequest): Promise<Page<IamPolicyRecord>> {
    return this.page('SELECT * FROM iam_policies WHERE owner = ? ORDER BY alias', 'SELECT COUNT(*) AS n FROM iam_policies WHERE owner = ?', [owner], page, toPolicy);
  }

  async updatePolicy(
    owner: string,
    alias: string,
    c: { alias?: string; description?: string; statement?: string; updatedMs: number },
  ): Promise<IamPolicyRecord | undefined | 'exists'> {
    if (c.alias !== undefined && c.alias !== alias && (await this.idOf('iam_policies', owner, c.alias)) !== undefined) return 'exists';
    const r = await this.db.get<PolicyRow>(
      `UPDATE iam_policies SET alias = COALESCE(?, alias), description = COALESCE(?, description), statement = COALESCE(?, statement),
       updated_ms = ? WHERE owner = ? AND alias = ? RETURNING *`,
      [c.alias ?? null, c.description ?? null, c.statement ?? null, c.updatedMs, owner, alias],
    );
    return r ? toPolicy(r) : undefined;
  }

  async deletePolicy(owner: string, alias: string): Promise<boolean> {
    const ids = 'SELECT id FROM iam_policies WHERE owner = ? AND alias = ?';
    const results = await this.db.batch([
      { sql: `DELETE FROM iam_links WHERE kind IN ('user-policy', 'group-policy') AND to_id IN (${ids})`, args: [owner, alias] },
      { sql: 'DELETE FROM iam_policies WHERE owner = ? AND alias = ?', args: [owner, alias] },
    ]);
    return results[1]!.changes === 1;
  }

  // ---- links ----

  async changeLinks(owner: string, kind: IamLinkKind, from: string, change: LinkChange, to: readonly string[]): Promise<boolean> {
    const { from: fromTable, to: toTable } = ENDS[kind];
    const fromId = `SELECT id FROM ${fromTable} WHERE owner = ? AND alias = ?`;
    const steps: SqlStep[] = [{ sql: fromId, args: [owner, from] }];
    if (change === 'set') steps.push({ sql: `DELETE FROM iam_links WHERE kind = '${kind}' AND from_id IN (${fromId})`, args: [owner, from] });
    if (to.length > 0) {
      if (change === 'remove') {
        steps.push({
          sql: `DELETE FROM iam_links WHERE kind = '${kind}' AND from_id IN (${fromId})
            AND to_id IN (SELECT id FROM ${toTable} WHERE owner = ? AND alias IN ${marks(to.length)})`,
          args: [owner, from, owner, ...to],
        });
      } else {
        steps.push({
          sql: `INSERT INTO iam_links (kind, from_id, to_id) SELECT '${kind}', f.id, t.id FROM ${fromTable} f, ${toTable} t
            WHERE f.owner = ? AND f.alias = ? AND t.owner = ? AND t.alias IN ${marks(to.length)} ON CONFLICT DO NOTHING`,
          args: [owner, from, owner, ...to],
        });
      }
    }
    const [found] = await this.db.batch(steps);
    return found!.rows.length === 1;
  }

  async setLinksTo(owner: string, kind: IamLinkKind, to: string, from: readonly string[]): Promise<boolean> {
    const { from: fromTable, to: toTable } = ENDS[kind];
    const toId = `SELECT id FROM ${toTable} WHERE owner = ? AND alias = ?`;
    const steps: SqlStep[] = [
      { sql: toId, args: [owner, to] },
      { sql: `DELETE FROM iam_links WHERE kind = '${kind}' AND to_id IN (${toId})`, args: [owner, to] },
    ];
    if (from.length > 0) {
      steps.push({
        sql: `INSERT INTO iam_links (kind, from_id, to_id) SELECT '${kind}', f.id, t.id FROM ${fromTable} f, ${toTable} t
          WHERE t.owner = ? AND t.alias = ? AND f.owner = ? AND f.alias IN ${marks(from.length)} ON CONFLICT DO NOTHING`,
        args: [owner, to, owner, ...from],
      });
    }
    const [found] = await this.db.batch(steps);
    return found!.rows.length === 1;
  }

  /** The objects of `toTable` linked from `fromId`, a page by alias. */
  private linkedFrom<R, T>(kind: IamLinkKind, toTable: string, fromId: string, page: PageRequest, map: (r: R) => T): Promise<Page<T>> {
    const join = `FROM iam_links l JOIN ${toTable} o ON o.id = l.to_id WHERE l.kind = '${kind}' AND l.from_id = ?`;
    return this.page(`SELECT o.* ${join} ORDER BY o.alias`, `SELECT COUNT(*) AS n ${join}`, [fromId], page, map);
  }

  /** The objects of `fromTable` linked to `toId`, a page by alias. */
  private linkedTo<R, T>(kind: IamLinkKind, fromTable: string, toId: string, page: PageRequest, map: (r: R) => T): Promise<Page<T>> {
    const join = `FROM iam_links l JOIN ${fromTable} o ON o.id = l.from_id WHERE l.kind = '${kind}' AND l.to_id = ?`;
    return this.page(`SELECT o.* ${join} ORDER BY o.alias`, `SELECT COUNT(*) AS n ${join}`, [toId], page, map);
  }

  async groupUsers(owner: string, group: string, page: PageRequest): Promise<Page<IamUserRecord> | undefined> {
    const id = await this.idOf('iam_groups', owner, group);
    return id === undefined ? undefined : this.linkedFrom('group-user', 'iam_users', id, page, toUser);
  }

  async userGroups(owner: string, user: string, page: PageRequest): Promise<Page<IamGroupRecord> | undefined> {
    const id = await this.idOf('iam_users', owner, user);
    return id === undefined ? undefined : this.linkedTo('group-user', 'iam_groups', id, page, toGroup);
  }

  async attachedPolicies(owner: string, kind: 'user-policy' | 'group-policy', alias: string, page: PageRequest): Promise<Page<IamPolicyRecord> | undefined> {
    const id = await this.idOf(ENDS[kind].from, owner, alias);
    return id === undefined ? undefined : this.linkedFrom(kind, 'iam_policies', id, page, toPolicy);
  }

  async policyUsers(owner: string, policy: string, page: PageRequest): Promise<Page<IamUserRecord> | undefined> {
    const id = await this.idOf('iam_policies', owner, policy);
    return id === undefined ? undefined : this.linkedTo('user-policy', 'iam_users', id, page, toUser);
  }

  async policyGroups(owner: string, policy: string, page: PageRequest): Promise<Page<IamGroupRecord> | undefined> {
    const id = await this.idOf('iam_policies', owner, policy);
    return id === undefined ? undefined : this.linkedTo('group-policy', 'iam_groups', id, page, toGroup);
  }

  async effectivePolicies(owner: string, user: string): Promise<{ own: IamPolicyRecord[]; groups: Array<{ group: string; policies: IamPolicyRecord[] }> } | undefined> {
    const id = await this.idOf('iam_users', owner, user);
    if (id === undefined) return undefined;
    const own = await this.db.all<PolicyRow>(
      `SELECT p.* FROM iam_links l JOIN iam_policies p ON p.id = l.to_id WHERE l.kind = 'user-policy' AND l.from_id = ? ORDER BY p.alias`,
      [id],
    );
    const viaGroups = await this.db.all<PolicyRow & { group_alias: string }>(
      `SELECT g.alias AS group_alias, p.* FROM iam_links gu
         JOIN iam_groups g ON g.id = gu.from_id
         JOIN iam_links gp ON gp.kind = 'group-policy' AND gp.from_id = g.id
         JOIN iam_policies p ON p.id = gp.to_id
       WHERE gu.kind = 'group-user' AND gu.to_id = ? AND g.enabled = ? ORDER BY g.alias, p.alias`,
      [id, 1],
    );
    const groups = new Map<string, IamPolicyRecord[]>();
    for (const r of viaGroups) {
      const list = groups.get(r.group_alias) ?? [];
      list.push(toPolicy(r));
      groups.set(r.group_alias, list);
    }
    return { own: own.map(toPolicy), groups: [...groups].map(([group, policies]) => ({ group, policies })) };
  }

  async enforcementSnapshot(): Promise<IamSnapshot> {
    const keys = await this.db.all<{ access_key: string; secret_key: string; owner: string; user_id: string; enabled: Flag }>(
      'SELECT access_key, secret_key, owner, user_id, enabled FROM iam_keypairs',
    );
    const users = await this.db.all<{ id: string; owner: string; alias: string; iuid: Num; enabled: Flag }>('SELECT id, owner, alias, iuid, enabled FROM iam_users');
    const groups = await this.db.all<{ id: string; alias: string; enabled: Flag }>('SELECT id, alias, enabled FROM iam_groups');
    const policies = await this.db.all<{ id: string; alias: string; statement: string; enabled: Flag }>('SELECT id, alias, statement, enabled FROM iam_policies');
    const links = await this.db.all<{ kind: IamLinkKind; from_id: string; to_id: string }>('SELECT kind, from_id, to_id FROM iam_links');
    return {
      keys: keys.map((k) => ({ accessKey: k.access_key, secretKey: k.secret_key, owner: k.owner, userId: k.user_id, enabled: flag(k.enabled) })),
      users: users.map((u) => ({ id: u.id, owner: u.owner, alias: u.alias, iuid: Number(u.iuid), enabled: flag(u.enabled) })),
      groups: groups.map((g) => ({ id: g.id, alias: g.alias, enabled: flag(g.enabled) })),
      policies: policies.map((p) => ({ id: p.id, alias: p.alias, statement: p.statement, enabled: flag(p.enabled) })),
      links: links.map((l) => ({ kind: l.kind, fromId: l.from_id, toId: l.to_id })),
    };
  }

  async deleteOwner(owner: string): Promise<number> {
    const results = await this.db.batch([
      // Every link starts at a group or a user of its owner.
      {
        sql: `DELETE FROM iam_links WHERE from_id IN (SELECT id FROM iam_groups WHERE owner = ?) OR from_id IN (SELECT id FROM iam_users WHERE owner = ?)`,
        args: [owner, owner],
      },
      { sql: 'DELETE FROM iam_keypairs WHERE owner = ?', args: [owner] },
      { sql: 'DELETE FROM iam_users WHERE owner = ?', args: [owner] },
      { sql: 'DELETE FROM iam_groups WHERE owner = ?', args: [owner] },
      { sql: 'DELETE FROM iam_policies WHERE owner = ?', args: [owner] },
      { sql: 'DELETE FROM iam_audits WHERE owner = ?', args: [owner] },
    ]);
    return results[2]!.changes;
  }

  // ---- audits ----

  async appendAudit(a: Omit<IamAuditRecord, 'seq'>, max: number): Promise<void> {
    await this.db.batch([
      {
        sql: `INSERT INTO iam_audits (owner, actor, service, action, resource, iuid, request_id, source_ip, error_code, error_message, detail, at_ms)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [a.owner, a.actor, a.service, a.action, a.resource, a.iuid, a.requestId, a.sourceIp, a.errorCode, a.errorMessage, a.detail, a.atMs],
      },
      {
        sql: `DELETE FROM iam_audits WHERE owner = ? AND seq <= (SELECT seq FROM iam_audits WHERE owner = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
        args: [a.owner, a.owner, max],
      },
    ]);
  }

  async listAudits(
    owner: string,
    f: { afterSeq: number; limit: number; iuid?: number; service?: string; action?: string; resource?: string; fromMs?: number; toMs?: number },
  ): Promise<IamAuditRecord[]> {
    const where = ['owner = ?', 'seq > ?'];
    const args: unknown[] = [owner, f.afterSeq];
    const add = (clause: string, v: unknown): void => {
      if (v === undefined) return;
      where.push(clause);
      args.push(v);
    };
    add('iuid = ?', f.iuid);
    add('service = ?', f.service);
    add('action = ?', f.action);
    add('resource = ?', f.resource);
    add('at_ms >= ?', f.fromMs);
    add('at_ms < ?', f.toMs);
    const rows = await this.db.all<AuditRow>(`SELECT * FROM iam_audits WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`, [...args, f.limit]);
    return rows.map(toAudit);
  }
}
