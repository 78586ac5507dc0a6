/**
 * The queue-like stores of the PostgreSQL MetaStore, built together on one PgDb: the one task queue (tasks.ts) and
 * its two views, the job queue with its pipelines and the async-fetch tasks; the event outbox, workflow templates, leases, and the LISTEN connection whose
 * notifications (schema.ts `granary_wake`) wake idle workers on every node.
 * Each lives in its own file (tasks.ts, jobs.ts, fetch-tasks.ts, event-outbox.ts, workflow-templates.ts, leases.ts,
 * wake.ts; the shared claim life cycle in queue-table.ts), with the semantics of its SQLite counterpart.
 */
import type { EventOutbox, OutboxRows } from '../../ports/events.js';
import type { FetchTaskStore } from '../../ports/fetch-tasks.js';
import type { JobQueue } from '../../ports/job-queue.js';
import type { LeaseStore } from '../../ports/leases.js';
import type { TaskQueue } from '../../ports/tasks.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { WorkflowTemplateStore } from '../../ports/workflow-templates.js';
import type { PgDb, Queryable } from './db.js';
import { PgEventOutboxStore } from './event-outbox.js';
import { PgFetchTasks } from './fetch-tasks.js';
import { PgJobQueue } from './jobs.js';
import { PgLeases } from './leases.js';
import { PgTasks } from './tasks.js';
import { PgWakeListener, type PgWakeOptions } from './wake.js';
import { PgWorkflowTemplates } from './workflow-templates.js';

/** The event outbox, plus the write its entry changes call inside their transaction. */
export interface PgEventOutbox extends EventOutbox {
  /**
   * Inserts the events `rows` builds for `entry` on `c`, inside the transaction of the change they report (the
   * caller calls it once the change is sure to commit). Nothing when `rows` is undefined. `c` is the client
   * PgDb.tx gave the change: subscribers are told once that transaction has committed, never when it rolls back.
   */
  write(c: Queryable, rows: OutboxRows | undefined, entry: ObjectRecord): Promise<void>;
}

/** Wake-ups from other nodes (and this one): a counter moved by every `granary_wake` notification received. */
export interface PgWake {
  /**
   * The number of notifications received so far, plus bumps while the connection is down (MetaStore.dataVersion;
   * wake.ts). Only its changes mean something.
   */
  version(): number;
  close(): Promise<void>;
}

export interface PgQueues {
  tasks: TaskQueue;
  jobs: JobQueue;
  fetchTasks: FetchTaskStore;
  events: PgEventOutbox;
  workflowTemplates: WorkflowTemplateStore;
  leases: LeaseStore;
  wake: PgWake;
}

/** Options of `openQueues`. */
export interface PgQueuesOptions {
  /** The LISTEN connection's reconnection and polling (wake.ts). */
  wake?: PgWakeOptions;
}

/**
 * Opens the queue-like stores on `db` for the process `owner` (recorded on claims). Starts the LISTEN
 * connection (`db.url`) before it returns; throws when it cannot connect.
 */
export async function openQueues(db: PgDb, owner: string, opts: PgQueuesOptions = {}): Promise<PgQueues> {
  const wake = await PgWakeListener.open(db.url, opts.wake);
  return {
    tasks: new PgTasks(db, owner),
    jobs: new PgJobQueue(db, owner),
    fetchTasks: new PgFetchTasks(db, owner),
    events: new PgEventOutboxStore(db, owner),
    workflowTemplates: new PgWorkflowTemplates(db),
    leases: new PgLeases(db),
    wake,
  };
}
