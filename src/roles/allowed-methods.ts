/**
 * 405 with `Allow` where a path exists for other methods, as Kodo answers (`GET /` on the upload host is a 405 on
 * Kodo, not a 404). The methods come from the route table (src/routes/table.ts): every entry's methods and URL
 * pattern, except the catch-all download route (`GET|HEAD /*`, which matches any path) and CORS's `OPTIONS *`; a
 * GET route answers HEAD too. Read only when a request found no route (or the download route found no object
 * path), never on the hot path.
 */
import type { FastifyRequest } from 'fastify';
import { Errors, isKodoError, KodoError } from '../errors.js';

/** One route: its pattern as a RegExp over the path, and its methods. */
interface RoutePattern {
  re: RegExp;
  methods: Set<string>;
}

/** `/mkblk/:blockSize` → `^/mkblk/[^/]*$`; `*` matches the rest of the path. */
function patternOf(url: string): RegExp {
  const body = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`);
}

/** The methods each route pattern of an app answers; see the module comment. */
export class AllowedMethods {
  private readonly routes = new Map<string, RoutePattern>();

  /**
   * The methods of every route of `table` (entries' `method` and `url`, route-table syntax). `rootHint`: added to
   * the 405 of `GET /` (a person who opened the API port in a browser: where the console and the docs are).
   */
  constructor(
    table: ReadonlyArray<{ method: string | string[]; url: string }>,
    private readonly rootHint?: string,
  ) {
    for (const entry of table) {
      if (entry.url === '/*' || entry.url === '*') continue;
      const methods = Array.isArray(entry.method) ? entry.method : [entry.method];
      let route = this.routes.get(entry.url);
      if (!route) {
        route = { re: patternOf(entry.url), methods: new Set() };
        this.routes.set(entry.url, route);
      }
      for (const m of methods) route.methods.add(m.toUpperCase());
      if (route.methods.has('GET')) route.methods.add('HEAD');
    }
  }

  /** The methods some route answers for `path` (no query), sorted; empty when none. */
  methodsFor(path: string): string[] {
    const out = new Set<string>();
    for (const r of this.routes.values()) if (r.re.test(path)) for (const m of r.methods) out.add(m);
    return [...out].sort();
  }

  /**
   * `err` unless it is a 404 `noSuchRoute` for a path other methods answer: then 405 `methodNotAllowed` with
   * `Allow: <methods>`.
   */
  refine(err: unknown, request: FastifyRequest): unknown {
    if (!isKodoError(err, 'noSuchRoute')) return err;
    return this.notFound(request);
  }

  /** 405 with Allow when the path exists for other methods, else 404 `noSuchRoute`. */
  notFound(request: FastifyRequest): KodoError {
    const path = request.url.split('?')[0] ?? '/';
    const methods = this.methodsFor(path).filter((m) => m !== request.method);
    if (methods.length === 0) return Errors.noSuchRoute();
    const hint = path === '/' && (request.method === 'GET' || request.method === 'HEAD') && this.rootHint ? ` (${this.rootHint})` : '';
    return Errors.methodNotAllowed(`${request.method} ${path}${hint}`).withHeaders({ allow: methods.join(', ') });
  }
}
