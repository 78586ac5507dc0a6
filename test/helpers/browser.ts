/**
 * Browser tests: Debian's Chromium driven by playwright-core (no browser download; scripts/ensure-test-deps.sh
 * installs it), a static page server on its own port (so every call to Granary is cross-origin and goes through
 * CORS and preflights, as from a real web page), and a record of what the browser sent and what it got, printed
 * when a test fails.
 *
 * The page loads qiniu-js's UMD bundle (`/qiniu.min.js`, global `qiniu`) and defines
 * `granaryUpload(spec)`, which builds a deterministic file in the page (see `testContent`, the same bytes in Node)
 * and uploads it with `qiniu.upload(...)`, resolving with `{ok: true, result}` (what `complete()` received) or
 * `{ok: false, error}` (the SDK's error, flattened).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestServer } from './server.js';

/** The Chromium binary: `$GRANARY_CHROMIUM`, else Debian's real binary, else Debian's wrapper script. */
export function chromiumPath(): string {
  const fromEnv = process.env.GRANARY_CHROMIUM;
  if (fromEnv) return fromEnv;
  // The wrapper /usr/bin/chromium only sources /etc/chromium.d and execs this; calling it directly avoids the
  // wrapper's shell noise on stderr.
  return existsSync('/usr/lib/chromium/chromium') ? '/usr/lib/chromium/chromium' : '/usr/bin/chromium';
}

/**
 * Flags for running as root on a machine without network (the Debian chromium package of docs/development/testing.md). Without the
 * background-networking flags Chromium keeps trying to reach Google's hosts. Playwright gives every launch a
 * fresh temporary profile (it refuses `--user-data-dir` in `args`).
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** Launches headless Chromium (one per test file; close it in afterAll). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!existsSync(executablePath)) {
    throw new Error(`Chromium not found at ${executablePath}: run scripts/ensure-test-deps.sh (npm test does)`);
  }
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS, headless: true, timeout: 30_000 });
}

/**
 * The test content: `size` bytes of a xorshift32 stream seeded with `seed`, 4 bytes per step, little-endian.
 * The page script computes exactly the same bytes (PAGE_SCRIPT `testBytes`); keep the two in step.
 */
export function testContent(size: number, seed: number): Buffer {
  const out = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    for (let b = 0; b < 4 && i + b < size; b++) out[i + b] = (x >>> (8 * b)) & 0xff;
  }
  return out;
}

/** What the page's `granaryUpload` takes. `config` and `putExtra` go to `qiniu.upload` as they are. */
export interface UploadSpec {
  size: number;
  seed: number;
  /** The `File`'s name. */
  fileName: string;
  key: string | null;
  token: string;
  putExtra: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** A qiniu-js error, flattened (QiniuError / QiniuRequestError / QiniuNetworkError). */
export interface PageUploadError {
  name?: string;
  message?: string;
  code?: number;
  reqId?: string;
  data?: unknown;
}

export type PageUploadOutcome =
  | { ok: true; result: Record<string, unknown>; progressEvents: number }
  | { ok: false; error: PageUploadError; progressEvents: number };

const PAGE_SCRIPT = String.raw`
'use strict';
// Same stream as testContent() in test/helpers/browser.ts.
function testBytes(size, seed) {
  const out = new Uint8Array(size);
  let x = (seed >>> 0) || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    for (let b = 0; b < 4 && i + b < size; b++) out[i + b] = (x >>> (8 * b)) & 0xff;
  }
  return out;
}
window.granaryUpload = function (spec) {
  const file = new File([testBytes(spec.size, spec.seed)], spec.fileName, { type: 'application/octet-stream' });
  let progressEvents = 0;
  return new Promise(function (resolve) {
    const observable = qiniu.upload(file, spec.key, spec.token, spec.putExtra, spec.config);
    observable.subscribe({
      next: function () { progressEvents++; },
      error: function (err) {
        resolve({ ok: false, progressEvents: progressEvents, error: {
          name: err && err.name, message: err && err.message, code: err && err.code,
          reqId: err && err.reqId, data: err && err.data,
        } });
      },
      complete: function (result) { resolve({ ok: true, result: result, progressEvents: progressEvents }); },
    });
  });
};
window.granaryReady = true;
`;

const PAGE_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>granary browser upload</title>
<script src="/qiniu.min.js"></script>
<script src="/page.js"></script>
</head><body>granary browser upload test page</body></html>
`;

/** A static page server on 127.0.0.1 (its own port, so calls to Granary are cross-origin). */
export interface PageServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

/** Serves `/` (the test page), `/page.js` and `/qiniu.min.js` (read from node_modules). */
export async function startPageServer(): Promise<PageServer> {
  const bundlePath = createRequire(import.meta.url).resolve('qiniu-js/dist/qiniu.min.js');
  const bundle = await readFile(bundlePath);
  const files: Record<string, { type: string; body: Buffer | string }> = {
    '/': { type: 'text/html; charset=utf-8', body: PAGE_HTML },
    '/page.js': { type: 'text/javascript; charset=utf-8', body: PAGE_SCRIPT },
    '/qiniu.min.js': { type: 'text/javascript; charset=utf-8', body: bundle },
  };
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const file = files[path];
    if (!file) {
      // No favicon: an empty answer keeps a 404 out of the browser's console.
      if (path === '/favicon.ico') res.writeHead(204).end();
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One request as Granary saw it, with the answer it gave. */
export interface ServerExchange {
  method: string;
  url: string;
  /** Request headers of interest (origin, preflight headers, content-type, content-md5, authorization scheme). */
  req: Record<string, string>;
  status?: number;
  /** Response headers of interest (CORS, content-type, x-reqid). */
  res: Record<string, string>;
  /** Response body when it is JSON and short. */
  body?: string;
}

const REQ_HEADERS = [
  'origin',
  'access-control-request-method',
  'access-control-request-headers',
  'content-type',
  'content-length',
  'content-md5',
];
const RES_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-expose-headers',
  'access-control-max-age',
  'content-type',
  'x-reqid',
];

/**
 * Records every exchange Granary has from now on (preflights included: Playwright does not report those), with
 * short JSON answers. Call `stop()` to detach.
 */
export function recordExchanges(s: TestServer): { exchanges: ServerExchange[]; stop: () => void } {
  const exchanges: ServerExchange[] = [];
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const ex: ServerExchange = { method: req.method ?? '', url: req.url ?? '', req: {}, res: {} };
    for (const h of REQ_HEADERS) {
      const v = req.headers[h];
      if (v !== undefined) ex.req[h] = String(v);
    }
    const auth = req.headers.authorization;
    if (auth !== undefined) ex.req.authorization = `${auth.split(' ')[0] ?? ''} …`;
    exchanges.push(ex);
    // Capture the body of short JSON answers by watching what is written.
    const chunks: Buffer[] = [];
    let size = 0;
    const origWrite = res.write.bind(res) as (...a: unknown[]) => boolean;
    const origEnd = res.end.bind(res) as (...a: unknown[]) => http.ServerResponse;
    const keep = (chunk: unknown): void => {
      if (size > 4096 || chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : undefined;
      if (b) {
        chunks.push(b);
        size += b.length;
      }
    };
    res.write = ((...a: unknown[]) => {
      keep(a[0]);
      return origWrite(...a);
    }) as typeof res.write;
    res.end = ((...a: unknown[]) => {
      keep(a[0]);
      return origEnd(...a);
    }) as typeof res.end;
    // fastify passes its headers to writeHead() directly, where getHeader() does not see them.
    const written: Record<string, string> = {};
    const origWriteHead = res.writeHead.bind(res) as (...a: unknown[]) => http.ServerResponse;
    res.writeHead = ((...a: unknown[]) => {
      const headers = a.find((x, i) => i > 0 && typeof x === 'object' && x !== null);
      if (headers && !Array.isArray(headers)) {
        for (const [k, v] of Object.entries(headers)) written[k.toLowerCase()] = String(v);
      }
      return origWriteHead(...a);
    }) as typeof res.writeHead;
    res.on('finish', () => {
      ex.status = res.statusCode;
      for (const h of RES_HEADERS) {
        const v = res.getHeader(h) ?? written[h];
        if (v !== undefined) ex.res[h] = String(v);
      }
      const type = ex.res['content-type'] ?? '';
      if (type.startsWith('application/json') && size > 0 && size <= 4096) ex.body = Buffer.concat(chunks).toString('utf8');
    });
  };
  s.running.app.server.prependListener('request', listener);
  return { exchanges, stop: () => s.running.app.server.off('request', listener) };
}

/** One line per exchange: `METHOD url → status body [headers]`. */
export function formatExchanges(exchanges: ServerExchange[]): string {
  return exchanges
    .map((e) => {
      const req = Object.entries(e.req)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
      const res = Object.entries(e.res)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
      return `${e.method} ${e.url}\n    sent: ${req}\n    got:  ${e.status ?? '(no answer)'} ${res}${e.body ? `\n    body: ${e.body}` : ''}`;
    })
    .join('\n');
}

/** A page on the test page server with everything the browser reported recorded. */
export interface UploadPage {
  page: Page;
  /** Console messages, page errors, failed requests and the browser's view of each request. */
  log: string[];
  /** Runs `granaryUpload(spec)` in the page. */
  upload(spec: UploadSpec): Promise<PageUploadOutcome>;
  close(): Promise<void>;
}

/** Opens the test page in a fresh context (no shared localStorage: qiniu-js keeps resume state there). */
export async function openUploadPage(browser: Browser, pages: PageServer): Promise<UploadPage> {
  const context: BrowserContext = await browser.newContext();
  const page = await context.newPage();
  const log: string[] = [];
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.push(`pageerror: ${e.stack ?? e.message}`));
  page.on('requestfailed', (r) => log.push(`requestfailed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(pages.origin)) log.push(`request: ${r.method()} ${r.url()}`);
  });
  page.on('response', (r) => {
    if (!r.url().startsWith(pages.origin)) log.push(`response: ${r.status()} ${r.request().method()} ${r.url()}`);
  });
  await page.goto(`${pages.origin}/`);
  await page.waitForFunction('window.granaryReady === true && typeof qiniu === "object"');
  return {
    page,
    log,
    upload: (spec) => page.evaluate<PageUploadOutcome>(`granaryUpload(${JSON.stringify(spec)})`),
    close: () => context.close(),
  };
}

/** A failure message with the browser's log and Granary's exchanges, so a failing test explains itself. */
export function diagnostics(what: string, p: UploadPage, exchanges: ServerExchange[]): string {
  return [
    what,
    '--- browser log ---',
    ...p.log,
    '--- requests Granary received (preflights included) ---',
    formatExchanges(exchanges),
  ].join('\n');
}

/**
 * A plain HTTP server for tests of active content: `hit(name)` URLs record a hit (`hits(name)`, `hit(name)` awaited
 * by `nextHit`), and `serve(path, type, body)` serves a file without any security header (the unprotected origin
 * of a positive control).
 */
export interface BeaconServer {
  origin: string;
  /** A URL whose fetch counts as a hit of `name` (an empty 204 answer). */
  hitUrl(name: string): string;
  /** Hits of `name` so far. */
  hits(name: string): number;
  /** Resolves at the next hit of `name` (at once when there was one already). */
  hit(name: string): Promise<void>;
  /** Serves `body` as `type` at `path`, with no security headers. */
  serve(path: string, type: string, body: string): void;
  close(): Promise<void>;
}

/** Starts a `BeaconServer` on 127.0.0.1 (any free port). */
export async function startBeaconServer(): Promise<BeaconServer> {
  const counts = new Map<string, number>();
  const waiters = new Map<string, Array<() => void>>();
  const files = new Map<string, { type: string; body: string }>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const m = /^\/hit\/([\w-]+)$/.exec(path);
    if (m) {
      const name = m[1] as string;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      for (const w of waiters.get(name)?.splice(0) ?? []) w();
      res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
      return;
    }
    const file = files.get(path);
    if (!file) res.writeHead(path === '/favicon.ico' ? 204 : 404).end();
    else res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    hitUrl: (name) => `${origin}/hit/${name}`,
    hits: (name) => counts.get(name) ?? 0,
    hit: (name) =>
      (counts.get(name) ?? 0) > 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(name, [...(waiters.get(name) ?? []), resolve])),
    serve: (path, type, body) => void files.set(path, { type, body }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
