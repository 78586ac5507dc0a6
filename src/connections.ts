/**
 * Graceful shutdown of keep-alive connections. Node's `server.close()` only closes connections it deems idle, and
 * Node 20 still counts a keep-alive connection as busy after its last response (seen with node:http and fetch
 * clients), so a stop would wait for the keep-alive timeout. This tracks requests per connection: on `drain()`,
 * connections with no request in flight are ended at once, the others right after their response.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionTracker {
  /** Ends idle connections now and busy ones as soon as their responses are sent. */
  drain(): void;
}

/** Starts tracking the connections of `server`. */
export function trackConnections(server: Server): ConnectionTracker {
  const inFlight = new Map<Socket, number>();
  let draining = false;
  server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const n = (inFlight.get(socket) ?? 1) - 1;
      inFlight.set(socket, n);
      if (draining && n === 0) socket.end();
    });
  });
  return {
    drain() {
      draining = true;
      for (const [socket, n] of inFlight) if (n === 0) socket.end();
    },
  };
}
