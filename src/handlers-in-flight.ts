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

/** Handlers of `app` running now. */
export interface HandlersInFlight {
  readonly running: number;
  /** Resolves once no handler runs (at once when none does). */
  idle(): Promise<void>;
}

/**
 * Counts the handlers of every route `app` registers from now on (call before registering routes; scopes
 * registered later inherit it): a handler that returns a promise runs until it settles. `app.close()` then waits
 * for `idle()`.
 */
export function trackHandlers(app: FastifyInstance): HandlersInFlight {
  let running = 0;
  let waiters: Array<() => void> = [];
  const ended = (): void => {
    running--;
    if (running > 0) return;
    const wake = waiters;
    waiters = [];
    for (const w of wake) w();
  };
  const tracker: HandlersInFlight = {
    get running() {
      return running;
    },
    idle() {
      return running === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const result: unknown = handler.call(this, request, reply);
      if (result instanceof Promise) {
        running++;
        result.then(ended, ended);
      }
      return result;
    } as RouteHandlerMethod;
  });
  app.addHook('onClose', async () => {
    if (running > 0) app.log.info({ handlers: running }, 'closing: waiting for handlers still running');
    await tracker.idle();
  });
  return tracker;
}
