/**
 * The web console's rough edges, fixed, seen in Chromium (playwright-core with Debian's chromium):
 * - the Overview's graphs (requests and errors, bytes, latency, storage per bucket) drawn from the history Granary
 *   keeps itself (src/console/history.ts; GRANARY_CONSOLE_SAMPLE_SECONDS=1 here), and `GET /api/history` answering
 *   it after some load; screenshots in English and Chinese (docs/screenshots/ with GRANARY_UPDATE_SCREENSHOTS=1,
 *   after a minute of load, else a temp dir after a few seconds);
 * - no 401 (nor any error) in the browser console when the page loads signed out (`GET /api/session` answers 200
 *   `{signedIn: false}`);
 * - a HEIC photo's preview loads (a JPEG made by imageView2), a video's poster is a 640 px frame that is not dark,
 *   the fop builder starts with a vframe pipeline for a video (and its preview loads);
 * - a CORS rule set that is not JSON is reported in the CORS card; the style form empties after Add;
 * - the pfop form proposes a saveas; a job's status reads in words and its result key is a link;
 * - the SecretKey of a new key pair has a copy button that copies it;
 * - in Chinese: the Keys table's bucket column, hash, persistentId and event names, dates in zh-CN;
 * - versions: the bucket's versioning enabled in its settings; an object's versions listed (size, date, current),
 *   an old one downloaded, restored (copied onto the key as current) and deleted for good;
 * - at 390 px wide (a phone): no screen scrolls the page sideways, a long key reads in words, SVG icons.
 */
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { ConsoleClient, ensureConsoleBuilt, startConsole, type ConsoleServer } from '../helpers/console.js';
import { put } from '../helpers/rs.js';
import { AK, SK, startTestServer, type TestServer } from '../helpers/server.js';
import { FIXTURE_IMAGES } from '../helpers/upload.js';

const UPDATE_SHOTS = process.env.GRANARY_UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE_SHOTS ? new URL('../../docs/screenshots/', import.meta.url).pathname : `${mkdtempSync(join(tmpdir(), 'granary-console-shots-'))}/`;
/** Load driven before the Overview is read: a minute for the documentation's screenshots, a few seconds otherwise. */
const LOAD_MS = UPDATE_SHOTS ? 60_000 : 5_000;
const HEIC = join(FIXTURE_IMAGES, 'heic_samplefilehub.heif'); // 640×426: one quick heif-convert
const VIDEO = join(FIXTURE_IMAGES, '../video/big_buck_bunny.mp4');

let s: TestServer;
let c: ConsoleServer;
let browser: Browser;
let root: ConsoleClient;

beforeAll(async () => {
  ensureConsoleBuilt();
  [s, browser] = await Promise.all([startTestServer({ GRANARY_CONSOLE_SAMPLE_SECONDS: '1' }), launchChromium()]);
  c = await startConsole(s);
  root = new ConsoleClient(c.url);
  expect((await root.signIn(AK, SK)).status).toBe(200);
  for (const name of ['photos', 'media']) expect((await root.call('POST', '/api/buckets', { name })).status).toBe(200);
  await Promise.all([
    put(s, 'media', 'photo.heic', await readFile(HEIC), { mimeType: 'image/heic' }),
    put(s, 'media', 'bunny.mp4', await readFile(VIDEO), { mimeType: 'video/mp4' }),
    put(s, 'media', 'camera.jpg', await readFile(join(FIXTURE_IMAGES, 'Canon_40D.jpg')), { mimeType: 'image/jpeg' }),
  ]);
});

afterAll(async () => {
  if (!UPDATE_SHOTS) await rm(SHOTS, { recursive: true, force: true });
  await browser?.close();
  await c?.close();
  await s?.stop();
});

async function openConsole(locale = 'en-US'): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale });
  return context.newPage();
}

async function signIn(page: Page): Promise<void> {
  await page.goto(c.url);
  await page.fill('input[name=accessKey]', AK);
  await page.fill('input[name=secretKey]', SK);
  await page.click('button[type=submit]');
  await page.waitForSelector('header.topbar');
}

const loadedWidth = (img: Locator): Promise<number> =>
  img.evaluate((el) => {
    const i = el as unknown as { complete: boolean; naturalWidth: number };
    return i.complete ? i.naturalWidth : 0;
  });

/** Uploads, downloads and a few misses against the Kodo API for `ms`, a handful of requests at a time. */
async function driveLoad(ms: number): Promise<void> {
  const end = Date.now() + ms;
  const body = Buffer.alloc(64 * 1024, 7);
  for (let i = 0; Date.now() < end; i++) {
    await Promise.all([
      put(s, 'photos', `load/${i % 20}.bin`, body, { mimeType: 'application/octet-stream' }),
      fetch(`${s.url}/photos/load/${i % 20}.bin`).then((r) => r.arrayBuffer()),
      fetch(`${s.url}/photos/missing-${i}`).then((r) => r.arrayBuffer()),
    ]);
  }
}

interface History {
  intervalSeconds: number;
  traffic: Array<{ at: number; requests: number; clientErrors: number; bytesIn: number; bytesOut: number; p50Ms: number | null; p99Ms: number | null }> | null;
  storage: Array<{ at: number; buckets: Record<string, number> }>;
}

describe('console Overview graphs', () => {
  it('keeps a traffic and storage history after load, and draws it (English and Chinese); no 401 in the browser console', async () => {
    // Signed out: the page asks for the session and gets 200 {signedIn: false}, so the browser logs nothing.
    const page = await openConsole();
    const logged: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') logged.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400) logged.push(`${r.status()} ${r.url()}`);
    });
    try {
      await page.goto(c.url);
      await page.waitForSelector('input[name=accessKey]');
      await page.reload();
      await page.waitForSelector('input[name=accessKey]');
      expect(logged).toEqual([]);

      await driveLoad(LOAD_MS);
      const history = async (): Promise<History> => (await root.call<History>('GET', '/api/history')).body;
      await expect
        .poll(async () => {
          const h = await history();
          return (h.traffic ?? []).some((p) => p.requests > 0 && p.bytesIn > 0 && p.bytesOut > 0 && p.p50Ms !== null) && (h.storage.at(-1)?.buckets.photos ?? 0) > 0;
        }, { timeout: 15_000 })
        .toBe(true);
      const h = await history();
      expect(h.intervalSeconds).toBe(1);
      expect((h.traffic ?? []).reduce((n, p) => n + p.clientErrors, 0)).toBeGreaterThan(0); // the misses: 612
      for (const p of h.traffic ?? []) if (p.p50Ms !== null && p.p99Ms !== null) expect(p.p99Ms).toBeGreaterThanOrEqual(p.p50Ms);
      // An account key sees no server-wide traffic, and only its own buckets' storage.
      const account = await s.running.g.keyIndex.create(Math.floor(Date.now() / 1000));
      const other = new ConsoleClient(c.url);
      expect((await other.signIn(account.accessKey, account.secretKey)).status).toBe(200);
      const theirs = (await other.call<History>('GET', '/api/history')).body;
      expect(theirs.traffic).toBeNull();
      expect(theirs.storage.flatMap((p) => Object.keys(p.buckets))).toEqual([]);

      await page.fill('input[name=accessKey]', AK);
      await page.fill('input[name=secretKey]', SK);
      await page.click('button[type=submit]');
      for (const chart of ['chart-requests', 'chart-bytes', 'chart-latency', 'chart-storage']) {
        await page.waitForSelector(`[data-testid=${chart}] canvas`);
      }
      await page.screenshot({ path: `${SHOTS}overview-graphs.png`, fullPage: true });
      await page.selectOption('select.lang', 'zh');
      await page.waitForSelector('[data-testid=chart-requests] h4:text-is("每秒请求数与错误数")');
      await page.screenshot({ path: `${SHOTS}overview-graphs-zh.png`, fullPage: true });
      expect(logged).toEqual([]);
    } finally {
      await page.context().close();
    }
  }, LOAD_MS + 90_000);
});

describe('console on a phone (390 px wide)', () => {
  const LONG_KEY = 'holiday photos 2026 - a rather long file name that needs room to be read on a phone.jpg';

  it('main screens never scroll the page sideways, keys stay readable, icons are SVG; screenshots at 390 and 1280 px', async () => {
    await put(s, 'media', LONG_KEY, 'long key', { mimeType: 'text/plain' });
    await put(s, 'media', 'folder/inside.txt', 'inside', { mimeType: 'text/plain' });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'en-US', deviceScaleFactor: 1 });
    const page = await context.newPage();
    try {
      await signIn(page);
      const pageWidth = (): Promise<number> => page.evaluate<number>('document.documentElement.scrollWidth');
      for (const [hash, ready] of [
        ['#/', '[data-testid=chart-requests] canvas'],
        ['#/buckets', 'tr[data-bucket=media]'],
        ['#/buckets/media', '.settings-grid'],
        ['#/files/media', 'tr[data-key]'],
        ['#/processing', 'main h2'],
        ['#/keys', 'main h2'],
      ] as const) {
        await page.goto(`${c.url}/${hash}`);
        await page.waitForSelector(ready);
        const wide = await page.evaluate<string[]>(
          "[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > 391).slice(0, 5).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))",
        );
        expect(await pageWidth(), `${hash}: ${wide.join(', ')}`).toBeLessThanOrEqual(390);
      }
      await page.goto(`${c.url}/#/files/media`);
      const key = page.locator(`tr[data-key="${LONG_KEY}"] button.key`);
      await key.waitFor();
      // Readable: the key's box is wide enough for words, not a column of single characters.
      const box = await key.boundingBox();
      expect(box?.width ?? 0).toBeGreaterThan(140);
      expect(box?.height ?? Infinity).toBeLessThan(130);
      // Folders and files without a thumbnail are SVG icons, not emoji.
      expect(await page.locator('tr.dir td.thumb svg[data-icon=folder]').count()).toBeGreaterThan(0);
      expect(await page.locator('td.thumb').evaluateAll((cells) => cells.some((td) => /[\u{1F300}-\u{1FAFF}]/u.test(td.textContent ?? '')))).toBe(false);
      await page.screenshot({ path: `${SHOTS}files-390.png`, fullPage: true });
      await page.goto(`${c.url}/#/`);
      await page.waitForSelector('[data-testid=chart-storage] .chart-box[data-x-max]');
      // The storage chart of a young install (one sample of the new bucket): a real, recent time range, not the
      // degenerate one whose every label read midnight with the point at the left edge.
      const range = await page.locator('[data-testid=chart-storage] .chart-box').evaluate((el) => [Number((el as unknown as { dataset: Record<string, string> }).dataset.xMin), Number((el as unknown as { dataset: Record<string, string> }).dataset.xMax)]);
      const now = Date.now() / 1000;
      expect(range[1]! - range[0]!, JSON.stringify(range)).toBeGreaterThanOrEqual(60);
      expect(Math.abs(range[1]! - now), JSON.stringify(range)).toBeLessThan(3600);
      await page.screenshot({ path: `${SHOTS}overview-390.png`, fullPage: true });
    } finally {
      await context.close();
    }
  }, 90_000);
});

describe('console rough edges', () => {
  it('previews a HEIC photo, gives a video a bright 640 px poster, and starts the fop builder with vframe for a video', async () => {
    const page = await openConsole();
    try {
      await signIn(page);
      await page.goto(`${c.url}/#/files/media`);
      await page.click('tr[data-key="photo.heic"] button.key');
      await expect.poll(() => loadedWidth(page.locator('[data-testid=preview-image]')), { timeout: 30_000 }).toBeGreaterThan(0);
      await page.click('[aria-label=Close]');

      await page.click('tr[data-key="bunny.mp4"] button.key');
      const video = page.locator('video[data-testid=preview-video]');
      await expect.poll(() => video.getAttribute('poster'), { timeout: 30_000 }).toMatch(/\/media\/bunny\.mp4\?vframe\/jpg\/offset\/3\/w\/640$/);
      const poster = Buffer.from(await (await fetch((await video.getAttribute('poster'))!)).arrayBuffer());
      const meta = await sharp(poster).metadata();
      expect(meta.width).toBe(640);
      const { channels } = await sharp(poster).greyscale().stats();
      expect(channels[0]!.mean).toBeGreaterThan(100); // the frame at 1 s was near-black (mean ≈ 65 of 255)
      expect(await page.inputValue('[data-testid=fop-input]')).toBe('vframe/jpg/offset/3/w/400');
      await expect.poll(() => loadedWidth(page.locator('[data-testid=fop-image]')), { timeout: 30_000 }).toBe(400);
    } finally {
      await page.context().close();
    }
  });

  it("enables versioning, lists an object's versions, downloads, restores and deletes an old one", async () => {
    expect((await root.call('POST', '/api/buckets', { name: 'kept' })).status).toBe(200);
    const page = await openConsole();
    page.on('dialog', (d) => void d.accept());
    try {
      await signIn(page);
      await page.goto(`${c.url}/#/buckets/kept`);
      const card = page.locator('[data-card=versioning]');
      expect(await card.locator('[data-testid=versioning-state]').textContent()).toMatch(/^Off/);
      await card.locator('[data-testid=versioning-enable]').click();
      await expect.poll(() => card.locator('[data-testid=versioning-state]').textContent()).toMatch(/^Enabled/);
      for (const body of ['one', 'second']) await put(s, 'kept', 'doc.txt', Buffer.from(body), { mimeType: 'text/plain' });

      await page.goto(`${c.url}/#/files/kept`);
      await page.click('tr[data-key="doc.txt"] button.key');
      const rows = page.locator('[data-testid=versions] tr[data-version]');
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.nth(0).textContent()).toMatch(/6 B.*current/);
      const old = rows.nth(1);
      expect(await old.textContent()).toMatch(/3 B/);
      const href = (await old.locator('a[download]').getAttribute('href'))!;
      expect(await page.evaluate(async (u) => (await fetch(u)).text(), href)).toBe('one');

      await old.locator('button:text-is("Restore")').click();
      await expect.poll(() => rows.count()).toBe(3);
      expect(await (await fetch(`${s.url}/kept/doc.txt`)).text()).toBe('one');
      await rows.nth(2).locator('button:text-is("Delete")').click();
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.nth(0).textContent()).toMatch(/3 B.*current/);
    } finally {
      await page.context().close();
    }
  });

  it('reports a bad CORS rule set in the CORS card, and empties the style form after Add', async () => {
    const page = await openConsole();
    try {
      await signIn(page);
      await page.goto(`${c.url}/#/buckets/media`);
      const cors = page.locator('[data-card=cors]');
      await cors.locator('textarea').fill('[{"allowed_origin": ["*"]');
      await cors.locator('button').click();
      await expect.poll(() => cors.locator('[data-testid=card-status]').textContent()).toMatch(/not valid JSON/);
      expect(await page.locator('[data-testid=card-status]').count()).toBe(1);

      const styles = page.locator('[data-card=styles]');
      await styles.locator('input[placeholder=name]').fill('small');
      await styles.locator('input[placeholder="imageView2/2/w/200"]').fill('imageView2/2/w/120');
      await styles.locator('button:text-is("Add")').click();
      await styles.locator('td:text-is("small")').waitFor();
      expect(await styles.locator('[data-testid=card-status]').textContent()).toBe('Saved.');
      expect(await styles.locator('input[placeholder=name]').inputValue()).toBe('');
      expect(await styles.locator('input[placeholder="imageView2/2/w/200"]').inputValue()).toBe('');
      expect(await cors.locator('[data-testid=card-status]').count()).toBe(0);
    } finally {
      await page.context().close();
    }
  });

  it('proposes a saveas for a pfop, shows the job status in words and its result key as a link', async () => {
    const page = await openConsole();
    try {
      await signIn(page);
      await page.goto(`${c.url}/#/processing`);
      await page.click('[role=tab]:text-is("Submit a pfop")');
      await page.selectOption('select[name=bucket]', 'media');
      await page.fill('input[name=key]', 'camera.jpg');
      await page.fill('input[name=fops]', 'imageView2/2/w/64');
      // media:processed/camera.jpg, URL-safe base64.
      const entry = Buffer.from('media:processed/camera.jpg').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
      expect(await page.textContent('[data-testid=pfop-fops]')).toBe(`imageView2/2/w/64|saveas/${entry}`);
      await page.click('button[type=submit]');
      const id = (await page.locator('form p.note').textContent({ timeout: 10_000 }))?.match(/persistentId (\S+)/)?.[1];
      expect(id).toBeTruthy();
      await expect.poll(async () => (await root.call<{ code: number }>('GET', `/api/jobs/${id}`)).body.code, { timeout: 30_000 }).toBe(0);
      expect(await s.running.g.meta.getObject('media', 'processed/camera.jpg')).toBeDefined();

      await page.click('[role=tab]:text-is("Jobs")');
      await page.click(`tr[data-job="${id}"] button`);
      expect(await page.textContent(`tr[data-job="${id}"] .badge`)).toBe('Succeeded');
      const link = page.locator('a[data-testid=job-result]');
      expect(await link.textContent()).toBe('processed/camera.jpg');
      expect(await link.getAttribute('href')).toBe('#/files/media?prefix=processed%2Fcamera.jpg');
      await link.click();
      await page.waitForSelector('tr[data-key="processed/camera.jpg"]');
    } finally {
      await page.context().close();
    }
  });

  it('copies a new SecretKey with its button, and speaks Chinese in the Keys, object and event screens', async () => {
    const page = await openConsole();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.url });
    try {
      await signIn(page);
      await page.click('a[href="#/keys"]');
      await page.click('text=Create account key pair');
      const sk = await page.textContent('[data-testid=new-sk]');
      await page.click('button[aria-label="Copy SecretKey"]');
      await page.waitForSelector('button[aria-label="Copy SecretKey"]:text-is("Copied")');
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(sk);

      await page.selectOption('select.lang', 'zh');
      await page.waitForSelector('th:text-is("空间")');
      expect(await page.locator('th:text-is("空间管理")').count()).toBe(0);
      // Dates in the Chinese locale (e.g. 2026年11月27日 21:40).
      expect(await page.locator('table.grid tbody tr td:nth-child(2)').first().textContent()).toMatch(/\d{4}年\d{1,2}月\d{1,2}日/);

      await page.goto(`${c.url}/#/processing`);
      await page.waitForSelector('th:text-is("任务 ID（persistentId）")');
      await page.goto(`${c.url}/#/files/media`);
      await page.click('tr[data-key="camera.jpg"] button.key');
      await page.waitForSelector('dt:text-is("哈希值（hash）")');
      await page.click('[aria-label=关闭]');
      await page.goto(`${c.url}/#/buckets/media`);
      await page.waitForSelector('[data-card=events] label:has-text("上传（put）")');
    } finally {
      await page.context().close();
    }
  });
});
