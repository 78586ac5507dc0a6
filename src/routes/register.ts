/**
 * Registration from the route table, and nothing else: `registerRoutes` walks the entries of one group and adds
 * each as a fastify route whose `preHandler` is its auth step (auth-step.ts, built once here) and whose `config`
 * carries its `role` and `operation` (the metrics labels, metrics/http.ts). `guardRoutes` (call before any route)
 * labels the routes plugins add from their `PluginRoute` entry and refuses, while the app is being built, any
 * route that is in neither list: a route without a table entry has no declared auth, so it never serves.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Granary } from '../context.js';
import type { RouteCall } from '../http/route-call.js';
import { authStep } from './auth-step.js';
import type { Method, PluginRoute, RouteEntry, RouteFacts } from './types.js';

/** The labels a route's `config` carries. */
export interface RouteLabels {
  role: RouteFacts['role'];
  operation: string;
}

/** The methods of an entry as a list (`ALL` stays `ALL`). */
export function methodsOf(facts: Pick<RouteFacts, 'method'>): Method[] {
  return Array.isArray(facts.method) ? facts.method : [facts.method];
}

/**
 * Labels plugin routes from `plugins` and throws for a route neither registered from the table nor owned by a
 * plugin entry. Adds the request decoration the auth step writes to.
 */
export function guardRoutes(app: FastifyInstance, plugins: readonly PluginRoute[]): void {
  if (!app.hasRequestDecorator('routeCall')) app.decorateRequest('routeCall', null);
  const routes: RouteOptions[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (opts) => {
    routes.push(opts);
    const config = opts.config as Partial<RouteLabels> | undefined;
    if (config?.operation !== undefined) return;
    const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
    const plugin = plugins.find((p) => methods.every((m) => p.owns(m.toUpperCase(), opts.url)));
    if (!plugin) throw new Error(`route ${methods.join('|')} ${opts.url} is not in the route table (src/routes/table.ts)`);
    opts.config = { ...(opts.config ?? {}), role: plugin.role, operation: plugin.operation } as RouteOptions['config'];
  });
}

/** The routes of each guarded app, as fastify registered them (HEAD twins included). */
const registered = new WeakMap<FastifyInstance, RouteOptions[]>();

/** Every route `app` registered since `guardRoutes` (the route-table test compares them with the table). */
export function registeredRoutes(app: FastifyInstance): readonly RouteOptions[] {
  return registered.get(app) ?? [];
}

/** Registers every entry of `group` on `app` (a scope with the group's body parsers). */
export function registerRoutes<Ctx, Who>(
  app: FastifyInstance,
  entries: readonly RouteEntry<Ctx, Who>[],
  group: RouteEntry<Ctx, Who>['group'],
  ctx: Ctx,
  g: Granary,
): void {
  if (!app.hasRequestDecorator('routeCall')) app.decorateRequest('routeCall', null);
  for (const entry of entries) {
    if (entry.group !== group) continue;
    const { preHandler, constant } = authStep(entry, ctx, g);
    const run = entry.handler;
    // The handler gets the auth step's RouteCall, or the route's constant one (no allocation per request).
    const handler = preHandler
      ? (request: FastifyRequest, reply: FastifyReply) => run((request.routeCall as RouteCall<Ctx, Who> | null) ?? constant, request, reply)
      : (request: FastifyRequest, reply: FastifyReply) => run(constant, request, reply);
    const methods = methodsOf(entry);
    const route: RouteOptions = {
      method: methods.includes('ALL') ? app.supportedMethods : (methods as string[]),
      url: entry.url,
      handler: handler as RouteOptions['handler'],
      config: { role: entry.role, operation: entry.operation } satisfies RouteLabels,
    };
    if (preHandler) route.preHandler = preHandler;
    if (entry.exposeHeadRoute !== undefined) route.exposeHeadRoute = entry.exposeHeadRoute;
    if (entry.onSend) route.onSend = entry.onSend;
    app.route(route);
  }
}
