/**
 * Sub-user keys as enforcement sees them: from one read of the IAM store (IamStore.enforcementSnapshot), the map
 * AccessKey → { SecretKey, the account it acts in, its Principal with every policy that applies to it } — its own
 * policies and those of its enabled groups, disabled policies left out (evaluate.ts `principalOf` rules).
 *
 * A key pair that is disabled, or whose user is disabled or gone, is not in the map: it authenticates nothing on
 * any door (401 unknown key / S3 InvalidAccessKeyId). auth/key-index.ts holds the map and rebuilds it when the
 * store's `iam` change counter moves (docs/reference/iam.md, "Enforcement").
 */
import type { IamSnapshot } from '../ports/iam.js';
import type { AppliedPolicy, Principal } from './evaluate.js';
import { accountUid } from './ids.js';
import { storedStatements } from './policy.js';

/** An enabled sub-user key pair. */
export interface SubUserKey {
  secretKey: string;
  /** The AccessKey of the account the sub-user belongs to (the owner of the buckets it may act on). */
  account: string;
  /** The sub-user's uid (Kodo `iuid`). */
  iuid: number;
  principal: Extract<Principal, { kind: 'user' }>;
}

/** The enabled sub-user keys of the snapshot (see the module comment). */
export function subUserKeys(snap: IamSnapshot): Map<string, SubUserKey> {
  const users = new Map(snap.users.map((u) => [u.id, u]));
  const groups = new Map(snap.groups.map((g) => [g.id, g]));
  const policies = new Map(snap.policies.filter((p) => p.enabled).map((p) => [p.id, { alias: p.alias, statements: storedStatements(p.statement) }]));
  const userPolicies = new Map<string, string[]>();
  const groupPolicies = new Map<string, string[]>();
  const userGroups = new Map<string, string[]>();
  const push = (m: Map<string, string[]>, k: string, v: string): void => {
    const list = m.get(k);
    if (list) list.push(v);
    else m.set(k, [v]);
  };
  for (const l of snap.links) {
    if (l.kind === 'user-policy') push(userPolicies, l.fromId, l.toId);
    else if (l.kind === 'group-policy') push(groupPolicies, l.fromId, l.toId);
    else push(userGroups, l.toId, l.fromId);
  }
  const applied = new Map<string, AppliedPolicy[]>();
  const policiesOf = (userId: string): AppliedPolicy[] => {
    let list = applied.get(userId);
    if (list) return list;
    list = [];
    for (const pid of userPolicies.get(userId) ?? []) {
      const p = policies.get(pid);
      if (p) list.push({ alias: p.alias, via: 'user', statements: p.statements });
    }
    for (const gid of userGroups.get(userId) ?? []) {
      const g = groups.get(gid);
      if (!g?.enabled) continue;
      for (const pid of groupPolicies.get(gid) ?? []) {
        const p = policies.get(pid);
        if (p) list.push({ alias: p.alias, via: { group: g.alias }, statements: p.statements });
      }
    }
    applied.set(userId, list);
    return list;
  };
  const out = new Map<string, SubUserKey>();
  for (const k of snap.keys) {
    const u = users.get(k.userId);
    if (!k.enabled || !u?.enabled || u.owner !== k.owner) continue;
    out.set(k.accessKey, {
      secretKey: k.secretKey,
      account: u.owner,
      iuid: u.iuid,
      principal: { kind: 'user', owner: u.owner, ownerUid: accountUid(u.owner), alias: u.alias, enabled: true, policies: policiesOf(u.id) },
    });
  }
  return out;
}
