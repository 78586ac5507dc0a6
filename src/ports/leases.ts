/**
 * The LeaseStore port: named leases with an expiry, the one primitive every "runs once" rule of Granary is built
 * on (workers/). A lease is held by one `owner` (a process identity, workers/identity.ts) until `expiresMs`; the
 * owner renews it (every ttl/3) while it works, and anyone may take it once it has expired. Two kinds of names:
 * - `process:<owner>`: the liveness of a process. Rows of the durable queues claimed by an owner whose process
 *   lease is gone are abandoned and queued again (the queues' `requeueAbandoned`).
 * - anything else: a singleton (`expiry-sweeper`, `scrubber`, …) that must run in exactly one process.
 *
 * Times are Unix milliseconds given by the caller (the coordination Clock). Implementation: store/sql/leases.ts
 * (table `leases`), on SQLite (embedded) and PostgreSQL (cluster mode).
 */

/** One lease as stored. */
export interface Lease {
  name: string;
  owner: string;
  /** When the lease lapses unless renewed, ms. */
  expiresMs: number;
  /** When the current owner took it, ms. */
  acquiredMs: number;
}

export interface LeaseStore {
  /**
   * Takes `name` for `owner` until `nowMs + ttlMs` when it is free, expired, or already held by `owner` (then it is
   * renewed). True when `owner` holds it afterwards. Atomic: of two concurrent callers at most one gets it.
   */
  acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /**
   * Extends a lease `owner` holds to `nowMs + ttlMs`. False when it is no longer `owner`'s (taken over after it
   * expired, or released): the caller must stop the work the lease guarded.
   */
  renew(name: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /** Gives up `name` if `owner` holds it (nothing otherwise). */
  release(name: string, owner: string): Promise<void>;
  /** Drops every lease `owner` holds (its process is known to be dead); returns how many. */
  releaseAll(owner: string): Promise<number>;
  /** Leases whose name starts with `prefix`, expired ones included (callers judge liveness). */
  list(prefix: string): Promise<Lease[]>;
}

/** The lease name of a process's liveness. */
export function processLease(owner: string): string {
  return `process:${owner}`;
}
