/**
 * The web console under test: the console routes (src/console/app.ts) on their own listener beside a test server,
 * its app built when missing (or older than its sources), and a small client of its JSON API with a cookie jar.
 */
import http from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { registerConsole } from '../../src/console/app.js';
import type { TestServer } from './server.js';

/** Builds the console app with Vite unless dist/console-ui is newer than console/ (test/global-setup.ts did already). */
export { ensureConsoleBuilt } from './build.js';

/** Where the console of a test server answers. */
export interface ConsoleServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The listener started here (undefined when the server's own console listener is used). */
  app: FastifyInstance | undefined;
  close(): Promise<void>;
}

/**
 * The console of `s`: its console listener (`consoleUrl`) when the server has one — src/main.ts registers the console
 * there — else (a branch without the listener) the console routes on a listener of their own.
 */
export async function startConsole(s: TestServer): Promise<ConsoleServer> {
  const own = (s as TestServer & { consoleUrl?: string }).consoleUrl;
  if (own) return { url: own, app: undefined, close: async () => undefined };
  const app = Fastify({ loggerInstance: s.running.g.log as FastifyBaseLogger });
  await registerConsole(app, s.running.g);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, app, close: () => app.close() };
}

/** An answer of the console API. */
export interface ApiAnswer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** A console API client keeping the session cookie and the CSRF token, as the page does. */
export class ConsoleClient {
  cookie = '';
  csrf = '';

  constructor(readonly base: string) {}

  /** Calls the API; `opts.csrf: false` leaves the token out, `opts.origin` sets an Origin header, `opts.headers` more. */
  async call<T = unknown>(method: string, path: string, body?: unknown, opts: { csrf?: boolean; origin?: string; cookie?: string; headers?: Record<string, string> } = {}): Promise<ApiAnswer<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    const cookie = opts.cookie ?? this.cookie;
    if (cookie) headers.cookie = cookie;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && opts.csrf !== false && this.csrf) headers['x-granary-csrf'] = this.csrf;
    if (opts.origin) headers.origin = opts.origin;
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0] ?? '';
    const text = await res.text();
    // A JSON answer parsed; a download (the versions' one) kept as its text.
    const json = (res.headers.get('content-type') ?? '').includes('json') || /^[[{"]/.test(text);
    return { status: res.status, body: (text ? (json ? JSON.parse(text) : text) : undefined) as T, headers: res.headers };
  }

  /** Signs in; returns the answer (the cookie and token are kept on success). */
  async signIn(accessKey: string, secretKey: string): Promise<ApiAnswer<{ csrf?: string; root?: boolean; error?: string }>> {
    const a = await this.call<{ csrf?: string; root?: boolean; error?: string }>('POST', '/api/session', { accessKey, secretKey });
    if (a.status === 200 && a.body.csrf) this.csrf = a.body.csrf;
    return a;
  }
}

/** An answer of `freshCall`: status, headers (lower-case names) and the parsed JSON body (undefined when none). */
export interface FreshAnswer<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
}

/**
 * One console API call on a connection of its own (no keep-alive), so that behind `GRANARY_WORKERS` > 1 successive
 * calls land on different workers, as a browser's new connections do. JSON `body` when given; rejects when no
 * answer comes within 10 s.
 */
export function freshCall<T = unknown>(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<FreshAnswer<T>> {
  return new Promise((resolve, reject) => {
    const all: Record<string, string> = { ...headers };
    const text = body === undefined ? undefined : JSON.stringify(body);
    if (text !== undefined) all['content-type'] = 'application/json';
    const req = http.request(`${base}${path}`, { method, headers: all, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: (raw ? JSON.parse(raw) : undefined) as T });
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${method} ${path}`)));
    req.end(text);
  });
}

/** The process that answered: the first 8 characters of `X-Reqid` are random per process (server.ts `reqIdGenerator`). */
export function answeringProcess(headers: Record<string, string | string[] | undefined>): string {
  return String(headers['x-reqid'] ?? '').slice(0, 8);
}
