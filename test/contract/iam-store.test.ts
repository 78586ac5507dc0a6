/**
 * The IamStore contract (src/ports/iam.ts, `MetaStore.iam`, store/sql/iam.ts) against the embedded SQLite store and
 * the PostgreSQL store (a throw-away PostgreSQL started by this file, test/helpers/meta-stores.ts): users, key pairs
 * (deleted with their user in one transaction; a pair of a deleted user never read), groups and policies (renames keep
 * links), links changed from either end with unknown aliases ignored, effective policies (own and enabled groups'),
 * owners never seeing each other's objects, and the audit log's bound and filters — including two stores on one
 * database (worker processes, cluster nodes) seeing each other's changes at once. Times in Unix ms.
 */
import { describe, expect, it } from 'vitest';
import type { IamGroupRecord, IamKeyPairRecord, IamPolicyRecord, IamStore, IamUserRecord } from '../../src/ports/iam.js';
import { metaStoreKinds, type MetaStoreKind } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();
const T0 = 1_700_000_000_000;
const ALL = { offset: 0, limit: 100 };

let seq = 0;
const hex = (): string => (++seq).toString(16).padStart(24, '0');

const user = (owner: string, alias: string, extra: Partial<IamUserRecord> = {}): IamUserRecord => ({
  owner, id: hex(), iuid: 2 ** 48 + ++seq, alias, passwordHash: 'scrypt$x$y', enabled: true, createdMs: T0, updatedMs: T0, lastLoginMs: 0, ...extra,
});
const group = (owner: string, alias: string, extra: Partial<IamGroupRecord> = {}): IamGroupRecord => ({
  owner, id: hex(), alias, description: '', enabled: true, createdMs: T0, updatedMs: T0, ...extra,
});
const policy = (owner: string, alias: string, extra: Partial<IamPolicyRecord> = {}): IamPolicyRecord => ({
  owner, id: hex(), alias, description: 'd', editType: 1, statement: '[{"action":["kodo/Get"],"resource":["*"],"effect":"Allow"}]', enabled: true, createdMs: T0, updatedMs: T0, ...extra,
});
const pair = (u: IamUserRecord, accessKey: string, createdMs = T0): IamKeyPairRecord => ({
  owner: u.owner, id: hex(), userAlias: u.alias, userId: u.id, accessKey, secretKey: `sk-${accessKey}`, enabled: true, createdMs,
});
const names = (p: { list: Array<{ alias: string }> } | undefined): string[] | undefined => p?.list.map((x) => x.alias);

describe.each(kinds.names)('IamStore contract: %s', (kind: MetaStoreKind) => {
  const fresh = async (n = 1): Promise<IamStore[]> => (await kinds.fresh(kind, n)).map((m) => m.iam);

  it('users: create once per owner and alias, list by alias with a prefix, update, delete with their key pairs', async () => {
    const [s] = await fresh();
    const a = user('acct', 'alice');
    expect(await s!.createUser(a)).toBe(true);
    expect(await s!.createUser(user('acct', 'alice'))).toBe(false);
    expect(await s!.createUser(user('other', 'alice'))).toBe(true);
    expect(await s!.createUser(user('acct', 'bob'))).toBe(true);
    expect(await s!.createUser(user('acct', 'al'))).toBe(true);
    expect(await s!.getUser('acct', 'alice')).toEqual(a);
    expect(await s!.getUser('acct', 'nobody')).toBeUndefined();
    const page = await s!.listUsers('acct', { offset: 1, limit: 1 });
    expect([page.count, names(page)]).toEqual([3, ['alice']]);
    const prefixed = await s!.listUsers('acct', ALL, 'al');
    expect([prefixed.count, names(prefixed)]).toEqual([2, ['al', 'alice']]);

    expect(await s!.updateUser('acct', 'alice', { enabled: false, updatedMs: T0 + 5 })).toEqual({ ...a, enabled: false, updatedMs: T0 + 5 });
    expect(await s!.updateUser('acct', 'alice', { passwordHash: 'scrypt$n$h', updatedMs: T0 + 6 })).toEqual({ ...a, enabled: false, passwordHash: 'scrypt$n$h', updatedMs: T0 + 6 });
    expect(await s!.updateUser('acct', 'nobody', { enabled: true, updatedMs: T0 })).toBeUndefined();

    // Key pairs: listed in creation order, enabled/disabled, deleted; all of them go with the user.
    const ak1 = pair(a, 'AK1', T0 + 1);
    expect(await s!.createKeyPair(ak1)).toBe(true);
    expect(await s!.createKeyPair(pair(a, 'AK2', T0 + 2))).toBe(true);
    expect(await s!.createKeyPair({ ...pair(a, 'AK3'), userAlias: 'nobody' })).toBe(false);
    const pairs = await s!.listKeyPairs('acct', 'alice', ALL);
    expect([pairs.count, pairs.list.map((k) => k.accessKey)]).toEqual([2, ['AK1', 'AK2']]);
    expect(pairs.list[0]).toEqual(ak1);
    expect(await s!.getKeyPair('AK1')).toEqual(ak1);
    expect(await s!.setKeyPairEnabled('acct', 'alice', 'AK1', false)).toBe(true);
    expect((await s!.getKeyPair('AK1'))?.enabled).toBe(false);
    expect(await s!.setKeyPairEnabled('acct', 'bob', 'AK1', true)).toBe(false); // not bob's
    expect(await s!.setKeyPairEnabled('other', 'alice', 'AK1', true)).toBe(false); // not that owner's
    expect(await s!.deleteKeyPair('acct', 'alice', 'AK2')).toBe(true);
    expect(await s!.deleteKeyPair('acct', 'alice', 'AK2')).toBe(false);
    expect(await s!.deleteUser('acct', 'alice')).toBe(true);
    expect(await s!.deleteUser('acct', 'alice')).toBe(false);
    expect(await s!.getKeyPair('AK1')).toBeUndefined();
    expect(await s!.getUser('other', 'alice')).toBeDefined();
  });

  it('groups and policies: renames keep links, deletes drop them, an alias taken answers "exists"', async () => {
    const [s] = await fresh();
    const u = user('acct', 'u1');
    await s!.createUser(u);
    await s!.createUser(user('acct', 'u2'));
    const g = group('acct', 'devs', { description: 'developers' });
    expect(await s!.createGroup(g)).toBe(true);
    expect(await s!.createGroup(group('acct', 'devs'))).toBe(false);
    await s!.createGroup(group('acct', 'ops'));
    const p = policy('acct', 'ro');
    expect(await s!.createPolicy(p)).toBe(true);
    expect(await s!.createPolicy(policy('acct', 'ro'))).toBe(false);
    await s!.createPolicy(policy('acct', 'rw'));
    expect(await s!.getPolicy('acct', 'ro')).toEqual(p);

    // Links from the group/user end: add (unknown ignored), remove, set.
    expect(await s!.changeLinks('acct', 'group-user', 'devs', 'add', ['u1', 'u2', 'ghost'])).toBe(true);
    expect(names(await s!.groupUsers('acct', 'devs', ALL))).toEqual(['u1', 'u2']);
    expect(await s!.changeLinks('acct', 'group-user', 'devs', 'add', ['u1'])).toBe(true); // twice: once
    expect((await s!.groupUsers('acct', 'devs', ALL))?.count).toBe(2);
    expect(await s!.changeLinks('acct', 'group-user', 'devs', 'remove', ['u2'])).toBe(true);
    expect(names(await s!.groupUsers('acct', 'devs', ALL))).toEqual(['u1']);
    expect(await s!.changeLinks('acct', 'group-user', 'nogroup', 'add', ['u1'])).toBe(false);
    expect(await s!.changeLinks('acct', 'group-policy', 'devs', 'set', ['ro'])).toBe(true);
    expect(await s!.changeLinks('acct', 'user-policy', 'u1', 'set', ['rw', 'ro'])).toBe(true);
    expect(await s!.changeLinks('acct', 'user-policy', 'u1', 'set', ['rw'])).toBe(true);
    expect(names(await s!.attachedPolicies('acct', 'user-policy', 'u1', ALL))).toEqual(['rw']);
    expect(await s!.attachedPolicies('acct', 'user-policy', 'nobody', ALL)).toBeUndefined();

    // From the other end: a user's groups, a policy's users and groups.
    expect(await s!.setLinksTo('acct', 'group-user', 'u2', ['devs', 'ops'])).toBe(true);
    expect(names(await s!.userGroups('acct', 'u2', ALL))).toEqual(['devs', 'ops']);
    expect(await s!.setLinksTo('acct', 'user-policy', 'ro', ['u1', 'u2'])).toBe(true);
    expect(names(await s!.policyUsers('acct', 'ro', ALL))).toEqual(['u1', 'u2']);
    expect(names(await s!.attachedPolicies('acct', 'user-policy', 'u1', ALL))).toEqual(['ro', 'rw']);
    expect(await s!.setLinksTo('acct', 'group-policy', 'ro', [])).toBe(true);
    expect((await s!.policyGroups('acct', 'ro', ALL))?.count).toBe(0);
    expect(await s!.setLinksTo('acct', 'group-policy', 'ro', ['devs'])).toBe(true);
    expect(await s!.setLinksTo('acct', 'group-policy', 'nopolicy', ['devs'])).toBe(false);

    // Renames keep the links; a taken alias is refused.
    expect(await s!.updateGroup('acct', 'devs', { alias: 'ops', updatedMs: T0 + 1 })).toBe('exists');
    const renamed = await s!.updateGroup('acct', 'devs', { alias: 'developers', description: 'all', updatedMs: T0 + 1 });
    expect(renamed).toEqual({ ...g, alias: 'developers', description: 'all', updatedMs: T0 + 1 });
    expect(names(await s!.groupUsers('acct', 'developers', ALL))).toEqual(['u1', 'u2']);
    expect(await s!.updateGroup('acct', 'devs', { description: 'x', updatedMs: T0 })).toBeUndefined();
    expect(await s!.updatePolicy('acct', 'ro', { alias: 'rw', updatedMs: T0 + 2 })).toBe('exists');
    const p2 = await s!.updatePolicy('acct', 'ro', { alias: 'read', statement: '[]', updatedMs: T0 + 2 });
    expect(p2).toEqual({ ...p, alias: 'read', statement: '[]', updatedMs: T0 + 2 });
    expect(names(await s!.policyGroups('acct', 'read', ALL))).toEqual(['developers']);

    // Effective policies: own and the enabled groups'.
    expect(await s!.effectivePolicies('acct', 'u1')).toEqual({
      own: [await s!.getPolicy('acct', 'read'), await s!.getPolicy('acct', 'rw')],
      groups: [{ group: 'developers', policies: [await s!.getPolicy('acct', 'read')] }],
    });
    expect(await s!.effectivePolicies('acct', 'nobody')).toBeUndefined();

    // Deleting a policy detaches it; deleting a group drops its memberships; deleting a user its links.
    expect(await s!.deletePolicy('acct', 'read')).toBe(true);
    expect(names(await s!.attachedPolicies('acct', 'user-policy', 'u1', ALL))).toEqual(['rw']);
    expect((await s!.attachedPolicies('acct', 'group-policy', 'developers', ALL))?.count).toBe(0);
    expect(await s!.deleteGroup('acct', 'developers')).toBe(true);
    expect(names(await s!.userGroups('acct', 'u2', ALL))).toEqual(['ops']);
    expect(await s!.deleteUser('acct', 'u2')).toBe(true);
    expect((await s!.groupUsers('acct', 'ops', ALL))?.count).toBe(0);
    expect(await s!.deleteGroup('acct', 'developers')).toBe(false);
    expect(await s!.deletePolicy('acct', 'read')).toBe(false);
  });

  it('owners never see each other; a second store on the database sees changes at once', async () => {
    const [a, b] = await fresh(2);
    await a!.createUser(user('acct', 'u'));
    await a!.createGroup(group('acct', 'g'));
    await a!.createPolicy(policy('acct', 'p'));
    expect(await b!.getUser('acct', 'u')).toBeDefined();
    expect(await b!.getUser('other', 'u')).toBeUndefined();
    expect((await b!.listGroups('other', ALL)).count).toBe(0);
    expect((await b!.listPolicies('other', ALL)).count).toBe(0);
    // Links never cross owners: another owner's aliases name nothing.
    await b!.createUser(user('other', 'v'));
    expect(await b!.changeLinks('acct', 'group-user', 'g', 'add', ['v'])).toBe(true);
    expect((await a!.groupUsers('acct', 'g', ALL))?.count).toBe(0);
    expect(await a!.changeLinks('other', 'group-user', 'g', 'add', ['v'])).toBe(false);
  });

  it('deleteOwner: every object of the account goes, another account keeps its own', async () => {
    const [s] = await fresh();
    for (const owner of ['gone', 'kept']) {
      const u = user(owner, 'u');
      await s!.createUser(u);
      await s!.createKeyPair(pair(u, `AK-${owner}`));
      await s!.createGroup(group(owner, 'g'));
      await s!.createPolicy(policy(owner, 'p'));
      await s!.changeLinks(owner, 'group-user', 'g', 'add', ['u']);
      await s!.changeLinks(owner, 'group-policy', 'g', 'add', ['p']);
      await s!.changeLinks(owner, 'user-policy', 'u', 'add', ['p']);
      await s!.appendAudit({ owner, actor: owner, service: 'iam', action: 'CreateUser', resource: 'user/u', iuid: 0, requestId: 'r', sourceIp: '', errorCode: 0, errorMessage: '', detail: '{}', atMs: T0 }, 100);
    }
    expect(await s!.deleteOwner('gone')).toBe(1);
    expect(await s!.getUser('gone', 'u')).toBeUndefined();
    expect(await s!.getKeyPair('AK-gone')).toBeUndefined();
    expect(await s!.getGroup('gone', 'g')).toBeUndefined();
    expect(await s!.getPolicy('gone', 'p')).toBeUndefined();
    expect(await s!.listAudits('gone', { afterSeq: 0, limit: 10 })).toEqual([]);
    expect((await s!.effectivePolicies('kept', 'u'))?.own.map((p) => p.alias)).toEqual(['p']);
    expect((await s!.getKeyPair('AK-kept'))?.owner).toBe('kept');
    expect(await s!.listAudits('kept', { afterSeq: 0, limit: 10 })).toHaveLength(1);
    expect(await s!.deleteOwner('gone')).toBe(0);
  });

  it('enforcementSnapshot reads every key pair, user, group, policy and link; every change moves the iam counter, seen by another store on the database', async () => {
    const [m1, m2] = await kinds.fresh(kind, 2);
    const s = m1!.iam;
    const before = await m2!.changeCount('iam');
    const u = user('acct', 'snap');
    await s.createUser(u);
    const afterUser = await m2!.changeCount('iam');
    expect(afterUser).toBeGreaterThan(before);
    await s.createKeyPair(pair(u, 'AK-SNAP'));
    const g = group('acct', 'g-snap');
    await s.createGroup(g);
    const p = policy('acct', 'p-snap');
    await s.createPolicy(p);
    await s.changeLinks('acct', 'group-user', 'g-snap', 'add', ['snap']);
    await s.changeLinks('acct', 'group-policy', 'g-snap', 'add', ['p-snap']);
    const moved = await m2!.changeCount('iam');
    expect(moved).toBeGreaterThan(afterUser);
    const snap = await m2!.iam.enforcementSnapshot();
    expect(snap.keys).toContainEqual({ accessKey: 'AK-SNAP', secretKey: 'sk-AK-SNAP', owner: 'acct', userId: u.id, enabled: true });
    expect(snap.users).toContainEqual({ id: u.id, owner: 'acct', alias: 'snap', iuid: u.iuid, enabled: true });
    expect(snap.groups).toContainEqual({ id: g.id, alias: 'g-snap', enabled: true });
    expect(snap.policies).toContainEqual({ id: p.id, alias: 'p-snap', statement: p.statement, enabled: true });
    expect(snap.links).toEqual(expect.arrayContaining([{ kind: 'group-user', fromId: g.id, toId: u.id }, { kind: 'group-policy', fromId: g.id, toId: p.id }]));
    // Disabling a key pair moves it too (what makes every process refuse it).
    await s.setKeyPairEnabled('acct', 'snap', 'AK-SNAP', false);
    expect(await m2!.changeCount('iam')).toBeGreaterThan(moved);
    expect((await m2!.iam.enforcementSnapshot()).keys.find((k) => k.accessKey === 'AK-SNAP')?.enabled).toBe(false);
  });

  it('audits: appended in order, the oldest dropped past the bound per owner, filtered, read after a marker', async () => {
    const [s] = await fresh();
    const rec = (owner: string, action: string, atMs: number, iuid = 0) => ({
      owner, actor: owner, service: 'iam', action, resource: `user/${action}`, iuid, requestId: `r-${action}`, sourceIp: '127.0.0.1', errorCode: 0, errorMessage: '', detail: '{}', atMs,
    });
    for (let i = 0; i < 5; i++) await s!.appendAudit(rec('acct', `A${i}`, T0 + i, i % 2), 3);
    await s!.appendAudit(rec('other', 'B0', T0), 3);
    const kept = await s!.listAudits('acct', { afterSeq: 0, limit: 10 });
    expect(kept.map((a) => a.action)).toEqual(['A2', 'A3', 'A4']);
    expect(kept[0]).toMatchObject(rec('acct', 'A2', T0 + 2, 0));
    expect(kept[1]!.seq).toBeGreaterThan(kept[0]!.seq);
    expect((await s!.listAudits('other', { afterSeq: 0, limit: 10 })).map((a) => a.action)).toEqual(['B0']);
    expect((await s!.listAudits('acct', { afterSeq: kept[0]!.seq, limit: 1 })).map((a) => a.action)).toEqual(['A3']);
    expect((await s!.listAudits('acct', { afterSeq: 0, limit: 10, iuid: 1 })).map((a) => a.action)).toEqual(['A3']);
    expect((await s!.listAudits('acct', { afterSeq: 0, limit: 10, action: 'A4' })).map((a) => a.action)).toEqual(['A4']);
    expect((await s!.listAudits('acct', { afterSeq: 0, limit: 10, fromMs: T0 + 3, toMs: T0 + 4 })).map((a) => a.action)).toEqual(['A3']);
    expect((await s!.listAudits('acct', { afterSeq: 0, limit: 10, resource: 'user/A2', service: 'iam' })).map((a) => a.action)).toEqual(['A2']);
  });
});
