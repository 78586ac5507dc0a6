/**
 * Least-connections hand-off of the API port (primary side; docs/operations/workers.md).
 *
 * node:cluster's round-robin gives each new connection to the next worker that has taken the previous one, so a
 * burst of connections opened at once (a proxy's upstream pool, a load generator: 16 keep-alive connections) ends up
 * spread as the workers happen to answer: 3:1 in one measured run, with one worker's core saturated while the other
 * idled. Instead the primary itself listens on GRANARY_PORT (`pauseOnConnect`: it never reads a byte) and hands
 * every accepted socket to the accepting worker with the fewest connections open (ties in turn), over the cluster
 * IPC channel (`worker.send(msg, socket)`). The worker serves it like one it accepted itself (workers/handoff.ts)
 * and reports the sockets that closed, so the counts follow the connections, not only their arrival.
 *
 * A connection that arrives while no worker accepts (start-up, every worker restarting) waits, at most
 * `maxWaiting` of them (later ones are closed); a hand-off that fails (the worker is exiting) closes the socket.
 * The console listener (GRANARY_CONSOLE_PORT) is handed off the same way on a channel of its own (`console`; the
 * API port's is `api`): the primary binds both ports before anything else, so a port it cannot bind fails the start
 * before any worker runs or any key pair is generated (workers/primary.ts).
 */
import type { Worker } from 'node:cluster';
import net from 'node:net';
import type { Logger } from 'pino';

/** IPC messages between the primary and a worker (`granary` field). */
export const HANDOFF = {
  /** primary → worker, with the socket as the message's handle. */
  connection: 'granary:connection',
  /** worker → primary: `n` sockets it was handed have closed. */
  closed: 'granary:closed',
  /** worker → primary: it serves handed sockets from now on. */
  accepting: 'granary:accepting',
  /** worker → primary: it is stopping; sockets handed to it now would be closed. */
  stopping: 'granary:stopping',
} as const;

/** Which listener a hand-off message is about: the Kodo API port, the console port or the S3 port. */
export type HandoffChannel = 'api' | 'console' | 's3';

/** A hand-off IPC message. */
export interface HandoffMessage {
  granary: (typeof HANDOFF)[keyof typeof HANDOFF];
  channel: HandoffChannel;
  n?: number;
}

/** Whether `msg` is a hand-off message of `kind` on `channel`. */
export function isHandoff(msg: unknown, kind: HandoffMessage['granary'], channel: HandoffChannel): msg is HandoffMessage {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as { granary?: unknown; channel?: unknown };
  return m.granary === kind && m.channel === channel;
}

/** The primary's listener and its per-worker connection counts; see the module comment. */
export class ConnectionBalancer {
  private readonly server: net.Server;
  /** Accepting workers → sockets handed to them and not reported closed yet. */
  private readonly open = new Map<Worker, number>();
  private readonly waiting: net.Socket[] = [];
  /** Where the search for the least loaded worker starts: ties go in turn. */
  private turn = 0;
  private closing = false;

  constructor(
    private readonly log: Logger,
    /** The listener whose connections this hands off (its IPC messages carry it). */
    private readonly channel: HandoffChannel = 'api',
    private readonly maxWaiting = 1024,
  ) {
    this.server = net.createServer({ pauseOnConnect: true }, (socket) => {
      // A client that resets while its socket waits or travels must not become an unhandled 'error'.
      socket.on('error', () => socket.destroy());
      this.route(socket);
    });
  }

  /** Listens on `port` (0: any free port) and `host`; resolves with the port, rejects as `net.Server.listen` does. */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ port, host }, () => {
        this.server.off('error', reject);
        this.server.on('error', (err) => this.log.error({ err, channel: this.channel }, 'a listener failed'));
        const address = this.server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  }

  /**
   * Follows `worker`'s hand-off messages: from its `accepting` on it gets sockets (`onAccepting` is called then),
   * its `closed` reports lower its count, and `stopping` takes it out.
   */
  track(worker: Worker, onAccepting: () => void): void {
    worker.on('message', (msg: unknown) => {
      if (isHandoff(msg, HANDOFF.accepting, this.channel)) {
        if (!this.open.has(worker)) this.open.set(worker, 0);
        onAccepting();
        while (this.waiting.length > 0 && !this.closing) this.route(this.waiting.shift() as net.Socket);
      } else if (isHandoff(msg, HANDOFF.closed, this.channel)) {
        const n = this.open.get(worker);
        if (n !== undefined) this.open.set(worker, Math.max(0, n - (msg.n ?? 1)));
      } else if (isHandoff(msg, HANDOFF.stopping, this.channel)) {
        this.remove(worker);
      }
    });
  }

  /** `worker` is gone: it gets no more sockets (those it held went with it). */
  remove(worker: Worker): void {
    this.open.delete(worker);
  }

  /** Stops accepting connections; waiting ones are closed. Handed ones stay with their workers. */
  close(): Promise<void> {
    this.closing = true;
    for (const socket of this.waiting.splice(0)) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private route(socket: net.Socket): void {
    const worker = this.leastLoaded();
    if (!worker) {
      if (this.closing || this.waiting.length >= this.maxWaiting) socket.destroy();
      else this.waiting.push(socket);
      return;
    }
    this.open.set(worker, (this.open.get(worker) ?? 0) + 1);
    worker.send({ granary: HANDOFF.connection, channel: this.channel } satisfies HandoffMessage, socket, (err: Error | null) => {
      if (!err) return;
      socket.destroy();
      const n = this.open.get(worker);
      if (n !== undefined) this.open.set(worker, Math.max(0, n - 1));
    });
  }

  private leastLoaded(): Worker | undefined {
    const workers = [...this.open.keys()].filter((w) => w.isConnected());
    if (workers.length === 0) return undefined;
    let best: Worker | undefined;
    let bestOpen = Infinity;
    for (let i = 0; i < workers.length; i++) {
      const w = workers[(this.turn + i) % workers.length] as Worker;
      const n = this.open.get(w) ?? 0;
      if (n < bestOpen) {
        best = w;
        bestOpen = n;
      }
    }
    this.turn = (this.turn + 1) % workers.length;
    return best;
  }
}
