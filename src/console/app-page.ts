/**
 * The console app's two catch-all routes of the route table (src/routes/console.ts): an unknown `/api/…` path, and
 * the single-page app's page for client-side routes (its files are served by @fastify/static, app.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import type { RouteCall } from '../http/route-call.js';
import { sendError } from '../http/wire.js';
import type { ConsoleApi } from './api-context.js';

/** `ALL /api/*`: an API route the console does not have (404 `noSuchRoute`, JSON). */
export function unknownApi(): never {
  throw Errors.noSuchRoute();
}

/**
 * `GET /*` of the app: its page for client-side routes. A file the app does not have (an old build's asset, a
 * typo) is a 404, not the page: a browser given HTML for a script reports a confusing MIME error, and caches would
 * keep the page under the asset's name. When the app was not built, a JSON 404 saying so.
 */
export function appPage(call: RouteCall<ConsoleApi, unknown>, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (isAssetPath(request.url)) return sendError(reply, Errors.notFound('no such file in the console app'));
  if (!call.ctx.uiBuilt) return sendError(reply, Errors.notFound('the console app is not built: run npm run build'));
  reply.header('cache-control', 'no-store');
  return reply.sendFile('index.html');
}

/**
 * Whether `url` names a file rather than a client-side route: a path under `/assets/` or whose last segment has
 * an extension (`/favicon.ico`, `/x.js`). The app's own routes are hash routes and extension-less paths.
 */
export function isAssetPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  if (path.startsWith('/assets/')) return true;
  const last = path.slice(path.lastIndexOf('/') + 1);
  return /\.[A-Za-z0-9]{1,8}$/.test(last);
}
