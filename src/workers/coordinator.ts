/**
 * Coordination of the processes sharing one metadata store (the GRANARY_WORKERS worker processes of one data
 * dir, or the nodes of a cluster sharing PostgreSQL):
 *
 * - Membership: each process holds the lease `process:<owner>` (ports/leases.ts) from its start to its stop,
 *   renewed every ttl/3 (GRANARY_LEASE_SECONDS). Queue rows it claims carry its owner; they are taken back only
 *   once that lease is gone (workers/recovery.ts).
 * - Singletons: work that must run in exactly one process (the expiry sweeper, the blob sweep, the scrubber, the
 *   reaper) runs only while this process holds the singleton's lease. Every ttl/3 each process renews the leases
 *   it holds and tries to take the free or lapsed ones; a singleton whose lease was lost is stopped at once (its
 *   holder may have stalled longer than the lease). So a singleton runs once, and moves to another process within
 *   about one ttl when its holder dies (at once when the reaper sees a dead pid on this host).
 * - Wake-ups: MetaStore.dataVersion (SQLite's `PRAGMA data_version`, PostgreSQL's LISTEN count, store/postgres/
 *   wake.ts) is polled every WATCH_MS; when another process wrote, the `onForeignWrite` listeners look for
 *   work (a job queued through worker A is taken by an idle worker B).
 *
 * Times come from `clock` (the real clock: liveness is about real time, not the Clock tests move).
 */
import type { Logger } from 'pino';
import type { Clock } from '../ports/clock.js';
import { processLease } from '../ports/leases.js';
import type { MetaStore } from '../ports/meta.js';
import { markLocal, type ProcessIdentity } from './identity.js';
import { releaseDeadProcesses } from './recovery.js';

/** How often other processes' writes are looked for, ms. */
const WATCH_MS = 200;

/** Stops a singleton's work (may wait for it to wind down). */
export type StopWork = () => void | Promise<void>;

interface Singleton {
  name: string;
  start: () => Promise<StopWork>;
  stop?: StopWork;
  /** A start or stop in progress (ticks do not overlap it). */
  busy?: Promise<void>;
}

export class Coordinator {
  private readonly singletons: Singleton[] = [];
  private readonly listeners: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private version = 0;
  private left = false;

  /** `ttlMs`: lease lifetime (renewed every ttl/3). */
  constructor(
    private readonly meta: MetaStore,
    readonly identity: ProcessIdentity,
    readonly ttlMs: number,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Registers this process (its `process:` lease) and starts the renewal and the write watcher. */
  async join(): Promise<void> {
    markLocal(this.identity.owner, true);
    await this.meta.leases.acquire(processLease(this.identity.owner), this.identity.owner, this.ttlMs, this.clock.nowMs());
    this.timer = setInterval(() => void this.tick(), Math.max(Math.floor(this.ttlMs / 3), 50));
    this.timer.unref();
    this.version = this.meta.dataVersion();
    this.watcher = setInterval(() => this.watch(), WATCH_MS);
    this.watcher.unref();
  }

  /**
   * Runs `start` in this process while it holds the lease `name` (tried now, then every ttl/3): `start` begins the
   * work and resolves with its stop function, called when the lease is lost or at `leave`.
   */
  async singleton(name: string, start: () => Promise<StopWork>): Promise<void> {
    const s: Singleton = { name, start };
    this.singletons.push(s);
    await this.tryTake(s);
  }

  /** Calls `listener` whenever another process has written to the store (a cheap poll; may be spurious). */
  onForeignWrite(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Whether this process runs the singleton `name` now. */
  holds(name: string): boolean {
    return this.singletons.some((s) => s.name === name && s.stop !== undefined);
  }

  private watch(): void {
    let v: number;
    try {
      v = this.meta.dataVersion();
    } catch {
      return; // closed or busy: the next look
    }
    if (v === this.version) return;
    this.version = v;
    for (const l of this.listeners) {
      try {
        l();
      } catch (err) {
        this.log.warn({ err }, 'workers: a wake-up listener failed');
      }
    }
  }

  /** Takes (and starts) a free singleton, or renews (and keeps) one held; stops one whose lease was lost. */
  private async tryTake(s: Singleton): Promise<void> {
    if (s.busy) return;
    const run = async (): Promise<void> => {
      const now = this.clock.nowMs();
      if (s.stop) {
        if (await this.meta.leases.renew(s.name, this.identity.owner, this.ttlMs, now)) return;
        this.log.warn({ singleton: s.name, owner: this.identity.owner }, 'workers: singleton lease lost; stopping it here');
        const stop = s.stop;
        s.stop = undefined;
        await stop();
        return;
      }
      if (this.left || !(await this.meta.leases.acquire(s.name, this.identity.owner, this.ttlMs, now))) return;
      // Debug: routine at every start (the start banner is the operator's line); a lease lost or a failed start warns.
      this.log.debug({ singleton: s.name, owner: this.identity.owner, slot: this.identity.slot }, 'workers: singleton started here');
      try {
        s.stop = await s.start();
      } catch (err) {
        this.log.error({ err, singleton: s.name }, 'workers: singleton failed to start; giving its lease back');
        await this.meta.leases.release(s.name, this.identity.owner);
      }
    };
    s.busy = run()
      .catch((err: unknown) => this.log.warn({ err, singleton: s.name }, 'workers: lease check failed'))
      .finally(() => {
        s.busy = undefined;
      });
    await s.busy;
  }

  private tick(): Promise<void> {
    if (this.left) return Promise.resolve();
    this.ticking ??= (async () => {
      try {
        const owner = this.identity.owner;
        const name = processLease(owner);
        if (!(await this.meta.leases.renew(name, owner, this.ttlMs, this.clock.nowMs()))) {
          // Presumed dead by another process (stalled past the lease): our claimed rows may have been queued
          // again; every later state change of them fails (owner checks), and we register anew.
          this.log.warn({ owner }, 'workers: process lease was lost (stalled?); registering again');
          await this.meta.leases.acquire(name, owner, this.ttlMs, this.clock.nowMs());
        }
        // Leases of processes that are gone (a killed worker) are dropped here, so its singletons move at once.
        const dead = await releaseDeadProcesses(this.meta, this.identity, this.clock, this.ttlMs);
        if (dead.length > 0) this.log.warn({ owners: dead }, 'workers: processes gone; their leases released');
        for (const s of this.singletons) await this.tryTake(s);
      } catch (err) {
        this.log.warn({ err }, 'workers: lease renewal failed');
      } finally {
        this.ticking = undefined;
      }
    })();
    return this.ticking;
  }

  /** Stops every singleton held here, then gives up every lease of this process. */
  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    clearInterval(this.timer);
    clearInterval(this.watcher);
    await this.ticking;
    await Promise.all(this.singletons.map((s) => s.busy));
    await Promise.all(
      this.singletons.map(async (s) => {
        const stop = s.stop;
        s.stop = undefined;
        if (stop) await stop();
      }),
    );
    await this.meta.leases.releaseAll(this.identity.owner).catch((err: unknown) => this.log.warn({ err }, 'workers: releasing leases failed'));
    markLocal(this.identity.owner, false);
  }
}
