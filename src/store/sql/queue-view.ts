/**
 * The one view of a durable queue (ports/durable-queue.ts) over its QueueTable (queue-table.ts): the life cycle
 * every such queue has — claim, when the next is due, finish, retry at a later time, release, recovery, prune,
 * subscriptions — written once for the async-fetch tasks (fetch-tasks.ts) and the event outbox (event-outbox.ts),
 * which extend it with their own queueing and reads. Times in Unix ms.
 */
import type { DurableQueue } from '../../ports/durable-queue.js';
import type { QueueTable } from './queue-table.js';

export abstract class QueueView<Row, Rec> implements DurableQueue<Rec> {
  constructor(protected readonly queue: QueueTable<Row, Rec>) {}

  async claim(nowMs: number): Promise<Rec | undefined> {
    return this.queue.claim(nowMs);
  }

  async nextRunMs(): Promise<number | undefined> {
    return this.queue.nextRunMs();
  }

  async finish(id: string, state: 'done' | 'failed', result: string, nowMs: number): Promise<boolean> {
    return this.queue.finish(id, state, result, nowMs);
  }

  async retryAt(id: string, nextRunMs: number, result: string, nowMs: number): Promise<boolean> {
    return this.queue.retryAt(id, nextRunMs, result, nowMs);
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.queue.release(id, nowMs);
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.queue.requeueAbandoned(nowMs);
  }

  async prune(beforeMs: number): Promise<number> {
    return this.queue.prune(beforeMs);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
