/**
 * The Kodo IAM API (docs/reference/iam.md) driven with raw HTTP shaped exactly as Qiniu's go-sdk `iam/apis` sends it:
 * the method and path of each `api_<name>.go`, its query parameters, a JSON body (`Content-Type: application/json`)
 * where the Request has JSON fields, otherwise no body and the form Content-Type go-sdk's signer sets
 * (auth/credentials.go collectDataV2), an `X-Qiniu-Date` header (internal/clientv2/interceptor_default_header.go),
 * signed `Qiniu <ak>:<sign>` (auth.TokenQiniu). Answers are read as go-sdk reads them (`{"data": …}` with the JSON
 * tags of each Response). Covers users, key pairs, groups and members, policies and attachments, actions, services,
 * audits, bad input, account isolation, and go-sdk's own IAM integration test (iam/apis/api_user_groups_policy_test.go).
 */
import qiniu from 'qiniu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountUid } from '../../src/iam/ids.js';
import { ConsoleClient, startConsole } from '../helpers/console.js';
import { qiniuDate } from '../helpers/http.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { expectError, readAnswer, type RawAnswer } from '../helpers/upload.js';

let s: TestServer;
let alice: qiniu.auth.digest.Mac;

beforeAll(async () => {
  s = await startTestServer({ GRANARY_IAM_AUDIT_MAX: '100' });
  const pair = await s.running.g.keyIndex.create(0);
  alice = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
});
afterAll(async () => s?.stop());

/** A call as go-sdk's IAM client sends it (see the file comment); `mac` the credentials (root by default). */
async function iam(method: string, path: string, body?: unknown, mac: qiniu.auth.digest.Mac = s.mac): Promise<RawAnswer> {
  const url = `${s.url}${path}`;
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const contentType = text === undefined ? 'application/x-www-form-urlencoded' : 'application/json';
  const date = qiniuDate(new Date(s.clock.nowMs()));
  const headers: Record<string, string> = { 'Content-Type': contentType, 'X-Qiniu-Date': date };
  headers.Authorization = qiniu.util.generateAccessTokenV2(mac, url, method, contentType, text, { 'X-Qiniu-Date': date });
  return readAnswer(await fetch(url, { method, headers, ...(text !== undefined ? { body: text } : {}) }));
}

/** The `data` of a 200 answer. */
function data<T = Record<string, unknown>>(a: RawAnswer): T {
  expect(a.status, a.text).toBe(200);
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  return (a.json as { data: T }).data;
}

/** A 200 of a call go-sdk reads with `Do` (no result). */
function ok(a: RawAnswer): void {
  expect(a.status, a.text).toBe(200);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const aliases = (list: Array<{ alias: string }>): string[] => list.map((x) => x.alias);

describe('users and key pairs', () => {
  it('create, list, get, modify, delete users; the fields go-sdk reads', async () => {
    // api_create_user.go: POST /iam/v1/users {alias, password} → {data: CreatedIamUserData}
    const created = data(await iam('POST', '/iam/v1/users', { alias: 'u-alice', password: 'correct-horse' }));
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      root_uid: accountUid(s.mac.accessKey),
      iuid: expect.any(Number),
      alias: 'u-alice',
      created_at: expect.stringMatching(RFC3339),
      updated_at: expect.stringMatching(RFC3339),
      last_login_time: '0001-01-01T00:00:00Z',
      enabled: true,
    });
    expect(created.iuid as number).toBeGreaterThan(0);
    expect(JSON.stringify(created)).not.toContain('correct-horse');
    data(await iam('POST', '/iam/v1/users', { alias: 'u-bob', password: 'correct-horse' }));
    expectError(await iam('POST', '/iam/v1/users', { alias: 'u-alice', password: 'another-one' }), 614, /IAM user exists: u-alice/);

    // api_get_users.go: GET /iam/v1/users?alias=&page=&page_size= → {data: {count, list}}
    const all = data<{ count: number; list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/users'));
    expect(all.count).toBe(2);
    expect(aliases(all.list)).toEqual(['u-alice', 'u-bob']);
    const page2 = data<{ count: number; list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/users?page=2&page_size=1'));
    expect([page2.count, aliases(page2.list)]).toEqual([2, ['u-bob']]);
    const filtered = data<{ count: number; list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/users?alias=u-a'));
    expect([filtered.count, aliases(filtered.list)]).toEqual([1, ['u-alice']]);

    // api_get_user.go: GET /iam/v1/users/<alias> → {data: GetIamUserData}
    expect(data(await iam('GET', '/iam/v1/users/u-alice'))).toEqual(created);
    expectError(await iam('GET', '/iam/v1/users/nobody'), 612, /no such IAM user: nobody/);

    // api_modify_user.go: PATCH /iam/v1/users/<alias> {enabled, password?} → {data: ModifiedIamUserData}
    const modified = data(await iam('PATCH', '/iam/v1/users/u-bob', { enabled: false, password: 'new-password-1' }));
    expect(modified.enabled).toBe(false);
    expect(data(await iam('GET', '/iam/v1/users/u-bob')).enabled).toBe(false);
    expectError(await iam('PATCH', '/iam/v1/users/nobody', { enabled: true }), 612);

    // api_delete_user.go: DELETE /iam/v1/users/<alias> (go-sdk `Do`: any 2xx)
    ok(await iam('DELETE', '/iam/v1/users/u-bob'));
    expectError(await iam('GET', '/iam/v1/users/u-bob'), 612);
    expectError(await iam('DELETE', '/iam/v1/users/u-bob'), 612);
  });

  it('key pairs: create, list, disable, enable, delete; they do not authenticate; deleting the user deletes them', async () => {
    data(await iam('POST', '/iam/v1/users', { alias: 'u-keys', password: 'correct-horse' }));
    const user = data(await iam('GET', '/iam/v1/users/u-keys'));
    // api_create_user_keypairs.go: POST /iam/v1/users/<alias>/keypairs (no body) → {data: CreatedIamUserKeyPairData}
    const k1 = data(await iam('POST', '/iam/v1/users/u-keys/keypairs'));
    expect(k1).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      access_key: expect.stringMatching(/^[A-Za-z0-9_-]{40}$/),
      secret_key: expect.stringMatching(/^[A-Za-z0-9_-]{40}$/),
      user_id: user.id,
      created_at: expect.stringMatching(RFC3339),
      enabled: true,
    });
    const k2 = data(await iam('POST', '/iam/v1/users/u-keys/keypairs'));
    expectError(await iam('POST', '/iam/v1/users/nobody/keypairs'), 612);

    // api_get_user_keypairs.go: GET /iam/v1/users/<alias>/keypairs?page=&page_size= → {data: {count, list}}
    const listed = data<{ count: number; list: Array<Record<string, unknown>> }>(await iam('GET', '/iam/v1/users/u-keys/keypairs'));
    expect(listed.count).toBe(2);
    expect(listed.list.map((k) => k.access_key).sort()).toEqual([k1.access_key, k2.access_key].sort());

    // api_disable_user_keypair.go / api_enable_user_keypair.go: POST …/keypairs/<ak>/disable|enable (no body)
    ok(await iam('POST', `/iam/v1/users/u-keys/keypairs/${k1.access_key as string}/disable`));
    const afterDisable = data<{ list: Array<Record<string, unknown>> }>(await iam('GET', '/iam/v1/users/u-keys/keypairs'));
    expect(afterDisable.list.find((k) => k.access_key === k1.access_key)?.enabled).toBe(false);
    ok(await iam('POST', `/iam/v1/users/u-keys/keypairs/${k1.access_key as string}/enable`));
    expectError(await iam('POST', '/iam/v1/users/u-keys/keypairs/NOSUCHKEY/enable'), 612, /no such IAM key pair/);

    // A sub-user's key pair authenticates (enforcement: test/e2e/iam-matrix.test.ts), but the IAM API is the
    // account's own (403), and a sub-user without policies sees no bucket.
    const subMac = new qiniu.auth.digest.Mac(k1.access_key as string, k1.secret_key as string);
    expectError(await iam('GET', '/iam/v1/users', undefined, subMac), 403, /only the account/);
    const buckets = await iam('GET', '/v3/buckets', undefined, subMac);
    expect(buckets.status).toBe(200);
    expect(buckets.json).toEqual([]);

    // api_delete_user_keypair.go: DELETE /iam/v1/users/<alias>/keypairs/<ak>
    ok(await iam('DELETE', `/iam/v1/users/u-keys/keypairs/${k2.access_key as string}`));
    expectError(await iam('DELETE', `/iam/v1/users/u-keys/keypairs/${k2.access_key as string}`), 612);
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/users/u-keys/keypairs')).count).toBe(1);

    ok(await iam('DELETE', '/iam/v1/users/u-keys'));
    expect(await s.running.g.meta.iam.getKeyPair(k1.access_key as string)).toBeUndefined();
  });
});

describe('groups and members', () => {
  it('create, rename, members added, set, removed; a user’s groups; delete', async () => {
    for (const alias of ['m-one', 'm-two', 'm-three']) data(await iam('POST', '/iam/v1/users', { alias, password: 'correct-horse' }));
    // api_create_group.go: POST /iam/v1/groups {alias, description} → {data: CreatedGroupData}
    const g = data(await iam('POST', '/iam/v1/groups', { alias: 'devs', description: 'developers' }));
    expect(g).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      root_uid: accountUid(s.mac.accessKey),
      alias: 'devs',
      description: 'developers',
      enabled: true,
      created_at: expect.stringMatching(RFC3339),
      updated_at: expect.stringMatching(RFC3339),
    });
    expectError(await iam('POST', '/iam/v1/groups', { alias: 'devs' }), 614);
    expectError(await iam('POST', '/iam/v1/groups', { alias: '../x' }), 400, /invalid IAM alias/);

    // api_modify_group_users.go: PATCH /iam/v1/groups/<alias>/users {user_aliases} adds (unknown aliases ignored)
    ok(await iam('PATCH', '/iam/v1/groups/devs/users', { user_aliases: ['m-one', 'm-two', 'ghost'] }));
    // api_get_group_users.go: GET /iam/v1/groups/<alias>/users → {data: {count, list}}
    let members = data<{ count: number; list: Array<{ alias: string; iuid: number }> }>(await iam('GET', '/iam/v1/groups/devs/users'));
    expect([members.count, aliases(members.list)]).toEqual([2, ['m-one', 'm-two']]);

    // api_modify_group.go: PATCH /iam/v1/groups/<alias> {alias, description}: a rename keeps the members
    const renamed = data(await iam('PATCH', '/iam/v1/groups/devs', { alias: 'developers', description: 'all developers' }));
    expect([renamed.alias, renamed.description, renamed.id]).toEqual(['developers', 'all developers', g.id]);
    expectError(await iam('GET', '/iam/v1/groups/devs'), 612, /no such IAM group/);
    // api_get_group.go
    expect(data(await iam('GET', '/iam/v1/groups/developers')).alias).toBe('developers');
    members = data(await iam('GET', '/iam/v1/groups/developers/users'));
    expect(members.count).toBe(2);

    // api_update_group_users.go: POST sets; api_delete_group_users.go: DELETE removes
    ok(await iam('POST', '/iam/v1/groups/developers/users', { user_aliases: ['m-two', 'm-three'] }));
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/groups/developers/users')).list)).toEqual(['m-three', 'm-two']);
    ok(await iam('DELETE', '/iam/v1/groups/developers/users', { user_aliases: ['m-two'] }));
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/groups/developers/users')).list)).toEqual(['m-three']);
    expectError(await iam('PATCH', '/iam/v1/groups/nogroup/users', { user_aliases: ['m-one'] }), 612);

    // api_update_user_groups.go: POST /iam/v1/users/<alias>/groups {group_aliases}; api_get_user_groups.go
    data(await iam('POST', '/iam/v1/groups', { alias: 'ops' }));
    ok(await iam('POST', '/iam/v1/users/m-one/groups', { group_aliases: ['developers', 'ops'] }));
    const groups = data<{ count: number; list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/users/m-one/groups'));
    expect([groups.count, aliases(groups.list)]).toEqual([2, ['developers', 'ops']]);
    // api_get_groups.go
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/groups')).list)).toEqual(['developers', 'ops']);

    // Deleting a user leaves its groups; deleting a group leaves its users.
    ok(await iam('DELETE', '/iam/v1/users/m-three'));
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/groups/developers/users')).count).toBe(1);
    // api_delete_group.go
    ok(await iam('DELETE', '/iam/v1/groups/ops'));
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/users/m-one/groups')).list)).toEqual(['developers']);
    expectError(await iam('DELETE', '/iam/v1/groups/ops'), 612);
  });
});

describe('policies and attachments', () => {
  const readOnly = {
    alias: 'read-photos',
    description: 'read the photos bucket',
    edit_type: 1,
    statement: [
      { action: ['kodo/Get', 'kodo/Stat', 'kodo/List'], resource: ['qrn:kodo:::photos/*'], effect: 'Allow' },
      { action: ['kodo/Delete'], resource: ['*'], effect: 'Deny' },
    ],
  };

  it('create, get, list, modify, delete; the statement round-trips', async () => {
    // api_create_policy.go: POST /iam/v1/policies {alias, edit_type, description, statement} → {data: CreatedPolicyData}
    const p = data(await iam('POST', '/iam/v1/policies', readOnly));
    expect(p).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      root_uid: accountUid(s.mac.accessKey),
      alias: 'read-photos',
      description: 'read the photos bucket',
      edit_type: 1,
      enabled: true,
      created_at: expect.stringMatching(RFC3339),
      updated_at: expect.stringMatching(RFC3339),
      statement: readOnly.statement,
    });
    expectError(await iam('POST', '/iam/v1/policies', readOnly), 614, /IAM policy exists/);
    // api_get_policy.go, api_get_policies.go
    expect(data(await iam('GET', '/iam/v1/policies/read-photos'))).toEqual(p);
    const list = data<{ count: number; list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/policies?page=1&page_size=10'));
    expect(aliases(list.list)).toContain('read-photos');
    // api_modify_policy.go: PATCH /iam/v1/policies/<alias> {alias, description, statement}
    const statement = [{ action: ['kodo/Upload', 'kodo/Mkfile'], resource: ['qrn:kodo:::photos/incoming/*'], effect: 'Allow' }];
    const m = data(await iam('PATCH', '/iam/v1/policies/read-photos', { alias: 'upload-incoming', statement }));
    expect([m.alias, m.description, m.statement, m.id]).toEqual(['upload-incoming', 'read the photos bucket', statement, p.id]);
    expectError(await iam('GET', '/iam/v1/policies/read-photos'), 612, /no such IAM policy/);
    // api_delete_policy.go
    ok(await iam('DELETE', '/iam/v1/policies/upload-incoming'));
    expectError(await iam('DELETE', '/iam/v1/policies/upload-incoming'), 612);
  });

  it('bad policies: 400 naming the field', async () => {
    const base = { alias: 'bad', statement: [{ action: ['kodo/Get'], resource: ['*'], effect: 'Allow' }] };
    expectError(await iam('POST', '/iam/v1/policies', '{"alias": "bad", "statement": ['), 400, /not JSON/);
    expectError(await iam('POST', '/iam/v1/policies', { alias: 'bad' }), 400, /statement: must be a non-empty array/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: ['kodo/Fly'], resource: ['*'], effect: 'Allow' }] }), 400, /statement\[0\]\.action\[0\]: unknown action "kodo\/Fly"/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: ['Get'], resource: ['*'], effect: 'Allow' }] }), 400, /statement\[0\]\.action\[0\]/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: ['kodo/Get'], resource: ['photos/*'], effect: 'Allow' }] }), 400, /statement\[0\]\.resource\[0\]/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: ['kodo/Get'], resource: ['qrn:kodo::12345:photos/*'], effect: 'Allow' }] }), 400, /statement\[0\]\.resource\[0\].*outside the account/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: ['kodo/Get'], resource: ['*'], effect: 'Maybe' }] }), 400, /statement\[0\]\.effect/);
    expectError(await iam('POST', '/iam/v1/policies', { ...base, edit_type: 7 }), 400, /edit_type/);
    expectError(await iam('PATCH', '/iam/v1/policies/nope', { statement: [{ action: ['kodo/Get'], resource: ['*'], effect: 'Allow' }] }), 612);
    // Nothing was stored by the refusals.
    expectError(await iam('GET', '/iam/v1/policies/bad'), 612);
    // The account's own uid is accepted; effects in any case are stored capitalised.
    const own = data<{ statement: unknown }>(
      await iam('POST', '/iam/v1/policies', { ...base, statement: [{ action: 'kodo/Get', resource: [`qrn:kodo::${accountUid(s.mac.accessKey)}:photos/*`], effect: 'allow' }] }),
    );
    expect(own.statement).toEqual([{ action: ['kodo/Get'], resource: [`qrn:kodo::${accountUid(s.mac.accessKey)}:photos/*`], effect: 'Allow' }]);
  });

  it('attached to users and groups; what a user may do (services, resources)', async () => {
    data(await iam('POST', '/iam/v1/users', { alias: 'p-user', password: 'correct-horse' }));
    data(await iam('POST', '/iam/v1/groups', { alias: 'p-group' }));
    ok(await iam('PATCH', '/iam/v1/groups/p-group/users', { user_aliases: ['p-user'] }));
    data(await iam('POST', '/iam/v1/policies', { ...readOnly, alias: 'ro' }));
    data(await iam('POST', '/iam/v1/policies', { alias: 'up', statement: [{ action: ['kodo/Upload'], resource: ['qrn:kodo:::photos/in/*'], effect: 'Allow' }] }));

    // api_update_user_policies.go (POST sets), api_modify_user_policies.go (PATCH adds), api_delete_user_policy.go (DELETE removes)
    ok(await iam('POST', '/iam/v1/users/p-user/policies', { policy_aliases: ['up'] }));
    ok(await iam('PATCH', '/iam/v1/users/p-user/policies', { policy_aliases: ['ro'] }));
    // api_get_user_policies.go
    let own = data<{ count: number; list: Array<{ alias: string; statement: unknown }> }>(await iam('GET', '/iam/v1/users/p-user/policies'));
    expect([own.count, aliases(own.list)]).toEqual([2, ['ro', 'up']]);
    ok(await iam('DELETE', '/iam/v1/users/p-user/policies', { policy_aliases: ['ro'] }));
    own = data(await iam('GET', '/iam/v1/users/p-user/policies'));
    expect(aliases(own.list)).toEqual(['up']);

    // api_update_group_policies.go; api_get_policy_groups.go; api_update_policy_groups.go
    ok(await iam('POST', '/iam/v1/groups/p-group/policies', { policy_aliases: ['ro'] }));
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/policies/ro/groups')).list)).toEqual(['p-group']);
    // api_update_policy_users.go; api_get_policy_users.go
    ok(await iam('POST', '/iam/v1/policies/ro/users', { user_aliases: ['p-user'] }));
    expect(aliases(data<{ list: Array<{ alias: string }> }>(await iam('GET', '/iam/v1/policies/ro/users')).list)).toEqual(['p-user']);
    ok(await iam('POST', '/iam/v1/policies/ro/users', { user_aliases: [] }));
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/policies/ro/users')).count).toBe(0);
    ok(await iam('POST', '/iam/v1/policies/ro/groups', { group_aliases: ['p-group'] }));

    // api_get_user_available_services.go: GET /iam/v1/users/<alias>/services → {data: [service]}
    expect(data(await iam('GET', '/iam/v1/users/p-user/services'))).toEqual(['kodo']);
    // api_get_user_service_action_resources.go: own policies and the groups'
    expect(data(await iam('GET', '/iam/v1/users/p-user/services/kodo/actions/Get/resources'))).toEqual({ allow: ['qrn:kodo:::photos/*'], deny: [] });
    expect(data(await iam('GET', '/iam/v1/users/p-user/services/kodo/actions/Upload/resources'))).toEqual({ allow: ['qrn:kodo:::photos/in/*'], deny: [] });
    expect(data(await iam('GET', '/iam/v1/users/p-user/services/kodo/actions/Delete/resources'))).toEqual({ allow: [], deny: ['*'] });
    // api_get_group_service_action_resources.go
    expect(data(await iam('GET', '/iam/v1/groups/p-group/services/kodo/actions/Upload/resources'))).toEqual({ allow: [], deny: [] });
    expectError(await iam('GET', '/iam/v1/users/nobody/services'), 612);

    // Deleting a policy detaches it everywhere.
    ok(await iam('DELETE', '/iam/v1/policies/ro'));
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/groups/p-group/policies')).count).toBe(0);
  });
});

describe('catalogue and audits', () => {
  it('actions and services', async () => {
    // api_get_actions.go: GET /iam/v1/actions?service=&page=&page_size= → {data: {count, list}}
    const actions = data<{ count: number; list: Array<Record<string, unknown>> }>(await iam('GET', '/iam/v1/actions?service=kodo&page_size=100'));
    expect(actions.count).toBe(actions.list.length);
    expect(actions.list.find((a) => a.alias === 'Get')).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      name: 'download a file',
      alias: 'Get',
      service: 'kodo',
      scope: 1,
      enabled: true,
      created_at: expect.stringMatching(RFC3339),
      updated_at: expect.stringMatching(RFC3339),
    });
    expect(actions.list.find((a) => a.alias === 'Mkbucket')?.scope).toBe(0);
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/actions?service=cdn')).count).toBe(0);
    // api_get_services.go: GET /iam/v1/services → {data: [service]}
    expect(data(await iam('GET', '/iam/v1/services'))).toEqual(['kodo']);
  });

  it('every change is audited (who, action, resource, time, request id), paged by marker, filtered', async () => {
    const created = await iam('POST', '/iam/v1/users', { alias: 'audited', password: 'correct-horse' });
    const user = data(created);
    const reqId = created.headers.get('x-reqid');
    ok(await iam('DELETE', '/iam/v1/users/audited'));
    // api_get_audits.go: GET /iam/v1/audits?iuid=&service=&action=&resource=&start_time=&end_time=&marker=&limit=
    const byUser = data<{ marker: string; list: Array<Record<string, unknown>> }>(await iam('GET', `/iam/v1/audits?iuid=${user.iuid as number}`));
    expect(byUser.list.map((a) => a.action)).toEqual(['CreateUser', 'DeleteUser']);
    expect(byUser.list[0]).toMatchObject({
      id: expect.any(String),
      root_uid: accountUid(s.mac.accessKey),
      iuid: user.iuid,
      service: 'iam',
      created_at: expect.stringMatching(RFC3339),
      event_time: expect.stringMatching(RFC3339),
      source_ip: expect.any(String),
      error_code: 0,
      resource: 'user/audited',
      request_id: reqId,
      access_key: s.mac.accessKey,
    });
    expect(JSON.parse(byUser.list[0]!.user_event as string)).toMatchObject({ access_key: s.mac.accessKey, resource: 'user/audited', request_id: reqId });

    // Paging: limit 1 gives a marker; following it reads the next record, the last page has no marker.
    const first = data<{ marker: string; list: Array<{ id: string }> }>(await iam('GET', '/iam/v1/audits?action=CreateUser&limit=1'));
    expect(first.list).toHaveLength(1);
    expect(first.marker).toBe(first.list[0]!.id);
    const next = data<{ marker: string; list: Array<{ id: string; action: string }> }>(await iam('GET', `/iam/v1/audits?action=CreateUser&limit=1&marker=${first.marker}`));
    expect(Number(next.list[0]!.id)).toBeGreaterThan(Number(first.marker));
    const everything = data<{ marker: string; list: unknown[] }>(await iam('GET', '/iam/v1/audits?limit=1000'));
    expect(everything.marker).toBe('');
    const future = new Date(s.clock.nowMs() + 3_600_000).toISOString();
    expect(data<{ list: unknown[] }>(await iam('GET', `/iam/v1/audits?start_time=${encodeURIComponent(future)}`)).list).toEqual([]);
    expectError(await iam('GET', '/iam/v1/audits?start_time=yesterday'), 400, /start_time/);
    expectError(await iam('GET', '/iam/v1/audits?limit=1001'), 400, /limit/);
  });

  it('an account keeps its last GRANARY_IAM_AUDIT_MAX records (100 here)', async () => {
    const pair = await s.running.g.keyIndex.create(0);
    const erin = new qiniu.auth.digest.Mac(pair.accessKey, pair.secretKey);
    for (let i = 0; i < 105; i++) data(await iam('POST', '/iam/v1/groups', { alias: `g${i}` }, erin));
    const kept = data<{ marker: string; list: Array<{ resource: string }> }>(await iam('GET', '/iam/v1/audits?limit=1000', undefined, erin));
    expect(kept.list).toHaveLength(100);
    expect(kept.list[0]!.resource).toBe('group/g5');
    expect(kept.list[99]!.resource).toBe('group/g104');
    expectError(await iam('GET', '/iam/v1/audits?marker=xyz'), 400, /marker/);
  });
});

describe('credentials and accounts', () => {
  it('unsigned or badly signed calls are refused (401); an account key sees only its own IAM objects', async () => {
    const unsigned = await readAnswer(await fetch(`${s.url}/iam/v1/users`));
    expectError(unsigned, 401);
    const wrong = new qiniu.auth.digest.Mac(s.mac.accessKey, 'not-the-secret');
    expectError(await iam('GET', '/iam/v1/users', undefined, wrong), 401);

    data(await iam('POST', '/iam/v1/users', { alias: 'shared-name', password: 'correct-horse' }));
    // Alice's namespace: empty, and the same alias is free there.
    expect(data<{ count: number }>(await iam('GET', '/iam/v1/users?alias=shared-name', undefined, alice)).count).toBe(0);
    const hers = data(await iam('POST', '/iam/v1/users', { alias: 'shared-name', password: 'correct-horse' }, alice));
    expect(hers.root_uid).toBe(accountUid(alice.accessKey));
    expect(hers.root_uid).not.toBe(accountUid(s.mac.accessKey));
    ok(await iam('DELETE', '/iam/v1/users/shared-name', undefined, alice));
    expect(data(await iam('GET', '/iam/v1/users/shared-name')).alias).toBe('shared-name');
    // Her audit log has her changes only.
    const audits = data<{ list: Array<{ access_key: string }> }>(await iam('GET', '/iam/v1/audits?limit=1000', undefined, alice));
    expect(audits.list.length).toBe(2);
    expect(new Set(audits.list.map((a) => a.access_key))).toEqual(new Set([alice.accessKey]));
  });

  it("deleting an account key pair (the console's Keys page) deletes the account's IAM objects", async () => {
    const c = await startConsole(s);
    try {
      const root = new ConsoleClient(c.url);
      expect((await root.signIn(AK, SK)).status).toBe(200);
      const made = await root.call<{ accessKey: string; secretKey: string }>('POST', '/api/keys');
      const dave = new qiniu.auth.digest.Mac(made.body.accessKey, made.body.secretKey);
      data(await iam('POST', '/iam/v1/users', { alias: 'daves-user', password: 'correct-horse' }, dave));
      const key = data(await iam('POST', '/iam/v1/users/daves-user/keypairs', undefined, dave));
      data(await iam('POST', '/iam/v1/groups', { alias: 'daves-group' }, dave));
      expect((await root.call('DELETE', `/api/keys/${made.body.accessKey}`)).status).toBe(204);
      const store = s.running.g.meta.iam;
      expect(await store.getUser(made.body.accessKey, 'daves-user')).toBeUndefined();
      expect(await store.getGroup(made.body.accessKey, 'daves-group')).toBeUndefined();
      expect(await store.getKeyPair(key.access_key as string)).toBeUndefined();
      expect(await store.listAudits(made.body.accessKey, { afterSeq: 0, limit: 10 })).toEqual([]);
    } finally {
      await c.close();
    }
  });
});

/**
 * go-sdk's own IAM integration test, iam/apis/api_user_groups_policy_test.go (TestUserGroupsPolicyApi; added in
 * go-sdk e172621 "Fix: delete group policy & bucket v4"), its calls in order with its assertions.
 */
describe("go-sdk's TestUserGroupsPolicyApi", () => {
  it('groups, policies, group policies', async () => {
    const kGroupAlias = 'GoIamGroup';
    const kPolicyAlias = 'GoIamPolicy';
    const kPolicyAlias2 = 'GoIamPolicy2';
    // 清理环境: errors ignored
    await iam('DELETE', `/iam/v1/groups/${kGroupAlias}`);
    await iam('DELETE', `/iam/v1/policies/${kPolicyAlias}`);
    await iam('DELETE', `/iam/v1/policies/${kPolicyAlias2}`);

    // 1. CreateGroup
    const g = data(await iam('POST', '/iam/v1/groups', { alias: kGroupAlias, description: `${kGroupAlias}desc` }));
    for (const f of ['id', 'alias', 'description', 'created_at', 'updated_at']) expect((g[f] as string).length, f).toBeGreaterThan(0);
    expect(g.root_uid).not.toBe(0);

    // 2., 3. CreatePolicy ×2 (EditType 1, action cdn/DownloadCDNLog, resource qrn:product:::/a/b/c.txt)
    const policyAction = 'cdn/DownloadCDNLog';
    const policyEffect = 'Allow';
    const policyResource = 'qrn:product:::/a/b/c.txt';
    for (const alias of [kPolicyAlias, kPolicyAlias2]) {
      const p = data<Record<string, unknown> & { statement: Array<{ action: string[]; resource: string[]; effect: string }> }>(
        await iam('POST', '/iam/v1/policies', {
          alias,
          edit_type: 1,
          description: `${alias}Desc`,
          statement: [{ action: [policyAction], resource: [policyResource], effect: policyEffect }],
        }),
      );
      for (const f of ['id', 'alias', 'description', 'created_at', 'updated_at']) expect((p[f] as string).length, f).toBeGreaterThan(0);
      expect(p.root_uid).not.toBe(0);
      expect(p.statement[0]!.action.length).toBeGreaterThan(0);
      expect(p.statement[0]!.resource.length).toBeGreaterThan(0);
      expect(p.statement[0]!.effect.length).toBeGreaterThan(0);
    }

    // 4. ModifyGroupPolicies [kPolicyAlias]
    ok(await iam('PATCH', `/iam/v1/groups/${kGroupAlias}/policies`, { policy_aliases: [kPolicyAlias] }));
    // 5. GetGroupPolicies: one, with the statement as created
    type Policies = { count: number; list: Array<{ id: string; alias: string; description: string; created_at: string; updated_at: string; statement: Array<{ action: string[]; resource: string[]; effect: string }> }> };
    let gp = data<Policies>(await iam('GET', `/iam/v1/groups/${kGroupAlias}/policies`));
    expect(gp.count).toBe(1);
    expect(gp.list).toHaveLength(1);
    const added = gp.list[0]!;
    expect(added.id.length).toBeGreaterThan(0);
    expect(added.alias).toBe(kPolicyAlias);
    expect(added.description.length).toBeGreaterThan(0);
    expect(added.created_at.length).toBeGreaterThan(0);
    expect(added.updated_at.length).toBeGreaterThan(0);
    expect(added.statement).toEqual([{ action: [policyAction], resource: [policyResource], effect: policyEffect }]);

    // 6. ModifyGroupPolicies [kGroupAlias, kPolicyAlias2]: adds; the group alias names no policy and is ignored
    ok(await iam('PATCH', `/iam/v1/groups/${kGroupAlias}/policies`, { policy_aliases: [kGroupAlias, kPolicyAlias2] }));
    // 7. GetGroupPolicies: two, both ours
    gp = data<Policies>(await iam('GET', `/iam/v1/groups/${kGroupAlias}/policies`));
    expect(gp.count).toBe(2);
    expect(aliases(gp.list).sort()).toEqual([kPolicyAlias, kPolicyAlias2]);

    // 8. DeleteGroupPolicies [kPolicyAlias]
    ok(await iam('DELETE', `/iam/v1/groups/${kGroupAlias}/policies`, { policy_aliases: [kPolicyAlias] }));
    // 9. GetGroupPolicies: only kPolicyAlias2
    gp = data<Policies>(await iam('GET', `/iam/v1/groups/${kGroupAlias}/policies`));
    expect(aliases(gp.list)).toEqual([kPolicyAlias2]);
  });
});
