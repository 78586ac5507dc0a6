/**
 * MetaStore on PostgreSQL (GRANARY_METADATA=postgres://…), the cluster mode's shared metadata: any number of
 * Granary nodes open the same database. Transactions and locking: db.ts. Schema and migrations: schema.ts,
 * migrations.ts. The queue-like stores (jobs, fetch tasks, event outbox, workflow templates, leases, wake-ups):
 * queues.ts.
 *
 * STUB (scaffold): only the queue-like members work; every other member throws until the entry store lands.
 */
import { randomBytes } from 'node:crypto';
import type { MetaStore } from '../../ports/meta.js';
import { PgDb } from './db.js';
import { migrate } from './migrations.js';
import { openQueues, type PgQueues } from './queues.js';

export class PgMetaStore {
  readonly jobs: PgQueues['jobs'];
  readonly fetchTasks: PgQueues['fetchTasks'];
  readonly events: PgQueues['events'];
  readonly workflowTemplates: PgQueues['workflowTemplates'];
  readonly leases: PgQueues['leases'];

  private constructor(
    readonly db: PgDb,
    private readonly queues: PgQueues,
    readonly owner: string,
  ) {
    this.jobs = queues.jobs;
    this.fetchTasks = queues.fetchTasks;
    this.events = queues.events;
    this.workflowTemplates = queues.workflowTemplates;
    this.leases = queues.leases;
  }

  /**
   * Connects to `url`, applies the missing migrations, and opens the stores. `owner` is the identity of the process
   * (workers/identity.ts); offline users get a random one that never holds a process lease.
   */
  static async open(url: string, owner?: string): Promise<MetaStore> {
    const db = new PgDb(url);
    await migrate(db);
    const who = owner ?? `offline:${process.pid}:${randomBytes(6).toString('hex')}`;
    const store = new PgMetaStore(db, await openQueues(db, who), who);
    return new Proxy(store, {
      get(target, prop, receiver) {
        if (prop in target) return Reflect.get(target, prop, receiver) as unknown;
        if (prop === 'then') return undefined;
        return () => {
          throw new Error(`PostgreSQL MetaStore.${String(prop)} is not implemented yet`);
        };
      },
    }) as unknown as MetaStore;
  }

  dataVersion(): number {
    return this.queues.wake.version();
  }

  async close(): Promise<void> {
    await this.queues.wake.close();
    await this.db.close();
  }
}
