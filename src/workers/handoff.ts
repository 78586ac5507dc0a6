/**
 * The worker side of the least-connections hand-off (workers/balancer.ts; docs/operations/workers.md).
 *
 * A worker's API server (and likewise its console server, on the `console` channel) does not listen on GRANARY_PORT: it listens on a private abstract Unix socket of its own
 * (`privateListenPath`, reachable by no one in practice; it makes the HTTP server a listening one, so its request
 * and header timeouts and idle-connection handling run as usual) and serves the sockets the primary hands it, as
 * if it had accepted them. Closed sockets are reported back in batches (one IPC message per event-loop turn), so
 * the primary knows how many connections each worker holds.
 */
import type { Server } from 'node:http';
import { Socket } from 'node:net';
import { HANDOFF, isHandoff, type HandoffChannel, type HandoffMessage } from './balancer.js';

/** Linux abstract socket name of this worker's private listener of `channel` (no file; gone with the process). */
export function privateListenPath(slot: number, channel: HandoffChannel = 'api'): string {
  return `\0granary-worker-${process.ppid}-${slot}-${process.pid}${channel === 'api' ? '' : `-${channel}`}`;
}

/** What `acceptHandedConnections` returns. */
export interface HandedConnections {
  /** Stops taking sockets (later ones are closed at once); resolves when every handed socket has closed. */
  stop(): Promise<void>;
}

/**
 * Serves the sockets the primary hands over on `channel` (the API port's, or the console port's) on `server`
 * (emitted as `connection`, then resumed: the primary never read from them) and tells the primary it accepts
 * connections. Call once the server listens.
 */
export function acceptHandedConnections(server: Server, channel: HandoffChannel = 'api'): HandedConnections {
  const sockets = new Set<Socket>();
  let stopped = false;
  let closedSinceReport = 0;
  let reportScheduled = false;
  let allClosed: (() => void) | undefined;

  const report = (): void => {
    reportScheduled = false;
    if (closedSinceReport === 0 || !process.connected) return;
    process.send?.({ granary: HANDOFF.closed, channel, n: closedSinceReport } satisfies HandoffMessage);
    closedSinceReport = 0;
  };
  const onMessage = (msg: unknown, handle: unknown): void => {
    if (!isHandoff(msg, HANDOFF.connection, channel) || !(handle instanceof Socket)) return;
    const socket = handle;
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      closedSinceReport++;
      if (!reportScheduled) {
        reportScheduled = true;
        setImmediate(report);
      }
      if (sockets.size === 0) allClosed?.();
    });
    if (stopped) {
      socket.destroy();
      return;
    }
    server.emit('connection', socket);
    socket.resume();
  };
  process.on('message', onMessage);
  process.send?.({ granary: HANDOFF.accepting, channel } satisfies HandoffMessage);

  return {
    stop() {
      if (!stopped && process.connected) process.send?.({ granary: HANDOFF.stopping, channel } satisfies HandoffMessage);
      stopped = true;
      if (sockets.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        allClosed = resolve;
      });
    },
  };
}
