/**
 * The queue-like stores of the PostgreSQL MetaStore, built together on one PgDb: the job queue and its pipelines,
 * the async-fetch tasks, the event outbox, workflow templates, leases, and the LISTEN connection whose
 * notifications (schema.ts `granary_wake`) wake idle workers on every node.
 *
 * STUB (scaffold): every member throws until the PostgreSQL queue implementations land.
 */
import type { EventOutbox, OutboxRows } from '../../ports/events.js';
import type { FetchTaskStore } from '../../ports/fetch-tasks.js';
import type { JobQueue } from '../../ports/job-queue.js';
import type { LeaseStore } from '../../ports/leases.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { WorkflowTemplateStore } from '../../ports/workflow-templates.js';
import type { PgDb, Queryable } from './db.js';

/** The event outbox, plus the write its entry changes call inside their transaction. */
export interface PgEventOutbox extends EventOutbox {
  /**
   * Inserts the events `rows` builds for `entry` on `c`, inside the transaction of the change they report (the
   * caller calls it once the change is sure to commit). Nothing when `rows` is undefined.
   */
  write(c: Queryable, rows: OutboxRows | undefined, entry: ObjectRecord): Promise<void>;
}

/** Wake-ups from other nodes (and this one): a counter moved by every `granary_wake` notification received. */
export interface PgWake {
  /** The number of notifications received so far (MetaStore.dataVersion). */
  version(): number;
  close(): Promise<void>;
}

export interface PgQueues {
  jobs: JobQueue;
  fetchTasks: FetchTaskStore;
  events: PgEventOutbox;
  workflowTemplates: WorkflowTemplateStore;
  leases: LeaseStore;
  wake: PgWake;
}

/** A member that throws on any use (scaffold only). */
function notYet<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get(_t, prop) {
      if (prop === 'then') return undefined;
      return () => {
        throw new Error(`PostgreSQL ${what}.${String(prop)} is not implemented yet`);
      };
    },
  });
}

/**
 * Opens the queue-like stores on `db` for the process `owner` (recorded on claims). Starts the LISTEN
 * connection (`db.url`) before it returns.
 */
export async function openQueues(db: PgDb, owner: string): Promise<PgQueues> {
  void db;
  void owner;
  const events = notYet<PgEventOutbox>('event outbox');
  return {
    jobs: notYet('job queue'),
    fetchTasks: notYet('fetch tasks'),
    events: Object.assign(Object.create(events) as PgEventOutbox, {
      async write(_c: Queryable, rows: OutboxRows | undefined): Promise<void> {
        if (rows) throw new Error('PostgreSQL event outbox is not implemented yet');
      },
    }),
    workflowTemplates: notYet('workflow templates'),
    leases: notYet('leases'),
    wake: { version: () => 0, close: async () => undefined },
  };
}
