/**
 * Route handlers still running: an app's `close()` resolves only once they have all ended, so a stop closes the
 * stores after them (main.ts closes the listeners first) — unless the stop gave up on them.
 *
 * A handler outlives its connection when the client leaves mid-request: a form upload whose client vanished after
 * the last byte goes on to its commit, a fetch goes on reading its origin. Closing the listener waits only for
 * connections, so such a handler used to meet a closed database ("The database connection is not open", logged as
 * an unexpected error; seen when the bench's wrk stopped in the middle of uploads, just before the bench stopped
 * Granary). Handlers end on their own limits (timeouts, the body's end or its error), so the wait is bounded by
 * them; a stop past GRANARY_STOP_TIMEOUT (main.ts) calls `abandonHandlers` and the wait ends at once.
 */
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';

/** A handler still running: its request id (as in the access log), method and route pattern (no query: tokens). */
export interface RunningHandler {
  reqId: string;
  method: string;
  route: string;
}

interface Tracking {
  running: Map<Promise<unknown>, RunningHandler>;
  abandon: () => void;
}

const tracked = new WeakMap<FastifyInstance, Tracking>();

/**
 * Keeps the promise of every handler of the routes `app` registers from now on (call before registering routes;
 * scopes registered later inherit it) until it settles; `app.close()` then waits for those still running, until
 * they end or `abandonHandlers(app)` is called.
 */
export function trackHandlers(app: FastifyInstance): void {
  const running = new Map<Promise<unknown>, RunningHandler>();
  let gaveUp = false;
  let release: () => void = () => undefined;
  const abandoned = new Promise<void>((resolve) => (release = resolve));
  const abandon = (): void => {
    gaveUp = true;
    release();
  };
  tracked.set(app, { running, abandon });
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const result: unknown = handler.call(this, request, reply);
      if (result instanceof Promise) {
        running.set(result, { reqId: String(request.id), method: request.method, route: route.url });
        const forget = (): void => void running.delete(result);
        result.then(forget, forget);
      }
      return result;
    } as RouteHandlerMethod;
  });
  app.addHook('onClose', async () => {
    if (running.size > 0) app.log.info({ handlers: running.size }, 'closing: waiting for handlers still running');
    while (running.size > 0 && !gaveUp) await Promise.race([Promise.allSettled([...running.keys()]), abandoned]);
  });
}

/**
 * Ends the wait of `app.close()` for its handlers still running (a stop past its timeout) and returns them; they
 * run on and fail on their own (their connections and store calls are aborted by the caller). Idempotent.
 */
export function abandonHandlers(app: FastifyInstance): RunningHandler[] {
  const t = tracked.get(app);
  if (!t) return [];
  t.abandon();
  return [...t.running.values()];
}
