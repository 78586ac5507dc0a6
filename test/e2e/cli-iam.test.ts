/**
 * `granary iam …` (src/cli/iam.ts) as a subprocess (bin/granary.js), offline on a running server's data dir and on
 * remotes (`--remote`, the server's Kodo IAM API signed with the remote's keys), checked from outside through the
 * Kodo IAM API (test/helpers/iam.ts): a team's setup — sub-users, a key pair, a group with members, a read-only and
 * an upload-only policy attached — then enable/disable, detach, delete; the text and `--json` outputs (the same JSON
 * offline and remote); `--owner` acting in an account's namespace (audited as the root key); errors naming the
 * field, 612 for unknown objects, refused flag mixes. Independent CLI calls run concurrently.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPair } from '../../src/auth/keys.js';
import { BIN, cleanEnv, REPO_ROOT, runAsync, type CliResult } from '../helpers/cli.js';
import { aliasesOf, iamData } from '../helpers/iam.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

const ROOT = { accessKey: AK, secretKey: SK };

let s: TestServer;
let alice: KeyPair;
let work: string;

/** `granary <args>` with the test's configuration dir and root key; offline calls add `--data-dir`. */
function granary(args: string[]): Promise<CliResult> {
  return runAsync(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: cleanEnv({ GRANARY_CONFIG_DIR: join(work, 'config'), GRANARY_ACCESS_KEY: AK, GRANARY_SECRET_KEY: SK }),
  });
}
const offline = (...args: string[]): Promise<CliResult> => granary(['iam', ...args, '--data-dir', s.dataDir]);
const remote = (name: string, ...args: string[]): Promise<CliResult> => granary(['iam', ...args, '--remote', name]);

/** A run that succeeded: its stdout. */
function ok(r: CliResult): string {
  expect(r.status, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r.stdout;
}
/** The JSON stdout of a run that succeeded. */
const json = <T = Record<string, unknown>>(r: CliResult): T => JSON.parse(ok(r)) as T;

beforeAll(async () => {
  s = await startTestServer();
  alice = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
  work = await mkdtemp(join(tmpdir(), 'granary-cli-iam-'));
  // At once: each `remote add` changes the one remotes file under its lock (transfer/file-lock.ts).
  await Promise.all([
    granary(['remote', 'add', 'root', '--ak', AK, '--sk', SK, '--uc-host', s.host, '--no-check']).then(ok),
    granary(['remote', 'add', 'alice', '--ak', alice.accessKey, '--sk', alice.secretKey, '--uc-host', s.host, '--no-check']).then(ok),
  ]);
}, 60_000);

afterAll(async () => {
  await s?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('granary iam offline on the data dir', { timeout: 120_000 }, () => {
  it("sets up a team: sub-users, a key pair, a group, a read-only and an upload-only policy; the Kodo IAM API sees it", async () => {
    const made = await Promise.all([
      offline('user', 'create', 'ann', '--password', 'correct-horse'),
      offline('user', 'create', 'bob', '--password', 'battery-staple'),
      offline('group', 'create', 'web', '--description', 'the web team'),
      offline('policy', 'create', 'read-only', '--allow', 'kodo/Get,kodo/List', '--allow', 'kodo/Stat', '--resource', 'qrn:kodo:::photos/*', '--description', 'read photos'),
      offline('policy', 'create', 'upload-only', '--allow', 'kodo/Upload,kodo/Mkfile', '--resource', 'qrn:kodo:::photos/incoming/*'),
    ]);
    expect(made.map(ok)).toEqual([
      expect.stringMatching(/^created sub-user ann \(iuid \d+\)\n$/),
      expect.stringMatching(/^created sub-user bob/),
      'created group web\n',
      'created policy read-only (1 statement)\n',
      'created policy upload-only (1 statement)\n',
    ]);
    const [key, added, attached, own] = await Promise.all([
      offline('keys', 'create', 'ann'),
      offline('group', 'add', 'web', 'ann', 'bob'),
      offline('group', 'attach', 'web', 'read-only'),
      offline('user', 'attach', 'bob', 'upload-only'),
    ]);
    const [, ak, sk] = /^AccessKey: (\S+)\nSecretKey: (\S+)\n$/.exec(ok(key)) ?? [];
    expect(ak).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect([ok(added), ok(attached), ok(own)]).toEqual(['added ann, bob to group web\n', 'attached read-only to group web\n', 'attached upload-only to sub-user bob\n']);

    // From outside: the Kodo IAM API of the root account.
    const [users, keys, members, groupPolicies, bobPolicies, readOnly] = await Promise.all([
      iamData<{ list: Array<{ alias: string }> }>(s, ROOT, '/iam/v1/users'),
      iamData<{ list: Array<{ access_key: string; secret_key: string; enabled: boolean }> }>(s, ROOT, '/iam/v1/users/ann/keypairs'),
      iamData<{ list: Array<{ alias: string }> }>(s, ROOT, '/iam/v1/groups/web/users'),
      iamData<{ list: Array<{ alias: string }> }>(s, ROOT, '/iam/v1/groups/web/policies'),
      iamData<{ list: Array<{ alias: string }> }>(s, ROOT, '/iam/v1/users/bob/policies'),
      iamData<{ statement: unknown; description: string }>(s, ROOT, '/iam/v1/policies/read-only'),
    ]);
    expect(aliasesOf(users)).toEqual(['ann', 'bob']);
    expect(keys.list).toEqual([expect.objectContaining({ access_key: ak, secret_key: sk, enabled: true })]);
    expect(aliasesOf(members)).toEqual(['ann', 'bob']);
    expect(aliasesOf(groupPolicies)).toEqual(['read-only']);
    expect(aliasesOf(bobPolicies)).toEqual(['upload-only']);
    expect(readOnly).toMatchObject({
      description: 'read photos',
      // Repeated --allow flags add actions to the one statement.
      statement: [{ effect: 'Allow', action: ['kodo/Get', 'kodo/List', 'kodo/Stat'], resource: ['qrn:kodo:::photos/*'] }],
    });
    expect(await iamData(s, ROOT, '/iam/v1/users/bob/services/kodo/actions/Upload/resources')).toEqual({ allow: ['qrn:kodo:::photos/incoming/*'], deny: [] });

    // Lists and objects, text and JSON; the same JSON offline and through the remote's API.
    const [list, listJson, getText, getOffline, getRemote, keyList, groupGet, policies, actions] = await Promise.all([
      offline('user', 'list'),
      offline('user', 'list', '--json'),
      offline('user', 'get', 'bob'),
      offline('user', 'get', 'bob', '--json'),
      remote('root', 'user', 'get', 'bob', '--json'),
      offline('keys', 'list', 'ann'),
      offline('group', 'get', 'web'),
      offline('policy', 'list'),
      offline('actions'),
    ]);
    expect(ok(list)).toMatch(/^ann\tenabled\t\d+\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\nbob\tenabled\t\d+\t.+Z\n$/);
    expect(json<Array<{ alias: string }>>(listJson).map((u) => u.alias)).toEqual(['ann', 'bob']);
    expect(ok(getText)).toMatch(/^alias\tbob\nstate\tenabled\niuid\t\d+\ncreated\t.+\nlast sign-in\t0001-01-01T00:00:00Z\ngroups\tweb\npolicies\tupload-only\n$/);
    expect(json(getOffline)).toEqual(json(getRemote));
    expect(json(getOffline)).toMatchObject({ alias: 'bob', enabled: true, groups: ['web'], policies: ['upload-only'] });
    expect(ok(keyList)).toMatch(new RegExp(`^${ak}\\tenabled\\t.+Z\\n$`));
    expect(ok(keyList)).not.toContain(sk!);
    expect(ok(groupGet)).toMatch(/^alias\tweb\ndescription\tthe web team\ncreated\t.+Z\nmembers\tann, bob\npolicies\tread-only\n$/);
    expect(ok(policies)).toBe('read-only\t1 statement\tread photos\nupload-only\t1 statement\t\n');
    expect(ok(actions)).toContain('kodo/Get\tresource\tdownload a file\n');
    expect(ok(actions)).toContain('kodo/Mkbucket\tservice\tcreate a bucket\n');
  });

  it('disables, detaches, removes and deletes; errors name the field or the missing object', async () => {
    const ak = (await iamData<{ list: Array<{ access_key: string }> }>(s, ROOT, '/iam/v1/users/ann/keypairs')).list[0]!.access_key;
    const changed = await Promise.all([
      offline('keys', 'disable', 'ann', ak),
      offline('user', 'update', 'bob', '--disable', '--json'),
      offline('group', 'detach', 'web', 'read-only', '--json'),
      offline('group', 'remove', 'web', 'bob'),
      offline('policy', 'update', 'upload-only', '--description', 'drop box'),
    ]);
    expect(ok(changed[0]!)).toBe(`disabled key ${ak} of sub-user ann\n`);
    expect(json(changed[1]!)).toMatchObject({ alias: 'bob', enabled: false });
    expect(ok(changed[2]!)).toBe('{}\n');
    expect(ok(changed[3]!)).toBe('removed bob from group web\n');
    expect(ok(changed[4]!)).toBe('updated policy upload-only\n');
    expect((await iamData<{ list: Array<{ enabled: boolean }> }>(s, ROOT, '/iam/v1/users/ann/keypairs')).list[0]?.enabled).toBe(false);
    expect((await iamData<{ enabled: boolean }>(s, ROOT, '/iam/v1/users/bob')).enabled).toBe(false);
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/groups/web/policies'))).toEqual([]);
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/groups/web/users'))).toEqual(['ann']);
    expect((await iamData<{ description: string }>(s, ROOT, '/iam/v1/policies/upload-only')).description).toBe('drop box');

    const refused = await Promise.all([
      offline('policy', 'create', 'bad', '--allow', 'kodo/Fly', '--resource', '*'),
      offline('policy', 'create', 'outside', '--allow', 'kodo/Get', '--resource', 'qrn:kodo::42:photos/*'),
      offline('user', 'get', 'nobody'),
      offline('user', 'create', 'ann', '--password', 'correct-horse'),
      offline('user', 'create', 'short', '--password', 'short'),
      offline('user', 'list', '--owner', 'no-such-key'),
      granary(['iam', 'user', 'list', '--remote', 'root', '--data-dir', s.dataDir]),
      granary(['iam', 'user', 'list', '--remote', 'nope']),
    ]);
    const errs = refused.map((r) => [r.status, r.stderr]);
    expect(errs).toEqual([
      [1, expect.stringMatching(/^granary: invalid IAM policy: statement\[0\]\.action\[0\]: unknown action "kodo\/Fly".* \(400\)\n$/)],
      [1, expect.stringMatching(/statement\[0\]\.resource\[0\]: .*outside the account/)],
      [1, 'granary: no such IAM user: nobody (612)\n'],
      [1, 'granary: IAM user exists: ann (614)\n'],
      [1, expect.stringMatching(/password must be a string of 8 to 128 characters \(400\)/)],
      [1, expect.stringMatching(/no account key no-such-key/)],
      [1, expect.stringMatching(/--remote acts on a remote: leave out --data-dir/)],
      [1, expect.stringMatching(/unknown remote "nope" \(known remotes: alice, root/)],
    ]);
    expect(await s.running.g.meta.iam.getPolicy(AK, 'bad')).toBeUndefined();

    const gone = await Promise.all([offline('user', 'delete', 'bob'), offline('group', 'delete', 'web'), offline('policy', 'delete', 'read-only', '--json')]);
    expect(gone.map(ok)).toEqual(['deleted sub-user bob\n', 'deleted group web\n', '{}\n']);
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/users'))).toEqual(['ann']);
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/groups'))).toEqual([]);

    // The audit log of the whole story, oldest first, a page at a time.
    const first = await offline('audits', '--limit', '5');
    // The first five were made at once: their order among themselves is the order they committed.
    expect(ok(first).split('\n').filter(Boolean).map((l) => l.split('\t')[1]).sort()).toEqual(['CreateGroup', 'CreatePolicy', 'CreatePolicy', 'CreateUser', 'CreateUser']);
    const more = /more: add --marker (\d+)/.exec(first.stderr)?.[1];
    expect(more).toBeDefined();
    const rest = json<{ marker: string; list: Array<{ action: string; access_key: string; request_id: string }> }>(await offline('audits', '--marker', more!, '--limit', '1000', '--json'));
    expect(rest.marker).toBe('');
    expect(rest.list.map((a) => a.action).slice(-3).sort()).toEqual(['DeleteGroup', 'DeletePolicy', 'DeleteUser']);
    expect(rest.list.every((a) => a.access_key === AK && /^cli-[0-9a-f]{32}$/.test(a.request_id))).toBe(true);
  });

  it('--owner acts in an account’s namespace, audited as the root key', async () => {
    ok(await offline('user', 'create', 'ci', '--password', 'correct-horse', '--owner', alice.accessKey));
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/users'))).toEqual(['ci']);
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/users'))).not.toContain('ci');
    const audits = await iamData<{ list: Array<{ action: string; access_key: string }> }>(s, alice, '/iam/v1/audits');
    expect(audits.list).toEqual([expect.objectContaining({ action: 'CreateUser', access_key: AK })]);
    ok(await offline('user', 'delete', 'ci', '--owner', alice.accessKey));
  });
});

describe('granary iam on a remote', { timeout: 120_000 }, () => {
  it("acts in the remote key pair's account through the Kodo IAM API", async () => {
    const file = join(work, 'policy.json');
    await writeFile(file, JSON.stringify({ statement: [{ action: ['kodo/Upload'], resource: ['qrn:kodo:::drop/in/*'], effect: 'Allow' }, { action: ['kodo/Delete'], resource: ['*'], effect: 'Deny' }] }));
    const made = await Promise.all([
      remote('alice', 'user', 'create', 'dana', '--password', 'correct-horse', '--json'),
      remote('alice', 'group', 'create', 'ops'),
      remote('alice', 'policy', 'create', 'drop-box', '--file', file, '--description', 'uploads only'),
    ]);
    expect(json(made[0]!)).toMatchObject({ alias: 'dana', enabled: true });
    expect(ok(made[1]!)).toBe('created group ops\n');
    expect(ok(made[2]!)).toBe('created policy drop-box (2 statements)\n');
    const [key, member, attached] = await Promise.all([
      remote('alice', 'keys', 'create', 'dana', '--json'),
      remote('alice', 'group', 'add', 'ops', 'dana'),
      remote('alice', 'group', 'attach', 'ops', 'drop-box'),
    ]);
    const pair = json<{ access_key: string; secret_key: string }>(key);
    expect([ok(member), ok(attached)]).toEqual(['added dana to group ops\n', 'attached drop-box to group ops\n']);
    expect((await iamData<{ list: Array<{ access_key: string }> }>(s, alice, '/iam/v1/users/dana/keypairs')).list.map((k) => k.access_key)).toEqual([pair.access_key]);
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/groups/ops/users'))).toEqual(['dana']);
    expect(await iamData(s, alice, '/iam/v1/users/dana/services/kodo/actions/Delete/resources')).toEqual({ allow: [], deny: ['*'] });
    // Not the root account's.
    expect(aliasesOf(await iamData(s, ROOT, '/iam/v1/users'))).not.toContain('dana');

    const [policy, keyOff, audits, missing, owner] = await Promise.all([
      remote('alice', 'policy', 'get', 'drop-box', '--json'),
      remote('alice', 'keys', 'disable', 'dana', pair.access_key),
      remote('alice', 'audits', '--json'),
      remote('alice', 'group', 'get', 'nobody'),
      granary(['iam', 'user', 'list', '--remote', 'alice', '--owner', AK]),
    ]);
    expect(json(policy)).toMatchObject({ alias: 'drop-box', description: 'uploads only', groups: ['ops'], users: [], statement: [{ effect: 'Allow' }, { effect: 'Deny' }] });
    expect(ok(keyOff)).toBe(`disabled key ${pair.access_key} of sub-user dana\n`);
    // (The --owner test left CreateUser and DeleteUser of user/ci before these.)
    const story = json<{ list: Array<{ action: string; resource: string }> }>(audits).list.filter((a) => a.resource !== 'user/ci');
    expect(story.map((a) => a.action).slice(0, 3).sort()).toEqual(['CreateGroup', 'CreatePolicy', 'CreateUser']);
    expect([missing.status, missing.stderr]).toEqual([1, 'granary: remote alice: 612 no such IAM group: nobody\n']);
    expect([owner.status, owner.stderr]).toEqual([1, expect.stringMatching(/--owner is for the data dir/)]);

    // Removing links sends DELETE with a JSON body, as go-sdk's DeleteGroupUsers/DeleteGroupPolicies do.
    const removed = await Promise.all([remote('alice', 'group', 'detach', 'ops', 'drop-box'), remote('alice', 'group', 'remove', 'ops', 'dana', '--json')]);
    expect(removed.map(ok)).toEqual(['detached drop-box from group ops\n', '{}\n']);
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/groups/ops/policies'))).toEqual([]);
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/groups/ops/users'))).toEqual([]);

    // Wrong keys: refused as such.
    ok(await granary(['remote', 'add', 'wrong', '--ak', alice.accessKey, '--sk', 'not-the-secret', '--uc-host', s.host, '--no-check']));
    const bad = await remote('wrong', 'user', 'list');
    expect([bad.status, bad.stderr]).toEqual([1, expect.stringMatching(/^granary: remote wrong: 401 .*\(the AccessKey\/SecretKey were refused\)\n$/)]);
  });
});
