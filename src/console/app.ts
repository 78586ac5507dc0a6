/**
 * The web console: a JSON API under `/api/` and the single-page app built by Vite from `console/` into
 * `dist/console-ui/` (`npm run build`, or the `prepare` step of `npm ci`), registered on the console listener.
 *
 * `registerConsole(app, g)` adds, in its own encapsulated scope:
 * - the cookie plugin (the session cookie, src/console/guard.ts), a JSON body parser (bodies up to 1 MiB);
 * - the API routes of the route table (src/routes/console.ts: api-session.ts (sign-in/out), api-overview.ts (with the history of history.ts),
 *   api-buckets.ts, api-files.ts, api-processing.ts, api-keys.ts) — each authorised by the table's auth step
 *   (session, CSRF, the bucket of the path), and each calling the domain functions, never the Kodo API over HTTP;
 * - an error handler answering `{"error": "…"}` with the catalogue's status, like the Kodo API (unknown `/api/…`
 *   routes: 404 `noSuchRoute`);
 * - the app's static files, with `index.html` for every other GET (client-side routes) — except paths naming a
 *   file (under `/assets/` or with an extension) that does not exist: 404 JSON; when the app was not built, `/`
 *   answers 404 JSON saying so.
 * Sessions and the sign-in throttle live in the MetaStore (sessions.ts), shared by every worker and node.
 */
import { logAnswerError } from '../log.js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import type { Granary } from '../context.js';
import { Errors, isKodoError, storageError } from '../errors.js';
import { sendError } from '../http/wire.js';
import { registerRoutes } from '../routes/register.js';
import { CONSOLE_ROUTES } from '../routes/console.js';
import { ConsoleHistory } from './history.js';
import { RequestRateSampler, requestCounterOf } from './request-rates.js';
import { ConsoleSessions, SignInThrottle } from './sessions.js';
import type { ConsoleApi } from './api-context.js';

/**
 * The app page's Content-Security-Policy: scripts and styles only from the console itself (no inline script),
 * thumbnails, previews and uploads from the Kodo API listener (any http(s) origin: its host depends on how the
 * browser reaches it), no framing.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: http: https:",
  "media-src 'self' blob: http: https:",
  "connect-src 'self' http: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ');

/** Largest JSON body a console API call accepts, bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

/** Where the built single-page app lives: `<package>/dist/console-ui/` (from src/console or dist/console alike). */
export const CONSOLE_UI_DIR = fileURLToPath(new URL('../../dist/console-ui/', import.meta.url));

/** The API routes, in their own scope: cookie plugin, JSON parser, error handler, no-store. */
async function registerApi(scope: FastifyInstance, api: ConsoleApi): Promise<void> {
  await scope.register(cookie);
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(Errors.badRequest('the body is not valid JSON'), undefined);
    }
  });
  scope.setErrorHandler((err, request, reply) => {
    if (isKodoError(err)) {
      logAnswerError(request.log, err.status, err, err.message);
      return sendError(reply, err);
    }
    const storage = storageError(err);
    if (storage) {
      request.log.error({ err }, storage.message);
      return sendError(reply, storage);
    }
    const e = err as { statusCode?: number; code?: string; message: string };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, Errors.bodyTooLarge());
    if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) return sendError(reply, Errors.badRequest(e.message));
    request.log.error({ err }, 'unexpected console error');
    return sendError(reply, Errors.internal());
  });
  scope.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store');
    return payload;
  });
  registerRoutes(scope, CONSOLE_ROUTES, 'console-api', api, api.g);
}

/** The app's static files, and its page for every other GET (client-side routes); a JSON 404 when not built. */
async function registerApp(scope: FastifyInstance, api: ConsoleApi): Promise<void> {
  scope.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CSP);
    return payload;
  });
  if (api.uiBuilt) await scope.register(fastifyStatic, { root: CONSOLE_UI_DIR, prefix: '/', wildcard: false, index: ['index.html'] });
  registerRoutes(scope, CONSOLE_ROUTES, 'console-app', api, api.g);
}

/** Registers the console API and app on `app` (the console listener), in one encapsulated scope. */
export async function registerConsole(app: FastifyInstance, g: Granary): Promise<void> {
  const api: ConsoleApi = {
    g,
    sessions: new ConsoleSessions(g.meta.consoleSessions, g.clock, g.config.consoleSessionMinutes * 60_000, g.config.publicUrl),
    signIns: new SignInThrottle(g.meta.consoleSessions, g.clock),
    uiBuilt: existsSync(`${CONSOLE_UI_DIR}index.html`),
    history: new ConsoleHistory(g),
  };
  api.history.start();
  app.addHook('onClose', async () => api.history.stop());
  const counter = requestCounterOf(g);
  if (counter) {
    api.rates = new RequestRateSampler(counter);
    api.rates.start();
    app.addHook('onClose', async () => api.rates?.stop());
  }
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply, payload) => {
      reply.header('x-frame-options', 'DENY');
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      return payload;
    });
    await scope.register(async (inner) => registerApi(inner, api));
    await registerApp(scope, api);
  });
}
