/**
 * Wake-ups across nodes: a dedicated `pg.Client` (not from the pool: a pooled connection would be handed to
 * queries and its LISTEN lost) that runs `LISTEN granary_wake` and counts the notifications it receives. The
 * triggers of schema.ts send one at the commit of every transaction that changed a row of tasks (jobs and fetch
 * tasks), pipelines, event_outbox (or inserted/deleted a lease), on any node, this one included. The count is
 * MetaStore.dataVersion: workers/coordinator.ts polls it and lets idle workers look for work when it moved.
 *
 * The connection may drop (server restart, failover, `pg_terminate_backend`, a network cut). It never crashes
 * the process: the client is dropped and a new one connects after a back-off (`retryMinMs`, doubling up to
 * `retryMaxMs`, with jitter) until it succeeds. A connection that went silent without closing (a peer or network
 * that stopped answering) is found by a heartbeat: `SELECT 1` every `heartbeatMs`, the connection counted lost when
 * it gets no answer within `heartbeatTimeoutMs` (a connection attempt gives up after the same time). Notifications sent while no client listened are lost, so while
 * disconnected the version is bumped every `disconnectedPollMs` (workers then look for work as if polling), and
 * once more on reconnection.
 */
import { backoffMs } from '../../backoff.js';
import pg from 'pg';

/** The channel of schema.ts's `granary_wake()` trigger function. */
export const WAKE_CHANNEL = 'granary_wake';

export interface PgWakeOptions {
  /** First reconnection delay after the connection dropped, ms (default 100). */
  retryMinMs?: number;
  /** Longest reconnection delay, ms (default 5000). */
  retryMaxMs?: number;
  /** While disconnected, the version moves every this many ms (default 1000). */
  disconnectedPollMs?: number;
  /** Told of a lost connection and of each failed reconnection (a log line; never thrown). */
  onError?: (err: unknown) => void;
  /** Interval of the heartbeat query, ms (default 15000). */
  heartbeatMs?: number;
  /** A heartbeat or a connection attempt without an answer within this is a lost connection, ms (default 10000). */
  heartbeatTimeoutMs?: number;
  /** Name shown in pg_stat_activity (default `granary-wake`). */
  applicationName?: string;
}

/** The listening connection of one process. */
export class PgWakeListener {
  private client: pg.Client | undefined;
  private n = 0;
  private closed = false;
  /** Failed connections in a row (the back-off's retry number, backoff.ts); 0 once connected. */
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly heartbeatTimer: NodeJS.Timeout;
  private beating = false;
  private readonly opts: Required<Omit<PgWakeOptions, 'onError'>> & Pick<PgWakeOptions, 'onError'>;

  private constructor(
    private readonly url: string,
    opts: PgWakeOptions,
  ) {
    this.opts = {
      retryMinMs: opts.retryMinMs ?? 100,
      retryMaxMs: opts.retryMaxMs ?? 5000,
      disconnectedPollMs: opts.disconnectedPollMs ?? 1000,
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      heartbeatTimeoutMs: opts.heartbeatTimeoutMs ?? 10_000,
      applicationName: opts.applicationName ?? 'granary-wake',
      ...(opts.onError ? { onError: opts.onError } : {}),
    };
    this.heartbeatTimer = setInterval(() => this.heartbeat(), this.opts.heartbeatMs);
    this.heartbeatTimer.unref();
  }

  /** Connects to `url` and listens before it returns; throws when the first connection fails. */
  static async open(url: string, opts: PgWakeOptions = {}): Promise<PgWakeListener> {
    const wake = new PgWakeListener(url, opts);
    try {
      await wake.connect();
    } catch (err) {
      await wake.close();
      throw err;
    }
    return wake;
  }

  /** Notifications received so far, plus the bumps made while disconnected and at reconnection. */
  version(): number {
    return this.n;
  }

  /** Whether a client is listening now. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /** The server process id of the listening connection (pg_stat_activity.pid), undefined while disconnected. */
  backendPid(): number | undefined {
    return (this.client as (pg.Client & { processID?: number }) | undefined)?.processID;
  }

  /** Stops listening and reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pollTimer);
    clearInterval(this.heartbeatTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Opens a client, listens, and makes it the current one (ended again when closed meanwhile). */
  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.opts.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: this.opts.heartbeatTimeoutMs,
    });
    client.on('notification', (msg) => {
      if (msg.channel === WAKE_CHANNEL) this.n++;
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('the wake-up connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  /** Asks the current client for an answer; none in time (or an error) means the connection is lost. */
  private heartbeat(): void {
    const client = this.client;
    if (!client || this.beating) return;
    this.beating = true;
    client
      // query_timeout per query: a pg option its types leave out.
      .query({ text: 'SELECT 1', query_timeout: this.opts.heartbeatTimeoutMs } as pg.QueryConfig)
      .then(
        () => undefined,
        (err: unknown) => this.lost(client, err),
      )
      .finally(() => {
        this.beating = false;
      });
  }

  /** The current client failed or ended: drop it, poll, and reconnect. Events of an older client are ignored. */
  private lost(client: pg.Client, err: unknown): void {
    if (this.closed || client !== this.client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    this.opts.onError?.(err);
    this.n++;
    this.pollTimer ??= setInterval(() => this.n++, this.opts.disconnectedPollMs);
    this.pollTimer.unref();
    this.scheduleReconnect();
  }

  /** Tries to connect again after the back-off of the failures so far (backoff.ts: doubling, capped, jittered). */
  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    this.failures++;
    const delay = backoffMs({ firstMs: this.opts.retryMinMs, maxMs: this.opts.retryMaxMs, jitter: 0.25 }, this.failures);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().then(
        () => {
          if (this.closed) return;
          this.failures = 0;
          clearInterval(this.pollTimer);
          this.pollTimer = undefined;
          this.n++; // notifications of the gap are lost: look once more
        },
        (err: unknown) => {
          this.opts.onError?.(err);
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }
}
