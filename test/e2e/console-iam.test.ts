/**
 * The console's IAM screens (console/src/screens/Iam*.tsx, src/console/api-iam-*.ts) in Chromium (playwright-core
 * with Debian's chromium), checked from outside through the Kodo IAM API (`/iam/v1/…` signed with the account's
 * key, test/helpers/iam.ts):
 * - an account signs in, creates a sub-user, a key pair (its SecretKey shown once; disabled from the screen), a
 *   group with the sub-user as member, and a read-only policy through the policy editor — a statement without a
 *   resource is refused by the page, a resource outside the account by the server, its message shown against the
 *   resource field — attached to the group; the audit log lists the changes;
 * - the root key picks an account in the screen and changes a sub-user's password there (audited as the root key);
 *   an account has no picker;
 * - the API: an account manages only its own namespace (403 for another `account`), the root key any account's
 *   (`?account=`), recorded in that account's audit log as the root key's act; listed key pairs carry no secret;
 * - at 390 px wide the IAM screens never scroll the page sideways.
 * Screenshots: a temp dir, or docs/screenshots/ with GRANARY_UPDATE_SCREENSHOTS=1.
 */
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPair } from '../../src/auth/keys.js';
import { launchChromium } from '../helpers/browser.js';
import { ConsoleClient, ensureConsoleBuilt, startConsole, type ConsoleServer } from '../helpers/console.js';
import { aliasesOf, iamData } from '../helpers/iam.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';

const UPDATE_SHOTS = process.env.GRANARY_UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE_SHOTS ? new URL('../../docs/screenshots/', import.meta.url).pathname : `${mkdtempSync(join(tmpdir(), 'granary-console-shots-'))}/`;
const ROOT = { accessKey: AK, secretKey: SK };

let s: TestServer;
let c: ConsoleServer;
let browser: Browser;
let alice: KeyPair;

beforeAll(async () => {
  ensureConsoleBuilt();
  [s, browser] = await Promise.all([startTestServer(), launchChromium()]);
  c = await startConsole(s);
  alice = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
  const client = new ConsoleClient(c.url);
  expect((await client.signIn(alice.accessKey, alice.secretKey)).status).toBe(200);
  expect((await client.call('POST', '/api/buckets', { name: 'team-assets' })).status).toBe(200);
});

afterAll(async () => {
  if (!UPDATE_SHOTS) await rm(SHOTS, { recursive: true, force: true });
  await browser?.close();
  await c?.close();
  await s?.stop();
});

async function signedInPage(pair: { accessKey: string; secretKey: string }, width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, locale: 'en-US', deviceScaleFactor: 1 });
  const page = await context.newPage();
  await page.goto(c.url);
  await page.fill('input[name=accessKey]', pair.accessKey);
  await page.fill('input[name=secretKey]', pair.secretKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('header.topbar');
  return page;
}

async function signedIn(pair: { accessKey: string; secretKey: string }): Promise<ConsoleClient> {
  const client = new ConsoleClient(c.url);
  expect((await client.signIn(pair.accessKey, pair.secretKey)).status).toBe(200);
  return client;
}

describe('console IAM screens in Chromium', () => {
  it('creates a sub-user, a key pair, a group and a validated policy through the screens; the Kodo IAM API sees them', async () => {
    const page = await signedInPage(alice);
    try {
      page.on('dialog', (d) => void d.accept());
      await page.click('a[href="#/iam"]');

      // A sub-user.
      await page.fill('input[name=userAlias]', 'dev-ann');
      await page.fill('input[name=userPassword]', 'correct-horse-battery');
      await page.click('text=Create sub-user');
      await page.click('[data-testid=iam-users] button:text-is("dev-ann")');
      await page.waitForSelector('[data-testid=iam-user-alias]:text-is("dev-ann")');
      const user = await iamData<{ alias: string; enabled: boolean }>(s, alice, '/iam/v1/users/dev-ann');
      expect(user).toMatchObject({ alias: 'dev-ann', enabled: true });

      // A key pair: the SecretKey shown once, then listed without it; disabled from the screen.
      await page.click('text=Create key pair');
      const ak = (await page.textContent('[data-testid=new-ak]')) ?? '';
      const sk = (await page.textContent('[data-testid=new-sk]')) ?? '';
      expect(ak).toMatch(/^[A-Za-z0-9_-]{40}$/);
      const pairs = await iamData<{ list: Array<{ access_key: string; secret_key: string; enabled: boolean }> }>(s, alice, '/iam/v1/users/dev-ann/keypairs');
      expect(pairs.list).toEqual([expect.objectContaining({ access_key: ak, secret_key: sk, enabled: true })]);
      await page.waitForSelector(`[data-testid=iam-keys] [data-ak="${ak}"]`);
      expect(await page.locator('[data-testid=iam-keys]').textContent()).not.toContain(sk);
      await page.click(`[data-testid=iam-keys] tr:has([data-ak="${ak}"]) button:text-is("Disable")`);
      await page.waitForSelector(`[data-testid=iam-keys] tr.disabled:has([data-ak="${ak}"])`);
      expect((await iamData<{ list: Array<{ enabled: boolean }> }>(s, alice, '/iam/v1/users/dev-ann/keypairs')).list[0]?.enabled).toBe(false);
      await page.screenshot({ path: `${SHOTS}iam-user.png`, fullPage: true });

      // A group with the sub-user as its member.
      await page.click('[role=tab]:text-is("Groups")');
      await page.fill('input[name=groupAlias]', 'developers');
      await page.fill('input[name=groupDescription]', 'the web team');
      await page.click('text=Create group');
      await page.click('[data-testid=iam-groups] button:text-is("developers")');
      await page.check('input[name="member:dev-ann"]');
      await page.click('[data-picker=member] button:text-is("Save")');
      await expect.poll(async () => aliasesOf(await iamData(s, alice, '/iam/v1/groups/developers/users'))).toEqual(['dev-ann']);

      // A read-only policy through the editor.
      await page.click('[role=tab]:text-is("Policies")');
      await page.click('text=New policy');
      await page.fill('input[name=policyAlias]', 'read-only');
      await page.fill('input[name=policyDescription]', 'download and list team-assets');
      for (const a of ['kodo/Get', 'kodo/List', 'kodo/Stat']) await page.selectOption('select[name=add-action-0]', a);
      // No resource: the page refuses (resource-level actions would grant nothing).
      await page.click('button[name=savePolicy]');
      await page.waitForSelector('[data-field-error="statement[0].resource"]');
      // A resource of another account's uid: the server refuses, its message shown against the resource field.
      await page.fill('textarea[name=resources-0]', 'qrn:kodo::12345:team-assets/*');
      await page.click('button[name=savePolicy]');
      await expect.poll(() => page.textContent('[data-field-error="statement[0].resource"]')).toMatch(/invalid IAM policy: statement\[0\]\.resource\[0\]: .*outside the account/);
      const refused = await s.running.g.meta.iam.getPolicy(alice.accessKey, 'read-only');
      expect(refused).toBeUndefined();
      await page.fill('textarea[name=resources-0]', 'qrn:kodo:::team-assets/*');
      await page.click('button[name=savePolicy]');
      await page.waitForSelector('h3:text-is("Policy read-only")');
      await page.screenshot({ path: `${SHOTS}iam-policy.png`, fullPage: true });
      const policy = await iamData<{ description: string; statement: unknown }>(s, alice, '/iam/v1/policies/read-only');
      expect(policy.description).toBe('download and list team-assets');
      expect(policy.statement).toEqual([{ action: ['kodo/Get', 'kodo/List', 'kodo/Stat'], resource: ['qrn:kodo:::team-assets/*'], effect: 'Allow' }]);

      // Attached to the group from the group's screen.
      await page.click('[role=tab]:text-is("Groups")');
      await page.click('[data-testid=iam-groups] button:text-is("developers")');
      await page.check('input[name="policy:read-only"]');
      await page.click('[data-picker=policy] button:text-is("Save")');
      await expect.poll(async () => aliasesOf(await iamData(s, alice, '/iam/v1/groups/developers/policies'))).toEqual(['read-only']);
      const resources = await iamData(s, alice, '/iam/v1/users/dev-ann/services/kodo/actions/Get/resources');
      expect(resources).toEqual({ allow: ['qrn:kodo:::team-assets/*'], deny: [] });

      // The audit log lists what was done.
      await page.click('[role=tab]:text-is("Audit log")');
      await page.waitForSelector('[data-testid=iam-audits] td:text-is("UpdateGroupPolicies")');
      const logged = await page.locator('[data-testid=iam-audits] tbody tr td:nth-child(2)').allTextContents();
      expect(logged).toEqual(['CreateUser', 'CreateUserKeypairs', 'DisableUserKeypair', 'CreateGroup', 'UpdateGroupUsers', 'CreatePolicy', 'UpdateGroupPolicies']);
      await page.screenshot({ path: `${SHOTS}iam-audits.png` });
    } finally {
      await page.context().close();
    }
  });

  it('the IAM screens never scroll the page sideways at 390 px', async () => {
    const page = await signedInPage(alice, 390);
    try {
      for (const [hash, ready] of [
        ['#/iam/users', '[data-testid=iam-users] tbody tr'],
        ['#/iam/users/dev-ann', '[data-testid=iam-keys]'],
        ['#/iam/groups/developers', '[data-picker=member]'],
        ['#/iam/policies/read-only', '[data-statement="0"]'],
        ['#/iam/policies/+', '[data-statement="0"]'],
        ['#/iam/audits', '[data-testid=iam-audits] tbody tr'],
      ] as const) {
        await page.goto(`${c.url}/${hash}`);
        await page.waitForSelector(ready);
        const wide = await page.evaluate<string[]>(
          "[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > 391).slice(0, 5).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))",
        );
        expect(await page.evaluate<number>('document.documentElement.scrollWidth'), `${hash}: ${wide.join(', ')}`).toBeLessThanOrEqual(390);
        if (hash === '#/iam/policies/read-only') await page.screenshot({ path: `${SHOTS}iam-policy-390.png`, fullPage: true });
      }
    } finally {
      await page.context().close();
    }
  });

  it("the root key picks an account and manages its sub-users; an account has no picker", async () => {
    const page = await signedInPage(ROOT);
    try {
      await page.click('a[href="#/iam"]');
      await page.waitForSelector('[data-testid=iam-users] tbody tr');
      expect(await page.locator('[data-testid=iam-users] button:text-is("dev-ann")').count()).toBe(0);
      await page.selectOption('select[name=iamAccount]', alice.accessKey);
      await page.click('[data-testid=iam-users] button:text-is("dev-ann")');
      await page.waitForSelector('[data-testid=iam-user-alias]:text-is("dev-ann")');
      expect(new URL(page.url()).hash).toBe(`#/iam/users/dev-ann?account=${alice.accessKey}`);
      await page.fill('input[name=newPassword]', 'a-new-password-1');
      await page.click('[data-card=password] button:text-is("Change password")');
      await page.waitForSelector('[data-testid=iam-status]:text-is("Saved.")');
      const audits = await iamData<{ list: Array<{ action: string; access_key: string }> }>(s, alice, '/iam/v1/audits?resource=user/dev-ann&action=ModifyUser');
      expect(audits.list).toEqual([expect.objectContaining({ action: 'ModifyUser', access_key: AK })]);
    } finally {
      await page.context().close();
    }
    const own = await signedInPage(alice);
    try {
      await own.click('a[href="#/iam"]');
      await own.waitForSelector('[data-testid=iam-users] tbody tr');
      expect(await own.locator('select[name=iamAccount]').count()).toBe(0);
    } finally {
      await own.context().close();
    }
  });
});

describe('console IAM API', () => {
  it('an account manages its own namespace only; the root key any account’s, audited as the root key', async () => {
    const own = await signedIn(alice);
    const root = await signedIn(ROOT);
    const list = await own.call<{ count: number; list: Array<{ alias: string }> }>('GET', '/api/iam/users');
    expect(list.status).toBe(200);
    expect(aliasesOf(list.body)).toContain('dev-ann');
    // Another account's namespace: refused to an account, open to the root key.
    expect((await own.call('GET', `/api/iam/users?account=${AK}`)).status).toBe(403);
    expect((await own.call('POST', `/api/iam/users?account=${AK}`, { alias: 'sneaky', password: 'correct-horse' })).status).toBe(403);
    expect(aliasesOf((await root.call<{ list: Array<{ alias: string }> }>('GET', `/api/iam/users?account=${alice.accessKey}`)).body)).toContain('dev-ann');
    expect(aliasesOf((await root.call<{ list: Array<{ alias: string }> }>('GET', '/api/iam/users')).body)).not.toContain('dev-ann');
    expect((await root.call('GET', '/api/iam/users?account=nobody-at-all')).status).toBe(404);

    const made = await root.call('POST', `/api/iam/users?account=${alice.accessKey}`, { alias: 'ci-bot', password: 'correct-horse' });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/users'))).toEqual(['ci-bot', 'dev-ann']);
    const audits = await iamData<{ list: Array<{ action: string; resource: string; access_key: string }> }>(s, alice, '/iam/v1/audits?resource=user/ci-bot');
    expect(audits.list).toEqual([expect.objectContaining({ action: 'CreateUser', access_key: AK })]);

    // Key pairs: the secret only in the answer that creates it.
    const key = await own.call<{ access_key: string; secret_key: string }>('POST', '/api/iam/users/ci-bot/keys');
    expect(key.body.secret_key).toMatch(/^[A-Za-z0-9_-]{40}$/);
    const detail = await own.call<{ keys: Array<Record<string, unknown>> }>('GET', '/api/iam/users/ci-bot');
    expect(detail.body.keys).toEqual([expect.objectContaining({ access_key: key.body.access_key, enabled: true })]);
    expect(JSON.stringify(detail.body)).not.toContain(key.body.secret_key);

    // Bad input names its field; unknown objects are 612.
    const bad = await own.call<{ error: string }>('POST', '/api/iam/policies', { alias: 'p1', statement: [{ action: ['kodo/Fly'], resource: ['*'], effect: 'Allow' }] });
    expect([bad.status, bad.body.error]).toEqual([400, expect.stringMatching(/statement\[0\]\.action\[0\]: unknown action "kodo\/Fly"/)]);
    expect((await own.call('PATCH', '/api/iam/users/nobody', { enabled: false })).status).toBe(612);
    expect((await own.call('PATCH', `/api/iam/users/ci-bot/keys/${key.body.access_key}`, { enabled: 'no' })).status).toBe(400);
    expect((await own.call('DELETE', '/api/iam/users/ci-bot')).status).toBe(204);
    expect((await own.call('GET', '/api/iam/users/ci-bot')).status).toBe(612);
    // Editing a policy replaces its statements; a group's description changes, its members stay.
    const edited = await own.call<{ statement: unknown }>('PATCH', '/api/iam/policies/read-only', { statement: [{ action: ['kodo/Get'], resource: ['qrn:kodo:::team-assets/public/*'], effect: 'allow' }] });
    expect([edited.status, edited.body.statement]).toEqual([200, [{ action: ['kodo/Get'], resource: ['qrn:kodo:::team-assets/public/*'], effect: 'Allow' }]]);
    expect((await own.call('PATCH', '/api/iam/groups/developers', { description: 'web and mobile' })).status).toBe(200);
    expect(await iamData(s, alice, '/iam/v1/groups/developers')).toMatchObject({ description: 'web and mobile' });
    expect(aliasesOf(await iamData(s, alice, '/iam/v1/groups/developers/users'))).toEqual(['dev-ann']);
    // The action catalogue for the editor.
    const actions = await own.call<{ list: Array<{ action: string; scope: string }> }>('GET', '/api/iam/actions');
    expect(actions.body.list).toEqual(expect.arrayContaining([{ action: 'kodo/Get', description: 'download a file', scope: 'resource' }, expect.objectContaining({ action: 'kodo/Mkbucket', scope: 'service' })]));
  });
});
