/**
 * Connection handling the HTTP server leaves to us: graceful shutdown of keep-alive connections, and a lingering
 * close after an early answer.
 *
 * Shutdown: Node's `server.close()` only closes connections it deems idle, and Node 20 still counts a keep-alive
 * connection as busy after its last response (seen with node:http and fetch clients), so a stop would wait for the
 * keep-alive timeout. This tracks requests per connection: on `drain()`, connections with no request in flight are
 * ended at once, the others right after their response.
 *
 * Lingering close (what nginx calls `lingering_close`): a refusal answered before its request body ended (a bad
 * token, a malformed multipart part, a block larger than declared) says `Connection: close`, and Node then closes
 * the socket as soon as the answer is written. The client is usually still sending: the bytes arriving at a closed
 * socket make the kernel answer with a TCP reset, and a client that had not yet read the answer loses it (it sees
 * EPIPE or ECONNRESET instead of the JSON error; measured: more than half of 200 refused 4 MiB form uploads on
 * loopback). So such a connection is half-closed instead: the answer and a FIN go out, the rest of the body is read
 * and dropped, and the socket closes once the body has ended, the client has closed its side, or `lingerMs` have
 * passed (then with a reset, as before). A request Node's HTTP parser refuses (a malformed or oversized head,
 * server.ts `clientError`) is answered and closed the same way through `answerThenClose`, the rest of it dropped by
 * the parser.
 */
import type { IncomingMessage, Server } from 'node:http';
import { Socket } from 'node:net';

/** Node's IncomingMessage, with the method its HTTP server calls on a body left unread (lib/_http_incoming.js). */
type DumpableRequest = IncomingMessage & { _dump(): void };

export interface ConnectionTracker {
  /** Ends idle connections now and busy ones as soon as their responses are sent; lingering ones close now. */
  drain(): void;
  /** Destroys every connection now, busy or not (a stop past GRANARY_STOP_TIMEOUT); returns how many. */
  destroyAll(): number;
}

export interface ConnectionOptions {
  /**
   * Milliseconds a connection whose answer came before its request body ended goes on reading and dropping it
   * (GRANARY_LINGER_TIMEOUT; 0: close at once).
   */
  lingerMs: number;
}

/** What `trackConnections` keeps per server: reached from a socket through `socket.server` (Node sets it). */
interface Tracking {
  /** Half-closes `socket` and drops what it still sends, closing it after at most the linger time. */
  linger(socket: Socket): boolean;
  lingering: Set<Socket>;
}
const tracked = new WeakMap<object, Tracking>();

/**
 * Sends `answer` (a whole HTTP response) on a connection whose request Node's HTTP parser refused, then closes it:
 * lingering (see the module comment) when the server is tracked and `linger` is true, else as soon as the answer is
 * written. Called again for the same connection while it lingers (the parser refuses each further piece of the
 * dropped request), it does nothing.
 */
export function answerThenClose(socket: Socket, answer: string, linger: boolean): void {
  const server = (socket as Socket & { server?: object | null }).server;
  const tracking = server ? tracked.get(server) : undefined;
  if (tracking?.lingering.has(socket)) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.write(answer);
  if (!(linger && tracking?.linger(socket))) socket.end(() => socket.destroy());
}

/** Starts tracking the connections of `server` (its own and those emitted to it as `connection`). */
export function trackConnections(server: Server, opts: ConnectionOptions): ConnectionTracker {
  const inFlight = new Map<Socket, number>();
  /** The latest request of each connection: the one whose answer may close it. */
  const latest = new WeakMap<Socket, IncomingMessage>();
  const lingering = new Set<Socket>();
  let draining = false;

  /** Half-closes `socket` after an answer and closes it once the client ends, or after `opts.lingerMs`. */
  const linger = (socket: Socket): boolean => {
    if (opts.lingerMs <= 0 || draining || socket.destroyed) return false;
    lingering.add(socket);
    const close = (): void => {
      socket.destroy();
    };
    const timer = setTimeout(close, opts.lingerMs);
    socket.once('close', () => {
      clearTimeout(timer);
      lingering.delete(socket);
    });
    socket.once('end', close);
    socket.end(); // the FIN follows the answer already queued
    return true;
  };
  tracked.set(server, { linger, lingering });

  /** Lingers after an answer that came before `req`'s body ended, dropping the rest of that body. */
  const lingerOnBody = (socket: Socket, req: IncomingMessage): boolean => {
    if (!linger(socket)) return false;
    req.once('end', () => socket.destroy()); // never for a destroyed request: its client's close or the timer ends it
    // Node's HTTP parser goes on feeding the body to `req` until its end. `_dump()` is what Node itself calls on a
    // body nobody read: the parser drops what comes next, even for a request that pipeline() destroyed (its pushes
    // would fail and pause the socket). The socket resumes in case such a push paused it already.
    (req as DumpableRequest)._dump();
    socket.resume();
    return true;
  };

  // Node closes a connection after an answer that says `Connection: close` with `destroySoon()`: one override per
  // server, set on each of its sockets.
  function destroySoon(this: Socket): void {
    const req = latest.get(this);
    if (!(req && !req.complete && lingerOnBody(this, req))) Socket.prototype.destroySoon.call(this);
  }

  server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
    socket.destroySoon = destroySoon;
  });
  server.on('request', (req: IncomingMessage, res) => {
    const socket = req.socket;
    latest.set(socket, req);
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
      for (const socket of lingering) socket.destroy();
    },
    destroyAll() {
      draining = true;
      const sockets = new Set([...inFlight.keys(), ...lingering]);
      for (const socket of sockets) socket.destroy();
      return sockets.size;
    },
  };
}
