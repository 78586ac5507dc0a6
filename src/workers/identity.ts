/**
 * The identity of one Granary process sharing a data dir with others (worker processes of `granary serve`, or
 * the nodes of a cluster): `owner` names it in the leases table and on claimed queue rows; `tag` (file-name
 * safe) marks its per-process files (staging `tmp/<tag>.<id>.part`, fop temp dirs `fop-tmp/<tag>.<random>/`),
 * so a process cleans up only what a dead process left, never another live worker's uploads in flight.
 *
 * owner = `<host>:<pid>:<nonce>`, tag = `<pid>-<nonce>`; the nonce tells apart two servers of one process (tests)
 * and a reused pid. `<host>` is the host name and, after `@`, a short hash of the kernel's boot id and this
 * process's pid namespace: pids are compared (`processGone`) only between processes that see the same pids. Two
 * cluster nodes with the same host name (containers with host networking, copied VM images) then never take each
 * other's pids for their own — such a mistake would take work from a live node and run it twice.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Lease } from '../ports/leases.js';

/** `/proc` facts that tell one pid namespace of one boot of one machine from any other ('' where unreadable). */
function pidSpace(): string {
  const read = (f: () => string): string => {
    try {
      return f().trim();
    } catch {
      return '';
    }
  };
  const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
  const ns = read(() => readlinkSync('/proc/self/ns/pid'));
  return createHash('sha256').update(`${boot}\n${ns}`).digest('hex').slice(0, 8);
}

/** This process's `<host>` part of owners (see the module comment); computed once. */
let hostId: string | undefined;

export interface ProcessIdentity {
  owner: string;
  tag: string;
  host: string;
  pid: number;
  /** Worker slot 0…N−1 given by the primary (GRANARY_WORKERS > 1); undefined for a single process. */
  slot?: number;
}

/** A fresh identity for this start of the server. */
export function newIdentity(slot?: number): ProcessIdentity {
  const host = (hostId ??= `${hostname() || 'localhost'}@${pidSpace()}`);
  const nonce = randomBytes(6).toString('hex');
  return { owner: `${host}:${process.pid}:${nonce}`, tag: `${process.pid}-${nonce}`, host, pid: process.pid, ...(slot !== undefined ? { slot } : {}) };
}

/** host, pid and tag of an owner string, or undefined when it is not one of ours (an offline store, garbage). */
export function parseOwner(owner: string): { host: string; pid: number; tag: string } | undefined {
  const m = /^(.*):(\d+):([0-9a-f]+)$/.exec(owner);
  if (!m) return undefined;
  const [, host = '', pid = '', nonce = ''] = m;
  return { host, pid: Number(pid), tag: `${pid}-${nonce}` };
}

/** Owners of the servers running in this process now (tests run several in one process). */
const localOwners = new Set<string>();

/** Records that `owner` runs in this process (`live`) or no longer does. */
export function markLocal(owner: string, live: boolean): void {
  if (live) localOwners.add(owner);
  else localOwners.delete(owner);
}

/** Whether process `pid` of this host exists (EPERM: it exists, owned by someone else). */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the process holding `lease` (a `process:` lease) is gone, at `nowMs`:
 * - on this host, its pid no longer exists, or is this process's own pid but not one of the servers running here
 *   (a container restarted with the same pid) → dead at once (no need to wait for the expiry: a killed worker's jobs are resumed by the next look of
 *   the reaper);
 * - on this host with its pid alive but its lease expired: a process stalled (event loop blocked, machine
 *   suspended) is given `graceMs` more — taking its work would run it twice — after which it counts as dead
 *   (the pid may have been reused by another program);
 * - on another host (a cluster node): dead once its lease expired.
 */
export function processGone(lease: Lease, nowMs: number, graceMs: number, self: ProcessIdentity): boolean {
  const who = parseOwner(lease.owner);
  if (who && who.host === self.host) {
    if (who.pid === self.pid) return !localOwners.has(lease.owner);
    if (!pidExists(who.pid)) return true;
    return lease.expiresMs + graceMs <= nowMs;
  }
  return lease.expiresMs <= nowMs;
}
