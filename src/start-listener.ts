/**
 * `startListener(app, opts)`: the one start-up of Granary's three listeners (the Kodo API in main.ts, the S3 API in
 * s3api/server.ts, the console in console/listener.ts) once their fastify app is built: keep-alive connections
 * tracked (connections.ts, GRANARY_LINGER_TIMEOUT), then either the address listened on or, in a worker of a
 * primary (GRANARY_WORKERS > 1), the connections the primary hands over on the listener's channel
 * (workers/handoff.ts: the worker itself listens only on a private socket), and the stop and abort the server's
 * shutdown uses (stop-bound.ts).
 *
 * Errors: when the app cannot listen it is closed and `listenError` (listen-error.ts: the listener, the address
 * and the reason, e.g. EADDRINUSE) is thrown.
 */
import type { FastifyInstance } from 'fastify';
import { trackConnections } from './connections.js';
import { abandonHandlers, type RunningHandler } from './handlers-in-flight.js';
import { listenError, type ListenerName } from './listen-error.js';
import { listenQuietly } from './listen-quietly.js';
import { acceptHandedConnections, privateListenPath, type HandedConnections } from './workers/handoff.js';

/** Where and how a listener listens. */
export interface ListenerOptions {
  /** Which listener: names its hand-off channel (`api`, `s3`, `console`) and its start-up error. */
  name: ListenerName;
  host: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** In a worker of a primary: the worker's slot; it then serves the connections the primary hands over. */
  handedSlot?: number;
  /** How long a closing keep-alive connection may linger after an early answer, ms (GRANARY_LINGER_TIMEOUT). */
  lingerMs: number;
}

/** A listening listener. */
export interface StartedListener {
  /** `http://<host>:<port>` reaching it from this machine (127.0.0.1 for a wildcard host). */
  url: string;
  /** The port it listens on (the one asked for, or the one picked for 0; in a worker, the port asked for). */
  port: number;
  /** Stops accepting, ends idle keep-alive connections and waits for the others (once; later calls share it). */
  close(): Promise<void>;
  /** Destroys every connection at once and returns the handlers still running (a stop past its bound). */
  abort(): RunningHandler[];
}

/** The host part of a URL that reaches a server bound to `host` from this machine. */
export function localUrlHost(host: string): string {
  if (host === '' || host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** Starts `app` listening (or serving handed connections); resolves once it does. Rejects with `listenError`. */
export async function startListener(app: FastifyInstance, opts: ListenerOptions): Promise<StartedListener> {
  const connections = trackConnections(app.server, { lingerMs: opts.lingerMs });
  let handed: HandedConnections | undefined;
  try {
    if (opts.handedSlot !== undefined) {
      await listenQuietly(app, { path: privateListenPath(opts.handedSlot, opts.name), exclusive: true });
      handed = acceptHandedConnections(app.server, opts.name);
    } else {
      await listenQuietly(app, { port: opts.port, host: opts.host });
    }
  } catch (err) {
    await app.close();
    throw listenError(opts.name, opts.host, opts.port, err);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${localUrlHost(opts.host)}:${port}`,
    port,
    close: () =>
      (closing ??= (async () => {
        // Handed sockets are not the listener's own: their end is awaited apart (drain ends the idle ones).
        const closed = Promise.all([app.close(), handed?.stop()]);
        connections.drain();
        await closed;
      })()),
    abort: () => {
      connections.destroyAll();
      return abandonHandlers(app);
    },
  };
}
