/**
 * The route table: every route the main listener (the Kodo API) and the console listener serve, in one place, as
 * versitygw's router names each route's controller, metrics action and auth. One small file per role lists its
 * routes (kodo-up.ts, kodo-uc.ts, kodo-rs.ts: rs, rsf, io, api, health; kodo-iam.ts: the api role's IAM calls; console.ts); types.ts describes an entry;
 * register.ts registers them and nothing else; auth-step.ts runs each entry's auth once before its handler.
 * Adding a route = adding one entry here (docs/development/architecture.md, "Adding a route").
 */
import type { Caller } from '../auth/management.js';
import type { Granary } from '../context.js';
import { CONSOLE_LISTENER_ROUTES, CONSOLE_ROUTES } from './console.js';
import { IAM_ROUTES } from './kodo-iam.js';
import { API_ROUTES, HEALTH_ROUTES, IO_ROUTES, RS_ROUTES, RSF_ROUTES } from './kodo-rs.js';
import { UC_ROUTES } from './kodo-uc.js';
import { UP_ROUTES } from './kodo-up.js';
import type { PluginRoute, RouteEntry } from './types.js';

export { CONSOLE_LISTENER_ROUTES, CONSOLE_ROUTES };

/** Every route of the main listener (registration order: downloads, the catch-all, last). */
export const KODO_ROUTES: readonly RouteEntry<Granary, Caller>[] = [
  ...HEALTH_ROUTES,
  ...UC_ROUTES,
  ...UP_ROUTES,
  ...RSF_ROUTES,
  ...RS_ROUTES,
  ...API_ROUTES,
  ...IAM_ROUTES,
  ...IO_ROUTES,
];

/** Routes of the main listener a plugin registers: the CORS plugin's preflight answer. */
export const KODO_PLUGIN_ROUTES: readonly PluginRoute[] = [
  {
    method: 'OPTIONS',
    url: '*',
    role: 'io',
    operation: 'io.preflight',
    auth: 'none',
    bucket: { from: 'none' },
    iam: 'none',
    plugin: '@fastify/cors',
    owns: (method, url) => method === 'OPTIONS' && url === '*',
  },
];

/** Routes of the console listener a plugin registers: the built app's files (@fastify/static, one route each). */
export const CONSOLE_PLUGIN_ROUTES: readonly PluginRoute[] = [
  {
    method: ['GET', 'HEAD'],
    url: '/<file of the built console app>',
    role: 'console',
    operation: 'console.file',
    auth: 'none',
    bucket: { from: 'none' },
    iam: 'none',
    plugin: '@fastify/static',
    owns: (method, url) => (method === 'GET' || method === 'HEAD') && url !== '/*' && !url.startsWith('/api/') && url !== '/metrics',
  },
];
