/**
 * Active content never runs on Granary's origin (src/roles/io/active-content.ts, docs/operations/downloads-security.md):
 * every answer of the download route carries `X-Content-Type-Options: nosniff`; everything but passive media
 * (raster images, audio, video, fonts, PDF) carries `Content-Security-Policy: sandbox` — plain downloads, `attname`,
 * HEAD, a `changeHeaders` type override, bound domains, fop results. In Chromium, an uploaded HTML page and an SVG
 * image that try to set a cookie and call home run no script: no cookie, no call, the title unchanged. The same
 * files from an unprotected origin do run (the positive control: the test can see a script run).
 */
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindDomain } from '../../src/buckets/buckets.js';
import { launchChromium, startBeaconServer, type BeaconServer } from '../helpers/browser.js';
import { rawRequest, upload } from '../helpers/http.js';
import { sdk, startTestServer, type TestServer } from '../helpers/server.js';

const B = 'active';
const DOMAIN = 'files.example.test';

/** An HTML page whose script sets a cookie, changes the title and calls `beacon`. */
function htmlPage(beacon: string): string {
  return (
    '<!doctype html><html><head><title>static title</title></head><body><p>hello</p>' +
    `<script>document.cookie = "granary_console=attacker-session; path=/"; document.title = "script ran"; new Image().src = ${JSON.stringify(beacon)};</script>` +
    '</body></html>'
  );
}

/** An SVG image whose script does the same. */
function svgImage(beacon: string): string {
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><title>static title</title><rect width="10" height="10"/>' +
    `<script>document.cookie = "granary_console=attacker-session; path=/"; document.title = "script ran"; fetch(${JSON.stringify(beacon)});</script>` +
    '</svg>'
  );
}

describe('download security headers', () => {
  let s: TestServer;
  let png: Buffer;
  beforeAll(async () => {
    s = await startTestServer();
    expect((await sdk(s.bucketManager().createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#336699' } }).png().toBuffer();
    await upload(s, B, 'page.html', '<p>hi</p>', { mimeType: 'text/html' });
    await upload(s, B, 'image.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>', { mimeType: 'image/svg+xml' });
    await upload(s, B, 'data.xml', '<a/>', { mimeType: 'application/xml' });
    await upload(s, B, 'feed.rss', '<rss/>', { mimeType: 'application/rss+xml' });
    await upload(s, B, 'notes.txt', 'plain', { mimeType: 'text/plain' });
    await upload(s, B, 'odd', 'typed oddly', { mimeType: 'Text/HTML; charset=utf-8' });
    await upload(s, B, 'photo.png', png, { mimeType: 'image/png' });
    await upload(s, B, 'clip.mp4', 'not really a video', { mimeType: 'video/mp4' });
    await upload(s, B, 'paper.pdf', '%PDF-1.4', { mimeType: 'application/pdf' });
    await bindDomain(s.running.g, DOMAIN, B);
  });
  afterAll(async () => s?.stop());

  const get = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const res = await fetch(`${s.url}/${B}/${path}`, init);
    await res.arrayBuffer();
    return res;
  };

  it.each([
    ['page.html', 'sandbox'],
    ['image.svg', 'sandbox'],
    ['data.xml', 'sandbox'],
    ['feed.rss', 'sandbox'],
    ['notes.txt', 'sandbox'],
    ['odd', 'sandbox'],
    ['photo.png', null],
    ['clip.mp4', null],
    ['paper.pdf', null],
  ])('%s: nosniff, CSP %s', async (key, csp) => {
    for (const method of ['GET', 'HEAD']) {
      const res = await get(key, { method });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy'), `${method} ${key}`).toBe(csp);
    }
  });

  it('attname still makes an attachment, and the headers ride along', async () => {
    const res = await get(`page.html?attname=${encodeURIComponent('page.html')}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="page\.html"/);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(res.headers.get('content-security-policy')).toBe('sandbox');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('a changeHeaders override to text/html is sandboxed, and cannot drop the headers', async () => {
    await upload(s, B, 'disguised.png', png, { mimeType: 'image/png' });
    const bm = s.bucketManager();
    const headers = { 'Content-Type': 'text/html', 'Content-Security-Policy': "script-src 'unsafe-inline'", 'X-Content-Type-Options': 'sniff' };
    expect((await sdk(bm.changeHeaders(B, 'disguised.png', headers))).status).toBe(200);
    const res = await get('disguised.png');
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(res.headers.get('content-security-policy')).toBe('sandbox');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('errors, fop results and bound-domain downloads carry them too', async () => {
    const missing = await get('nothing-here.html');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff');
    const thumb = await get('photo.png?imageView2/2/w/4');
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get('content-type')).toBe('image/png');
    expect(thumb.headers.get('x-content-type-options')).toBe('nosniff');
    expect(thumb.headers.get('content-security-policy')).toBeNull();
    const info = await get('photo.png?imageInfo');
    expect(info.status).toBe(200);
    expect(info.headers.get('x-content-type-options')).toBe('nosniff');
    const viaDomain = await rawRequest({ port: s.running.port, method: 'GET', path: '/page.html', headers: { Host: DOMAIN } });
    expect(viaDomain.status).toBe(200);
    expect(viaDomain.headers['x-content-type-options']).toBe('nosniff');
    expect(viaDomain.headers['content-security-policy']).toBe('sandbox');
  });
});

describe('uploaded HTML and SVG in Chromium', () => {
  let s: TestServer;
  let browser: Browser;
  let beacon: BeaconServer;
  beforeAll(async () => {
    [s, browser, beacon] = await Promise.all([startTestServer(), launchChromium(), startBeaconServer()]);
    expect((await sdk(s.bucketManager().createBucket(B, { regionId: 'z0' }))).status).toBe(200);
    await upload(s, B, 'toss.html', htmlPage(beacon.hitUrl('granary-html')), { mimeType: 'text/html' });
    await upload(s, B, 'toss.svg', svgImage(beacon.hitUrl('granary-svg')), { mimeType: 'image/svg+xml' });
    beacon.serve('/toss.html', 'text/html', htmlPage(beacon.hitUrl('control-html')));
    beacon.serve('/toss.svg', 'image/svg+xml', svgImage(beacon.hitUrl('control-svg')));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await beacon?.close();
    await s?.stop();
  });

  /** Opens `url` in a fresh browser context; returns the title after load and the cookies the origin holds. */
  async function visit(url: string): Promise<{ title: string; cookies: number }> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const res = await page.goto(url, { waitUntil: 'load' });
      expect(res?.status()).toBe(200);
      return { title: await page.title(), cookies: (await context.cookies(url)).length };
    } finally {
      await context.close();
    }
  }

  it('the control: from an origin without the headers, both files run their script', async () => {
    const html = await visit(`${beacon.origin}/toss.html`);
    await beacon.hit('control-html');
    expect(html).toEqual({ title: 'script ran', cookies: 1 });
    const svg = await visit(`${beacon.origin}/toss.svg`);
    await beacon.hit('control-svg');
    expect(svg).toEqual({ title: 'script ran', cookies: 1 });
  }, 60_000);

  it('downloaded from Granary, neither runs script nor sets a cookie', async () => {
    // The inline scripts would run before `load` (they are synchronous; the HTML page's image delays `load`).
    expect(await visit(`${s.url}/${B}/toss.html`)).toEqual({ title: 'static title', cookies: 0 });
    expect(await visit(`${s.url}/${B}/toss.svg`)).toEqual({ title: 'static title', cookies: 0 });
    expect(beacon.hits('granary-html')).toBe(0);
    expect(beacon.hits('granary-svg')).toBe(0);
  }, 60_000);
});
