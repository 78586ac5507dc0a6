/**
 * The web console (src/console, console/): its JSON API driven over HTTP with a cookie jar, and its pages in Debian's
 * Chromium (playwright-core). The scenario: sign-in (a wrong secret refused), create a bucket, upload a real
 * photo through the file input, see its thumbnail, open the preview, rename it, make a private link that downloads,
 * delete it. Isolation: an account sees neither another account's bucket in the pages nor through the API. Sessions:
 * the cookie is HttpOnly/SameSite=Strict, refused after sign-out (replay) and after the idle timeout; CSRF: a call
 * without the token or from a foreign Origin is refused. Screenshots of the main screens go to docs/screenshots/.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPair } from '../../src/auth/keys.js';
import { launchChromium } from '../helpers/browser.js';
import { ConsoleClient, ensureConsoleBuilt, startConsole, type ConsoleServer } from '../helpers/console.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';

const SHOTS = new URL('../../docs/screenshots/', import.meta.url).pathname;
const PHOTO = join(FIXTURE_IMAGES, 'mobile_jolla.jpg');

let s: TestServer;
let c: ConsoleServer;
let browser: Browser;
let alice: KeyPair;
let bob: KeyPair;

beforeAll(async () => {
  ensureConsoleBuilt();
  [s, browser] = await Promise.all([startTestServer({ GRANARY_CONSOLE_SESSION_MINUTES: '30' }), launchChromium()]);
  c = await startConsole(s);
  alice = await s.running.g.keyIndex.create(1);
  bob = await s.running.g.keyIndex.create(1);
});

afterAll(async () => {
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
    expect((await client.call('GET', '/api/buckets')).body).not.toContainEqual(expect.objectContaining({ name: 'csrf-a' }));
    // A sign-in posted from another site is refused too (login CSRF).
    expect((await new ConsoleClient(c.url).call('POST', '/api/session', { accessKey: AK, secretKey: SK }, { origin: 'http://evil.example' })).status).toBe(403);
    const same = await client.call('POST', '/api/buckets', { name: 'csrf-a' }, { origin: c.url });
    expect(same.status).toBe(200);
  });

  it('refuses the session cookie after sign-out (no replay) and after the idle timeout', async () => {
    const client = await signedIn({ accessKey: AK, secretKey: SK });
    const { cookie, csrf } = client;
    expect((await client.call('DELETE', '/api/session')).status).toBe(204);
    const replay = new ConsoleClient(c.url);
    replay.csrf = csrf;
    expect((await replay.call('GET', '/api/buckets', undefined, { cookie })).status).toBe(401);
    expect((await replay.call('POST', '/api/buckets', { name: 'replayed' }, { cookie })).status).toBe(401);
    expect((await replay.call('GET', '/api/session', undefined, { cookie })).status).toBe(401);

    const idle = await signedIn({ accessKey: AK, secretKey: SK });
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

/** A fresh browser page with the console open. */
async function openConsole(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  const page = await context.newPage();
  await page.goto(c.url);
  return page;
}

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

      await page.click('tr[data-bucket=photos] >> text=Files');
      await page.setInputFiles('[data-testid=upload-input]', PHOTO);
      await page.waitForSelector('li.done[data-upload="mobile_jolla.jpg"]');
      const thumb = page.locator('tr[data-key="mobile_jolla.jpg"] td.thumb img');
      await expect.poll(() => thumb.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(96);
      await page.screenshot({ path: `${SHOTS}files.png` });

      await page.click('tr[data-key="mobile_jolla.jpg"] button.key');
      const preview = page.locator('[data-testid=preview-image]');
      await expect.poll(() => preview.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(96);
      await page.screenshot({ path: `${SHOTS}object.png` });

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
      const gone = await fetch(`${s.url}/photos/trip/jolla.jpg`);
      expect(gone.status).toBe(404);
    } finally {
      await page.context().close();
    }
  });

  it("does not show another account's bucket", async () => {
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
});
