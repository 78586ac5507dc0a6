/**
 * Route handlers still running: an app's `close()` resolves only once they have all ended, so a stop closes the
 * stores after them (main.ts closes the listeners first).
 *
 * A handler outlives its connection when the client leaves mid-request: a form upload whose client vanished after
 * the last byte goes on to its commit, a fetch goes on reading its origin. Closing the listener waits only for
 * connections, so such a handler used to meet a closed database ("The database connection is not open", logged as
 * an unexpected error; seen when the bench's wrk stopped in the middle of uploads, just before the bench stopped
 * Granary). Handlers end on their own limits (timeouts, the body's end or its error), so the wait is bounded by
 * them.
 */
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';

/**
 * Keeps the promise of every handler of the routes `app` registers from now on (call before registering routes;
 * scopes registered later inherit it) until it settles; `app.close()` then waits for those still running.
 */
export function trackHandlers(app: FastifyInstance): void {
  const running = new Set<Promise<unknown>>();
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const result: unknown = handler.call(this, request, reply);
      if (result instanceof Promise) {
        running.add(result);
        const forget = (): void => void running.delete(result);
        result.then(forget, forget);
      }
      return result;
    } as RouteHandlerMethod;
  });
  app.addHook('onClose', async () => {
    if (running.size > 0) app.log.info({ handlers: running.size }, 'closing: waiting for handlers still running');
    while (running.size > 0) await Promise.allSettled([...running]);
  });
}
