/**
 * The web console (src/console, console/): its JSON API driven over HTTP with a cookie jar, and its pages in Debian's
 * Chromium (playwright-core). The scenario: sign-in (a wrong secret refused), create a bucket, upload a real
 * photo through the file input, see its thumbnail, open the preview, rename it, make a private link that downloads,
 * delete it. Isolation: an account sees neither another account's bucket in the pages nor through the API. Sessions:
 * the cookie is HttpOnly/SameSite=Strict, refused after sign-out (replay), after the idle timeout and when two
 * session cookies come; X-Forwarded-* are ignored with no proxy configured; CSRF: a call without the token or from a
 * foreign Origin is refused. Missing app files answer 404. Sessions shared by workers and nodes:
 * console-shared.test.ts. Screenshots of the main screens go to a temp dir, or to
 * docs/screenshots/ with GRANARY_UPDATE_SCREENSHOTS=1 (a test run leaves the work tree as it was).
 */
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { KeyPair } from '../../src/auth/keys.js';
import { launchChromium, recordExchanges, testContent } from '../helpers/browser.js';
import { ConsoleClient, ensureConsoleBuilt, startConsole, type ConsoleServer } from '../helpers/console.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { signedFetch } from '../helpers/http.js';
import { put } from '../helpers/rs.js';
import { expectStored, FIXTURE_IMAGES } from '../helpers/upload.js';

const UPDATE_SHOTS = process.env.GRANARY_UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE_SHOTS
  ? new URL('../../docs/screenshots/', import.meta.url).pathname
  : `${mkdtempSync(join(tmpdir(), 'granary-console-shots-'))}/`;
const PHOTO = join(FIXTURE_IMAGES, 'mobile_jolla.jpg');
const VIDEO = join(FIXTURE_IMAGES, '../video/big_buck_bunny.mp4');

let s: TestServer;
let c: ConsoleServer;
let browser: Browser;
let alice: KeyPair;
let bob: KeyPair;

beforeAll(async () => {
  ensureConsoleBuilt();
  [s, browser] = await Promise.all([startTestServer({ GRANARY_CONSOLE_SESSION_MINUTES: '30' }), launchChromium()]);
  c = await startConsole(s);
  alice = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
  bob = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
});

afterAll(async () => {
  if (!UPDATE_SHOTS) await rm(SHOTS, { recursive: true, force: true });
  await browser?.close();
  await c?.close();
  await s?.stop();
});

async function signedIn(pair: { accessKey: string; secretKey: string }): Promise<ConsoleClient> {
  const client = new ConsoleClient(c.url);
  const a = await client.signIn(pair.accessKey, pair.secretKey);
  expect(a.status).toBe(200);
  return client;
}

/** Creates `name` for `pair`'s account unless it exists. */
async function ensureBucket(pair: { accessKey: string; secretKey: string }, name: string): Promise<void> {
  const a = await (await signedIn(pair)).call('POST', '/api/buckets', { name });
  expect([200, 614]).toContain(a.status);
}

describe('console API', () => {
  it('refuses a wrong secret and an unknown AccessKey, and sets an HttpOnly SameSite=Strict cookie on sign-in', async () => {
    const client = new ConsoleClient(c.url);
    const wrong = await client.signIn(AK, `${SK}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toMatch(/wrong AccessKey or SecretKey/);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect((await client.signIn('nobody', SK)).status).toBe(401);

    const ok = await client.signIn(AK, SK);
    expect(ok.status).toBe(200);
    expect(ok.body.root).toBe(true);
    const cookie = ok.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^granary_console=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(JSON.stringify(ok.body)).not.toContain(SK);
    expect((await client.call('GET', '/api/session')).status).toBe(200);
    expect((await new ConsoleClient(c.url).call('GET', '/api/buckets')).status).toBe(401);

    // The app's page: served by the console itself, no inline scripts allowed, never framed.
    const page = await fetch(`${c.url}/buckets/deep/link`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root"></div>');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    // A file the app does not have is a 404 (not the page); its real assets are served.
    for (const missing of ['/assets/missing.js', '/assets/x', '/missing.css', '/deep/path/logo.png']) {
      const res = await fetch(`${c.url}${missing}`);
      expect(res.status, missing).toBe(404);
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
    const script = /src="\.?(\/assets\/[^"]+\.js)"/.exec(await (await fetch(`${c.url}/`)).text())?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`${c.url}${script}`)).status).toBe(200);
  });

  it('throttles repeated failed sign-ins for one AccessKey (573) until a minute has passed', async () => {
    const pair = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
    const client = new ConsoleClient(c.url);
    for (let i = 0; i < 10; i++) expect((await client.signIn(pair.accessKey, 'guess')).status).toBe(401);
    const throttled = await client.signIn(pair.accessKey, pair.secretKey);
    expect(throttled.status).toBe(573);
    expect(throttled.body.error).toMatch(/too many failed sign-ins/);
    // Without GRANARY_TRUST_PROXY a forged X-Forwarded-For does not make another client of the same address.
    const forged = await client.call('POST', '/api/session', { accessKey: pair.accessKey, secretKey: pair.secretKey }, { headers: { 'x-forwarded-for': '203.0.113.5' } });
    expect(forged.status).toBe(573);
    expect((await client.signIn(AK, SK)).status).toBe(200); // other AccessKeys are not affected
    s.clock.advance(61);
    expect((await client.signIn(pair.accessKey, pair.secretKey)).status).toBe(200);
  });

  it('refuses a change without the CSRF token, with a wrong one, or from a foreign Origin', async () => {
    const client = await signedIn({ accessKey: AK, secretKey: SK });
    const noToken = await client.call('POST', '/api/buckets', { name: 'csrf-a' }, { csrf: false });
    expect(noToken.status).toBe(403);
    expect((noToken.body as { error: string }).error).toMatch(/CSRF/);
    const saved = client.csrf;
    client.csrf = 'forged';
    expect((await client.call('POST', '/api/buckets', { name: 'csrf-a' })).status).toBe(403);
    client.csrf = saved;
    const foreign = await client.call('POST', '/api/buckets', { name: 'csrf-a' }, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    const crossSite = await client.call('POST', '/api/buckets', { name: 'csrf-a' }, { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect((await client.call('GET', '/api/buckets')).body).not.toContainEqual(expect.objectContaining({ name: 'csrf-a' }));
    // A sign-in posted from another site is refused too (login CSRF).
    expect((await new ConsoleClient(c.url).call('POST', '/api/session', { accessKey: AK, secretKey: SK }, { origin: 'http://evil.example' })).status).toBe(403);
    const same = await client.call('POST', '/api/buckets', { name: 'csrf-a' }, { origin: c.url });
    expect(same.status).toBe(200);
  });

  it('refuses a request carrying two session cookies, and ignores X-Forwarded-Proto/-Host with no proxy configured', async () => {
    const client = await signedIn({ accessKey: AK, secretKey: SK });
    const other = await signedIn(alice);
    // What a page on another port of this host could plant: a second cookie of the same name with a narrower Path.
    const both = `${other.cookie}; ${client.cookie}`;
    for (const [method, path] of [['GET', '/api/session'], ['GET', '/api/buckets'], ['POST', '/api/buckets']] as const) {
      const a = await client.call<{ error: string }>(method, path, method === 'POST' ? { name: 'two-cookies' } : undefined, { cookie: both });
      expect(a.status, `${method} ${path}`).toBe(400);
      expect(a.body.error).toMatch(/more than one console session cookie/);
    }
    expect((await client.call('GET', '/api/session')).status).toBe(200);

    // No GRANARY_TRUST_PROXY: a request claiming https through X-Forwarded-Proto gets the http cookie, and an Origin
    // matching only the forwarded host and scheme is foreign.
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'console.example' };
    const plain = await new ConsoleClient(c.url).call('POST', '/api/session', { accessKey: AK, secretKey: SK }, { headers: forwarded });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('set-cookie')).toMatch(/^granary_console=/);
    expect(plain.headers.get('set-cookie')).not.toMatch(/Secure/i);
    const spoofed = await client.call('POST', '/api/buckets', { name: 'spoofed-origin' }, { origin: 'https://console.example', headers: forwarded });
    expect(spoofed.status).toBe(403);
  });

  it('refuses the session cookie after sign-out (no replay) and after the idle timeout', async () => {
    const client = await signedIn({ accessKey: AK, secretKey: SK });
    const { cookie, csrf } = client;
    expect((await client.call('DELETE', '/api/session')).status).toBe(204);
    const replay = new ConsoleClient(c.url);
    replay.csrf = csrf;
    expect((await replay.call('GET', '/api/buckets', undefined, { cookie })).status).toBe(401);
    expect((await replay.call('POST', '/api/buckets', { name: 'replayed' }, { cookie })).status).toBe(401);
    // Not signed in is the page's normal first state: 200 {signedIn: false}, no error for the browser to log.
    const after = await replay.call('GET', '/api/session', undefined, { cookie });
    expect(after.status).toBe(200);
    expect(after.body).toEqual({ signedIn: false });

    const idle = await signedIn({ accessKey: AK, secretKey: SK });
    const offset = s.clock.offsetMs;
    onTestFinished(() => {
      s.clock.offsetMs = offset; // upload tokens signed by the SDK use the real time
    });
    s.clock.advance(29 * 60);
    expect((await idle.call('GET', '/api/buckets')).status).toBe(200); // renews the session
    s.clock.advance(29 * 60);
    expect((await idle.call('GET', '/api/buckets')).status).toBe(200);
    s.clock.advance(31 * 60);
    const expired = await idle.call<{ error: string }>('GET', '/api/buckets');
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatch(/sign in again/);
  });

  it("keeps an account out of another account's bucket", async () => {
    const a = await signedIn(alice);
    const b = await signedIn(bob);
    expect((await a.call('POST', '/api/buckets', { name: 'alice-only' })).status).toBe(200);
    const bobs = await b.call<Array<{ name: string }>>('GET', '/api/buckets');
    expect(bobs.body.map((x) => x.name)).not.toContain('alice-only');
    expect((await a.call<Array<{ name: string }>>('GET', '/api/buckets')).body.map((x) => x.name)).toEqual(['alice-only']);
    for (const [method, path, body] of [
      ['GET', '/api/buckets/alice-only', undefined],
      ['GET', '/api/buckets/alice-only/objects', undefined],
      ['GET', '/api/buckets/alice-only/stat?key=x', undefined],
      ['POST', '/api/buckets/alice-only/upload-token', {}],
      ['POST', '/api/buckets/alice-only/link', { key: 'x', expires: 60 }],
      ['POST', '/api/buckets/alice-only/ops/delete', { key: 'x' }],
      ['PUT', '/api/buckets/alice-only/settings/private', { private: false }],
      ['DELETE', '/api/buckets/alice-only', undefined],
    ] as const) {
      const answer = await b.call<{ error: string }>(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(403);
    }
    // A copy into another account's bucket is refused too (the target is authorised as well).
    expect((await b.call('POST', '/api/buckets', { name: 'bob-own' })).status).toBe(200);
    expect((await b.call('POST', '/api/buckets/bob-own/ops/copy', { key: 'x', toBucket: 'alice-only', toKey: 'y' })).status).toBe(403);
    // Accounts do not reach the Keys screen's API; the root key sees every bucket.
    expect((await b.call('GET', '/api/keys')).status).toBe(403);
    const root = await signedIn({ accessKey: AK, secretKey: SK });
    expect((await root.call<Array<{ name: string }>>('GET', '/api/buckets')).body.map((x) => x.name)).toEqual(expect.arrayContaining(['alice-only', 'bob-own']));
  });
});

describe('console API: settings and processing', () => {
  it('changes bucket settings through the domain functions and refuses bad ones with the Kodo status', async () => {
    const root = await signedIn({ accessKey: AK, secretKey: SK });
    expect((await root.call('POST', '/api/buckets', { name: 'settings-b' })).status).toBe(200);
    expect((await root.call('POST', '/api/buckets', { name: 'settings-b' })).status).toBe(614);
    expect((await root.call('POST', '/api/buckets', { name: 'no' })).status).toBe(400);
    const changes: Array<[string, unknown]> = [
      ['private', { private: true }],
      ['maxAge', { maxAge: 600 }],
      ['referer', { mode: 1, pattern: '*.example.com', norefer: 1, sourceEnabled: 0 }],
      ['cors', { rules: [{ allowed_origin: ['https://a.example'], allowed_method: ['GET'] }] }],
      ['quota', { size: 1048576, count: -1 }],
      ['protection', { on: true }],
      ['nrop', { enabled: true }],
      ['source', { url: 'https://origin.example.com' }],
      ['separator', { separator: '!' }],
    ];
    for (const [name, body] of changes) {
      const a = await root.call('PUT', `/api/buckets/settings-b/settings/${name}`, body);
      expect(a.status, `${name}: ${JSON.stringify(a.body)}`).toBe(204);
    }
    expect((await root.call('PUT', '/api/buckets/settings-b/styles/small', { pipeline: 'imageView2/2/w/100' })).status).toBe(204);
    expect((await root.call('POST', '/api/buckets/settings-b/rules', { name: 'tmp', prefix: 'tmp/', delete_after_days: 7 })).status).toBe(204);
    const ev = await root.call('POST', '/api/buckets/settings-b/events', { name: 'hook', events: ['put', 'delete'], callbackUrls: ['https://hooks.example.com/x'] });
    expect(ev.status, JSON.stringify(ev.body)).toBe(204);

    const d = await root.call<Record<string, unknown> & { info: Record<string, unknown> }>('GET', '/api/buckets/settings-b');
    expect(d.status).toBe(200);
    expect(d.body.info).toMatchObject({ private: 1, max_age: 600, anti_leech_mode: 1, refer_wl: ['*.example.com'], protected: 1, nrop: true, source: 'https://origin.example.com', separator: '!', styles: { small: 'imageView2/2/w/100' } });
    expect(d.body.quota).toEqual({ size: 1048576, count: -1 });
    expect(d.body.cors).toEqual([{ allowed_origin: ['https://a.example'], allowed_method: ['GET'] }]);
    expect(d.body.rules).toEqual([expect.objectContaining({ name: 'tmp', prefix: 'tmp/', delete_after_days: 7 })]);
    expect(d.body.events).toEqual([expect.objectContaining({ name: 'hook', events: ['put', 'delete'] })]);
    // The same settings as the Kodo API reports them (one store, one set of domain functions).
    const info = await signedFetch(s, { method: 'GET', path: '/v2/bucketInfo?bucket=settings-b' });
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({ private: 1, max_age: 600 });

    const bad: Array<[string, unknown, number]> = [
      ['maxAge', { maxAge: 'soon' }, 400],
      ['referer', { mode: 7 }, 400],
      ['cors', { rules: 'all' }, 400],
      ['quota', { size: -5, count: 0 }, 400],
      ['private', { private: 'yes' }, 400],
      ['nonsense', {}, 400],
    ];
    for (const [name, body, status] of bad) {
      const a = await root.call<{ error: string }>('PUT', `/api/buckets/settings-b/settings/${name}`, body);
      expect(a.status, name).toBe(status);
      expect(a.body.error, name).toEqual(expect.any(String));
    }
    expect((await root.call('PUT', '/api/buckets/missing-b/settings/private', { private: true })).status).toBe(631);
    expect((await root.call('DELETE', '/api/buckets/settings-b/rules/nope')).status).toBe(612);
    const notJson = await fetch(`${c.url}/api/buckets`, { method: 'POST', headers: { cookie: root.cookie, 'x-granary-csrf': root.csrf, 'content-type': 'application/json' }, body: '{' });
    expect(notJson.status).toBe(400);
    expect((await root.call('GET', '/api/nothing-here')).status).toBe(404);
  });

  it('submits and lists pfop jobs and fetch tasks, each account seeing only its own', async () => {
    const a = await signedIn(alice);
    const b = await signedIn(bob);
    expect((await a.call('POST', '/api/buckets', { name: 'alice-jobs' })).status).toBe(200);
    await put(s, 'alice-jobs', 'p.jpg', await readFile(PHOTO), { mimeType: 'image/jpeg' });
    const sub = await a.call<{ persistentId: string }>('POST', '/api/jobs', { bucket: 'alice-jobs', key: 'p.jpg', fops: 'imageView2/2/w/64' });
    expect(sub.status, JSON.stringify(sub.body)).toBe(200);
    const id = sub.body.persistentId;
    await expect.poll(async () => (await a.call<{ code: number }>('GET', `/api/jobs/${id}`)).body.code, { timeout: 20_000 }).toBe(0);
    const done = await a.call<{ items: Array<{ code: number; key: string }>; state: string }>('GET', `/api/jobs/${id}`);
    expect(done.body.state).toBe('done');
    expect(done.body.items).toEqual([expect.objectContaining({ code: 0, key: expect.any(String) })]);
    const listed = await a.call<{ jobs: Array<{ id: string }> }>('GET', '/api/jobs?code=0');
    expect(listed.body.jobs.map((j) => j.id)).toEqual([id]);
    expect((await a.call<{ jobs: unknown[] }>('GET', '/api/jobs?code=3')).body.jobs).toEqual([]);
    expect((await a.call<{ jobs: unknown[] }>('GET', '/api/jobs?pipeline=other')).body.jobs).toEqual([]);
    expect((await b.call<{ jobs: unknown[] }>('GET', '/api/jobs')).body.jobs).toEqual([]);
    expect((await b.call('GET', `/api/jobs/${id}`)).status).toBe(612);
    expect((await b.call('POST', '/api/jobs', { bucket: 'alice-jobs', key: 'p.jpg', fops: 'imageInfo' })).status).toBe(403);
    expect((await a.call('GET', '/api/jobs?code=9')).status).toBe(400);

    // An async fetch of a loopback URL is refused by the outbound guard when it runs; it is listed with its error.
    const f = await a.call<{ id: string }>('POST', '/api/fetch-tasks', { url: 'http://127.0.0.1:9/x.jpg', bucket: 'alice-jobs', key: 'x.jpg' });
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    await expect.poll(async () => (await a.call<{ state: string }>('GET', `/api/fetch-tasks/${f.body.id}`)).body.state, { timeout: 20_000 }).toBe('failed');
    const tasks = await a.call<{ tasks: Array<{ id: string; state: string; result: { code: number } }> }>('GET', '/api/fetch-tasks');
    expect(tasks.body.tasks).toEqual([expect.objectContaining({ id: f.body.id, state: 'failed', result: expect.objectContaining({ code: 403 }) })]);
    expect((await b.call<{ tasks: unknown[] }>('GET', '/api/fetch-tasks')).body.tasks).toEqual([]);
    expect((await b.call('GET', `/api/fetch-tasks/${f.body.id}`)).status).toBe(612);

    // Pipelines: everyone lists them, only the root key changes them.
    expect((await a.call<Array<{ name: string }>>('GET', '/api/pipelines')).body.map((p) => p.name)).toContain('0.default');
    const refused = await a.call<{ error: string }>('PUT', '/api/pipelines/fast', { concurrency: 3 });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden: only the root key may change pipelines');
    const root = await signedIn({ accessKey: AK, secretKey: SK });
    expect((await root.call('PUT', '/api/pipelines/fast', { concurrency: 3 })).status).toBe(200);
    // Workflow templates belong to their account.
    expect((await a.call('PUT', '/api/workflows/thumbs', { fops: 'imageView2/2/w/32' })).status).toBe(200);
    expect((await a.call<Array<{ name: string }>>('GET', '/api/workflows')).body.map((w) => w.name)).toEqual(['thumbs']);
    expect((await b.call<unknown[]>('GET', '/api/workflows')).body).toEqual([]);
    expect((await b.call('DELETE', '/api/workflows/thumbs')).status).toBe(612);
  });

  it('creates and deletes account key pairs (root only); a deleted pair is signed out at once', async () => {
    const root = await signedIn({ accessKey: AK, secretKey: SK });
    const made = await root.call<{ accessKey: string; secretKey: string }>('POST', '/api/keys');
    expect(made.status).toBe(200);
    const carol = await signedIn(made.body);
    expect((await carol.call('GET', '/api/buckets')).status).toBe(200);
    const keys = await root.call<{ accounts: Array<{ accessKey: string }> }>('GET', '/api/keys');
    expect(keys.body.accounts.map((k) => k.accessKey)).toContain(made.body.accessKey);
    expect(JSON.stringify(keys.body)).not.toContain(made.body.secretKey);
    const refused = await carol.call<{ error: string }>('POST', '/api/keys');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden: only the root key may manage key pairs');
    expect((await root.call('DELETE', `/api/keys/${made.body.accessKey}`)).status).toBe(204);
    expect((await carol.call('GET', '/api/buckets')).status).toBe(401);
    expect((await new ConsoleClient(c.url).signIn(made.body.accessKey, made.body.secretKey)).status).toBe(401);
  });
});

/** A fresh browser page with the console open. */
async function openConsole(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  const page = await context.newPage();
  await page.goto(c.url);
  return page;
}

/** `naturalWidth` of a loaded image (0 while loading or broken). */
const loadedWidth = (img: Locator): Promise<number> =>
  img.evaluate((el) => {
    const i = el as unknown as { complete: boolean; naturalWidth: number };
    return i.complete ? i.naturalWidth : 0;
  });

async function signInPage(page: Page, pair: { accessKey: string; secretKey: string }): Promise<void> {
  await page.fill('input[name=accessKey]', pair.accessKey);
  await page.fill('input[name=secretKey]', pair.secretKey);
  await page.click('button[type=submit]');
}

describe('console pages in Chromium', () => {
  it('signs in, creates a bucket, uploads a photo, shows its thumbnail and preview, renames it, links it privately, deletes it', async () => {
    const photo = await readFile(PHOTO);
    const page = await openConsole();
    try {
      await page.screenshot({ path: `${SHOTS}sign-in.png` });
      await signInPage(page, { accessKey: AK, secretKey: 'wrong-secret' });
      await expect.poll(() => page.textContent('[role=alert]')).toMatch(/wrong AccessKey or SecretKey/);
      await signInPage(page, { accessKey: AK, secretKey: SK });
      await page.waitForSelector('header.topbar');

      await page.click('a[href="#/buckets"]');
      await page.fill('input[name=bucketName]', 'photos');
      await page.click('text=Create bucket');
      await page.waitForSelector('tr[data-bucket=photos]');
      await page.screenshot({ path: `${SHOTS}buckets.png` });

      // Make it private on its settings screen.
      await page.click('tr[data-bucket=photos] >> text=Settings');
      await page.click('input[name=private]');
      await page.waitForSelector('input[name=private]:checked');
      expect((await s.running.g.meta.getBucket('photos'))?.private).toBe(true);
      await page.screenshot({ path: `${SHOTS}bucket-settings.png`, fullPage: true });

      await page.click('a[href="#/buckets"]');
      await page.click('tr[data-bucket=photos] >> text=Files');
      await page.setInputFiles('[data-testid=upload-input]', PHOTO);
      await page.waitForSelector('li.done[data-upload="mobile_jolla.jpg"]');
      const thumb = page.locator('tr[data-key="mobile_jolla.jpg"] td.thumb img');
      await expect.poll(() => loadedWidth(thumb)).toBe(96);
      // The bucket is private: the thumbnail is an imageView2 URL signed for the page.
      expect(await thumb.getAttribute('src')).toMatch(/\/photos\/mobile_jolla\.jpg\?imageView2\/1\/w\/96\/h\/96&e=\d+&token=/);
      await page.screenshot({ path: `${SHOTS}files.png` });
      expect((await fetch(`${s.url}/photos/mobile_jolla.jpg`)).status).toBe(401);

      await page.click('tr[data-key="mobile_jolla.jpg"] button.key');
      const preview = page.locator('[data-testid=preview-image]');
      await expect.poll(() => loadedWidth(preview)).toBeGreaterThan(96);
      await page.screenshot({ path: `${SHOTS}object.png` });

      // The fop URL builder previews the pipeline as it is typed (signed: the bucket is private).
      await page.fill('[data-testid=fop-input]', 'imageView2/2/w/50');
      await expect.poll(() => loadedWidth(page.locator('[data-testid=fop-image]'))).toBe(50);

      await page.fill('input[name=newKey]', 'trip/jolla.jpg');
      await page.click('[data-testid=rename]');
      await page.waitForSelector('h3.key-title:text-is("trip/jolla.jpg")');

      await page.click('[data-testid=make-link]');
      const link = await page.locator('[data-testid=private-link]').getAttribute('href');
      expect(link).toMatch(/\/photos\/trip\/jolla\.jpg\?e=\d+&token=/);
      const res = await fetch(link!);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(photo)).toBe(true);

      page.once('dialog', (d) => void d.accept());
      await page.click('[data-testid=delete-object]');
      await page.waitForSelector('aside.panel', { state: 'detached' });
      await page.waitForSelector('tr[data-key="trip/jolla.jpg"]', { state: 'detached' });
      expect((await fetch(link!)).status).toBe(404);
      expect(await s.running.g.meta.getObject('photos', 'trip/jolla.jpg')).toBeUndefined();
    } finally {
      await page.context().close();
    }
  });

  it("does not show another account's bucket", async () => {
    await ensureBucket(alice, 'alice-only');
    await ensureBucket(bob, 'bob-own');
    const page = await openConsole();
    try {
      await signInPage(page, bob);
      await page.click('a[href="#/buckets"]');
      await page.waitForSelector('tr[data-bucket=bob-own]');
      expect(await page.locator('tr[data-bucket=alice-only]').count()).toBe(0);
      expect(await page.locator('a[href="#/keys"]').count()).toBe(0);
    } finally {
      await page.context().close();
    }
  });

  it('shows the overview, processing and keys screens, in English and in Chinese', async () => {
    // A finished job of its own for the processing screen.
    const root = await signedIn({ accessKey: AK, secretKey: SK });
    await ensureBucket({ accessKey: AK, secretKey: SK }, 'screens');
    await put(s, 'screens', 'camera.jpg', await readFile(join(FIXTURE_IMAGES, 'Canon_40D.jpg')), { mimeType: 'image/jpeg' });
    const job = await root.call<{ persistentId: string }>('POST', '/api/jobs', { bucket: 'screens', key: 'camera.jpg', fops: 'imageView2/2/w/64' });
    await expect.poll(async () => (await root.call<{ code: number }>('GET', `/api/jobs/${job.body.persistentId}`)).body.code, { timeout: 20_000 }).toBe(0);
    const page = await openConsole();
    try {
      await signInPage(page, { accessKey: AK, secretKey: SK });
      await page.waitForSelector('.cards .card.stat');
      if ('metrics' in s.running.g) {
        // Request and error counts come from the metrics' request counter (this listener's own calls count too).
        expect(await page.textContent('[data-testid=request-rates]')).toMatch(/[1-9]\d* requests since the start/);
      }
      await page.screenshot({ path: `${SHOTS}overview.png`, fullPage: true });
      await page.click('a[href="#/processing"]');
      await page.click(`tr[data-job="${job.body.persistentId}"] button`);
      await page.waitForSelector('td:text-is("imageView2/2/w/64")');
      await page.screenshot({ path: `${SHOTS}processing.png` });
      await page.click('a[href="#/keys"]');
      await page.click('text=Create account key pair');
      await page.waitForSelector('[data-testid=new-sk]');
      await page.screenshot({ path: `${SHOTS}keys.png` });
      await page.selectOption('select.lang', 'zh');
      await page.waitForSelector('a[href="#/buckets"]:text-is("空间管理")');
      expect(await page.getAttribute('html', 'lang')).toBe('zh-CN');
    } finally {
      await page.context().close();
    }
    // A browser that prefers Chinese starts in Chinese.
    const context = await browser.newContext({ locale: 'zh-CN' });
    try {
      const zh = await context.newPage();
      await zh.goto(c.url);
      await zh.waitForSelector('button[type=submit]:text-is("登录")');
    } finally {
      await context.close();
    }
  });

  it('previews JSON pretty-printed, text as it is, and video with a vframe poster', async () => {
    await ensureBucket(alice, 'alice-files');
    await put(s, 'alice-files', 'conf/settings.json', '{"a":1,"b":[true,null]}', { mimeType: 'application/json' });
    await put(s, 'alice-files', 'conf/readme.txt', 'hello 你好', { mimeType: 'text/plain' });
    await put(s, 'alice-files', 'media/bunny.mp4', await readFile(VIDEO), { mimeType: 'video/mp4' });
    const page = await openConsole();
    try {
      await signInPage(page, alice);
      await page.waitForSelector('header.topbar');
      await page.goto(`${c.url}/#/files/alice-files?prefix=conf%2F`);
      await page.click('tr[data-key="conf/settings.json"] button.key');
      await expect.poll(() => page.textContent('pre.text-preview')).toBe('{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}');
      await page.click('[aria-label=Close]');
      await page.click('tr[data-key="conf/readme.txt"] button.key');
      await expect.poll(() => page.textContent('pre.text-preview')).toBe('hello 你好');

      // A video: its thumbnail and the player's poster are vframe frames.
      await page.goto(`${c.url}/#/files/alice-files?prefix=media%2F`);
      const thumb = page.locator('tr[data-key="media/bunny.mp4"] td.thumb img');
      await expect.poll(() => loadedWidth(thumb), { timeout: 20_000 }).toBe(96);
      await page.click('tr[data-key="media/bunny.mp4"] button.key');
      // A 640 px frame at 3 s (past the dark fade-in), not the 96 px thumbnail: console-polish.test.ts looks at it.
      await expect.poll(() => page.locator('video.preview').getAttribute('poster'), { timeout: 20_000 }).toMatch(/\/alice-files\/media\/bunny\.mp4\?vframe\/jpg\/offset\/3\/w\/640$/);
    } finally {
      await page.context().close();
    }
  });

  it('uploads a dropped file, and a file over 4 MiB in parts (resumable), each with its progress', async () => {
    await ensureBucket(alice, 'alice-files');
    const big = testContent(4 * 1024 * 1024 + 1029, 0xbeef);
    const page = await openConsole();
    const rec = recordExchanges(s);
    try {
      await signInPage(page, alice);
      await page.waitForSelector('header.topbar');
      await page.goto(`${c.url}/#/files/alice-files`);
      await page.waitForSelector('.dropzone');
      const dropped = await page.evaluateHandle(`(() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['dropped bytes'], 'dropped.txt', { type: 'text/plain' }));
        return dt;
      })()`);
      await page.dispatchEvent('section.files', 'drop', { dataTransfer: dropped });
      await page.waitForSelector('li.done[data-upload="dropped.txt"]');
      await page.setInputFiles('[data-testid=upload-input]', { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big });
      await page.waitForSelector('li.done[data-upload="big.bin"]', { timeout: 30_000 });
    } finally {
      rec.stop();
      await page.context().close();
    }
    await expectStored(s, 'alice-files', 'dropped.txt', Buffer.from('dropped bytes'));
    await expectStored(s, 'alice-files', 'big.bin', big);
    // The big file went up as a multipart v2 upload in 4 MiB parts, not as one form upload.
    const parts = rec.exchanges.filter((e) => e.method === 'PUT' && /\/uploads\/[^/]+\/\d+$/.test(e.url));
    expect(parts.map((e) => e.status)).toEqual([200, 200]);
  });
});
