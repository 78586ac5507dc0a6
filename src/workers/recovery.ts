/**
 * Taking back what a dead process left (a killed worker, a crashed server), and nothing a live one holds:
 *
 * 1. Its leases: every `process:` lease whose process is gone (identity.ts `processGone`: a pid of this host that
 *    no longer exists, or a lease lapsed long enough) is dropped with the other leases of that owner (its
 *    singletons become free for the next look of the live processes).
 * 2. Its queue rows: running tasks of every kind (jobs and async-fetch tasks: one queue, ports/tasks.ts) and
 *    event deliveries whose owner holds no process lease go back to waiting (`requeueAbandoned`, one atomic
 *    UPDATE for the task queue and one for the outbox: a live worker's rows are never touched); notifying jobs
 *    lose their owner and are notified again by whichever JobWorker claims them.
 * 3. Its files: staging files (`tmp/<tag>.…`) and fop temp dirs (`fop-tmp/<tag>.…`, their ffmpeg subprocesses
 *    killed) of tags no live process has.
 *
 * Run by every process at its start (before it serves), and every ttl/3 by the process holding the `reaper`
 * singleton, so a killed worker's jobs are resumed by the others while the primary restarts it.
 */
import type { Granary } from '../context.js';
import type { MetaStore } from '../ports/meta.js';
import { clearFopTemp } from '../fops/execute.js';
import type { Clock } from '../ports/clock.js';
import { processLease } from '../ports/leases.js';
import { parseOwner, processGone, type ProcessIdentity } from './identity.js';

/** What one pass took back. */
export interface Recovered {
  /** Owners found dead (their leases dropped). */
  deadOwners: string[];
  jobs: number;
  fetchTasks: number;
  events: number;
  /** Replication outbox rows taken back. */
  replication: number;
  stagingFiles: number;
  /** ffmpeg/ffprobe subprocesses of dead processes killed. */
  subprocesses: number;
}

/** How long past its expiry the lease of a live pid of this host is still trusted (see `processGone`), in ttls. */
const STALL_GRACE_TTLS = 1;

/** Tags of the processes holding a `process:` lease now (this one included). */
async function liveTags(g: Granary, self: ProcessIdentity): Promise<ReadonlySet<string>> {
  const tags = new Set([self.tag]);
  for (const l of await g.meta.leases.list('process:')) {
    const who = parseOwner(l.owner);
    if (who) tags.add(who.tag);
  }
  return tags;
}

/**
 * Step 1 alone (cheap: one read of the process leases and a signal-0 per pid): drops every lease of the processes
 * that are gone; returns their owners. Every process runs it at each lease tick (coordinator.ts), so the
 * singletons of a killed worker are free for the others at their next look, whoever held the reaper.
 */
export async function releaseDeadProcesses(meta: MetaStore, self: ProcessIdentity, clock: Clock, ttlMs: number): Promise<string[]> {
  const deadOwners: string[] = [];
  const now = clock.nowMs();
  for (const lease of await meta.leases.list('process:')) {
    if (lease.owner === self.owner || lease.name !== processLease(lease.owner)) continue;
    if (!processGone(lease, now, STALL_GRACE_TTLS * ttlMs, self)) continue;
    await meta.leases.releaseAll(lease.owner);
    deadOwners.push(lease.owner);
  }
  return deadOwners;
}

/** One recovery pass (see the module comment); `clock` is the coordination clock, `ttlMs` the lease lifetime. */
export async function recoverFromDeadProcesses(g: Granary, self: ProcessIdentity, clock: Clock, ttlMs: number): Promise<Recovered> {
  const deadOwners = await releaseDeadProcesses(g.meta, self, clock, ttlMs);
  const queueNow = g.clock.nowMs();
  const { job: jobs, fetch: fetchTasks } = await g.meta.tasks.requeueAbandoned(queueNow);
  const events = await g.meta.events.requeueAbandoned(queueNow);
  const replication = await g.meta.replication.requeueAbandoned(queueNow);
  const live = (): Promise<ReadonlySet<string>> => liveTags(g, self);
  const stagingFiles = await g.blobs.recover(live);
  const subprocesses = await clearFopTemp(g.config.dataDir, self.tag, live);
  const out = { deadOwners, jobs, fetchTasks, events, replication, stagingFiles, subprocesses };
  if (deadOwners.length + jobs + fetchTasks + events + replication + stagingFiles + subprocesses > 0) {
    g.log.warn(out, 'workers: took back what processes that are gone left (leases, queued work, staging files)');
  }
  return out;
}
