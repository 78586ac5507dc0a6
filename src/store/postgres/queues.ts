/**
 * The queue-like stores of the PostgreSQL MetaStore, built together on one PgDb: the one task queue and its two
 * views, the job queue with its pipelines and the async-fetch tasks; the event outbox, workflow templates, leases,
 * console sessions, and the LISTEN connection whose notifications (schema.ts `granary_wake`) wake idle workers on
 * every node. All but the LISTEN connection (wake.ts) and the outbox's write (event-outbox.ts) are the shared SQL
 * layer of store/sql/ (the same code as on SQLite) on this database's dialect (sql-db.ts).
 */
import type { EventOutbox, OutboxRows } from '../../ports/events.js';
import type { FetchTaskStore } from '../../ports/fetch-tasks.js';
import type { JobQueue } from '../../ports/job-queue.js';
import type { LeaseStore } from '../../ports/leases.js';
import type { TaskQueue } from '../../ports/tasks.js';
import type { ObjectRecord } from '../../ports/meta.js';
import type { WorkflowTemplateStore } from '../../ports/workflow-templates.js';
import type { IamStore } from '../../ports/iam.js';
import type { PgDb, Queryable } from './db.js';
import type { ConsoleSessionStore } from '../../ports/console-sessions.js';
import { SqlConsoleSessions } from '../sql/console-sessions.js';
import { SqlIamStore } from '../sql/iam.js';
import { SqlFetchTasks } from '../sql/fetch-tasks.js';
import { SqlJobQueue } from '../sql/jobs.js';
import { SqlLeases } from '../sql/leases.js';
import { SqlTasks } from '../sql/tasks.js';
import { SqlWorkflowTemplates } from '../sql/workflow-templates.js';
import { PgEventOutboxStore } from './event-outbox.js';
import { SqlReplication } from '../sql/replication.js';
import { PgSqlDb } from './sql-db.js';
import { PgWakeListener, type PgWakeOptions } from './wake.js';

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
  replication: SqlReplication;
  workflowTemplates: WorkflowTemplateStore;
  leases: LeaseStore;
  consoleSessions: ConsoleSessionStore;
  iam: IamStore;
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
  const sql = new PgSqlDb(db);
  const replication = new SqlReplication(sql, owner);
  return {
    tasks: new SqlTasks(sql, owner),
    jobs: new SqlJobQueue(sql, owner),
    fetchTasks: new SqlFetchTasks(sql, owner),
    events: new PgEventOutboxStore(db, sql, owner, replication),
    replication,
    workflowTemplates: new SqlWorkflowTemplates(sql),
    leases: new SqlLeases(sql),
    consoleSessions: new SqlConsoleSessions(sql),
    iam: new SqlIamStore(sql),
    wake,
  };
}
