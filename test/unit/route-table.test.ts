/**
 * The route table (src/routes/): every route the built main and console apps register is a table entry (or a
 * plugin route the table declares) and every entry is registered; every entry declares its auth kind, operation
 * and bucket rule; routes whose auth kind has a caller get the auth step as their preHandler; a route added
 * outside the table is refused while the app is built; and no handler under src/roles or src/console checks a
 * management credential or authorises a bucket itself (only routes/auth-step.ts does).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { registerConsole } from '../../src/console/app.js';
import { buildConsoleApp } from '../../src/console/listener.js';
import type { Granary } from '../../src/context.js';
import { guardRoutes, methodsOf, registeredRoutes } from '../../src/routes/register.js';
import { CONSOLE_LISTENER_ROUTES, CONSOLE_PLUGIN_ROUTES, CONSOLE_ROUTES, KODO_PLUGIN_ROUTES, KODO_ROUTES } from '../../src/routes/table.js';
import type { PluginRoute, RouteFacts } from '../../src/routes/types.js';
import { buildServer } from '../../src/server.js';

/** Just what building the apps reads (no request is served). */
function fakeGranary(): Granary {
  return {
    config: { maxBodyBytes: 1 << 20, trustProxy: false, consoleSessionMinutes: 60, lingerTimeoutSeconds: 1 },
    log: pino({ level: 'silent' }),
    metrics: {},
    meta: { consoleSessions: {} },
    clock: { nowMs: () => 0 },
  } as unknown as Granary;
}

interface Seen {
  method: string;
  url: string;
  preHandler: boolean;
  operation: unknown;
}

/** Every route a built app registered (fastify's onRoute, recorded by register.ts `guardRoutes`), one per method. */
async function seenRoutes(app: FastifyInstance): Promise<Seen[]> {
  await app.ready();
  const seen: Seen[] = [];
  for (const opts of registeredRoutes(app)) {
    for (const m of Array.isArray(opts.method) ? opts.method : [opts.method]) {
      seen.push({ method: m.toUpperCase(), url: opts.url, preHandler: opts.preHandler !== undefined, operation: (opts.config as { operation?: unknown } | undefined)?.operation });
    }
  }
  await app.close();
  return seen;
}

async function mainRoutes(): Promise<Seen[]> {
  return seenRoutes(await buildServer(fakeGranary()));
}

async function consoleRoutes(): Promise<Seen[]> {
  const g = fakeGranary();
  return seenRoutes(await buildConsoleApp(g, (a) => registerConsole(a, g)));
}

const KINDS = new Set(['management', 'uploadToken', 'download', 'none', 'console-session', 'console-session-optional', 'console-signin', 'metrics-token']);
const WITH_CALLER = new Set(['management', 'console-session', 'metrics-token']);

function covers(facts: RouteFacts, method: string, url: string): boolean {
  if (facts.url !== url) return false;
  const methods = methodsOf(facts) as string[];
  return methods.includes('ALL') || methods.includes(method) || (method === 'HEAD' && methods.includes('GET'));
}

function checkCoverage(seen: Seen[], entries: readonly RouteFacts[], plugins: readonly PluginRoute[]): void {
  for (const r of seen) {
    const entry = entries.find((e) => covers(e, r.method, r.url));
    const plugin = plugins.find((p) => p.owns(r.method, r.url));
    expect(entry ?? plugin, `${r.method} ${r.url} is in the route table`).toBeDefined();
    expect(r.operation, `${r.method} ${r.url} carries its operation label`).toBe((entry ?? plugin)?.operation);
    if (entry && WITH_CALLER.has(entry.auth)) expect(r.preHandler, `${r.method} ${r.url} runs the auth step`).toBe(true);
  }
  for (const e of entries) {
    for (const m of methodsOf(e)) {
      if (m === 'ALL') expect(seen.some((r) => r.url === e.url)).toBe(true);
      else expect(seen.some((r) => r.url === e.url && r.method === m), `${m} ${e.url} is registered`).toBe(true);
    }
  }
}

describe('route table', () => {
  it('declares auth kind, operation and bucket rule for every entry', () => {
    const all: RouteFacts[] = [...KODO_ROUTES, ...KODO_PLUGIN_ROUTES, ...CONSOLE_ROUTES, ...CONSOLE_LISTENER_ROUTES, ...CONSOLE_PLUGIN_ROUTES];
    expect(all.length).toBeGreaterThan(100);
    for (const e of all) {
      const where = `${String(e.method)} ${e.url}`;
      expect(KINDS.has(e.auth), `${where}: auth kind ${e.auth}`).toBe(true);
      expect(e.operation, `${where}: operation`).toMatch(/^(up|io|rs|rsf|api|uc|health|console)\.[A-Za-z0-9.]+$/);
      expect(e.operation.startsWith(`${e.role}.`), `${where}: operation of its role`).toBe(true);
      const b = e.bucket;
      expect(['none', 'param', 'query', 'in-handler', 'domain'], `${where}: bucket rule`).toContain(b.from);
      if (b.from === 'param') expect(e.url, `${where}: the bucket parameter is in the path`).toContain(`:${b.name}`);
      if (b.from === 'param' || b.from === 'query') expect(WITH_CALLER.has(e.auth), `${where}: a bucket needs a caller`).toBe(true);
      if (b.from === 'in-handler') expect(b.where.length, `${where}: where the handler finds the bucket`).toBeGreaterThan(0);
      if (b.from === 'domain') expect(b.by.length, `${where}: the domain function that authorises`).toBeGreaterThan(0);
    }
  });

  it('registers exactly the main listener table, each route with its label and auth step', async () => {
    checkCoverage(await mainRoutes(), KODO_ROUTES, KODO_PLUGIN_ROUTES);
  });

  it('registers exactly the console listener table', async () => {
    checkCoverage(await consoleRoutes(), [...CONSOLE_ROUTES, ...CONSOLE_LISTENER_ROUTES], CONSOLE_PLUGIN_ROUTES);
  });

  it('refuses a route added outside the table while the app is built', async () => {
    const app = Fastify();
    guardRoutes(app, KODO_PLUGIN_ROUTES);
    expect(() => app.get('/forgotten', async () => 'open')).toThrow(/not in the route table/);
    await app.close();
  });

  it('leaves credential checks and bucket authorisation to the auth step (none in src/roles, src/console)', () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    walk('src/roles');
    walk('src/console');
    const offenders = files.filter((f) => /\b(requireManagement|authorizeBucket)\b/.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
    expect(readFileSync('src/routes/auth-step.ts', 'utf8')).toMatch(/requireManagement\(g, request\)/);
  });
});
