/**
 * The job queue on SQLite, implementing the JobQueue port (ports/job-queue.ts): the rows of kind `job` of the one
 * task table `tasks` (schema.ts, ports/tasks.ts; the commands in `payload`, the item outcomes in `result`, the
 * final code in `code`) and the table `pipelines`. Claims and state changes are the shared life cycle
 * (queue-table.ts: IMMEDIATE transactions, compare-and-set on the state and on the claiming process). `seq`
 * orders submissions and is the list cursor. The public code is derived from the state: 1 waiting, 2 running or
 * notifying, the final code once done. Subscribers are told of jobs queued and pipelines changed through this
 * object (this process).
 */
import type Database from 'better-sqlite3';
import type { JobFilter, JobQueue, JobRecord, JobState, NewJob, PipelineRecord } from '../../ports/job-queue.js';
import { codeCondition, jobCode } from '../job-code.js';
import { SqliteQueueTable } from './queue-table.js';

interface JobRow {
  id: string;
  seq: number;
  access_key: string;
  bucket: string;
  key: string;
  payload: string;
  notify_url: string | null;
  pipeline: string;
  type: number;
  force: number;
  req_id: string;
  task_from: string;
  state: JobState;
  code: number | null;
  attempts: number;
  result: string | null;
  owner: string | null;
  created_ms: number;
  updated_ms: number;
}

const toRecord = (r: JobRow): JobRecord => ({
  id: r.id,
  accessKey: r.access_key,
  bucket: r.bucket,
  key: r.key,
  fops: r.payload,
  ...(r.notify_url !== null && r.notify_url !== '' ? { notifyUrl: r.notify_url } : {}),
  pipeline: r.pipeline,
  type: r.type,
  force: r.force === 1,
  reqId: r.req_id,
  taskFrom: r.task_from,
  state: r.state,
  code: jobCode(r.state, r.code),
  attempts: r.attempts,
  ...(r.result !== null ? { items: r.result } : {}),
  createdMs: r.created_ms,
  updatedMs: r.updated_ms,
});

const toPipeline = (r: { name: string; concurrency: number; created_ms: number }): PipelineRecord => ({
  name: r.name,
  concurrency: r.concurrency,
  createdMs: r.created_ms,
});

export class SqliteJobQueue implements JobQueue {
  private readonly st;
  private readonly queue: SqliteQueueTable<JobRow, JobRecord>;

  /** `owner`: the identity of this process (recorded on claims, required by every later state change). */
  constructor(
    private readonly db: Database.Database,
    owner: string,
  ) {
    this.queue = new SqliteQueueTable(db, { table: 'tasks', kind: 'job', toRecord, owner });
    this.st = {
      insert: db.prepare(
        `INSERT INTO tasks (id, kind, access_key, bucket, key, payload, notify_url, pipeline, type, force, req_id, task_from,
           state, attempts, created_ms, updated_ms, next_run_ms)
         VALUES (@id, 'job', @accessKey, @bucket, @key, @fops, @notifyUrl, @pipeline, @type, @force, @reqId, @taskFrom,
           'waiting', 0, @createdMs, @createdMs, @createdMs)`,
      ),
      get: db.prepare("SELECT * FROM tasks WHERE id = ? AND kind = 'job'"),
      waitingPipelines: db.prepare("SELECT DISTINCT pipeline FROM tasks WHERE kind = 'job' AND state = 'waiting'"),
      depth: db.prepare(
        "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND state IN ('waiting', 'running', 'notifying') GROUP BY state",
      ),
      getPipeline: db.prepare('SELECT name, concurrency, created_ms FROM pipelines WHERE name = ?'),
      listPipelines: db.prepare('SELECT name, concurrency, created_ms FROM pipelines ORDER BY name'),
      insertPipeline: db.prepare('INSERT OR IGNORE INTO pipelines (name, concurrency, created_ms) VALUES (?, ?, ?)'),
      updatePipeline: db.prepare('UPDATE pipelines SET concurrency = ? WHERE name = ?'),
    };
  }

  async enqueue(job: NewJob): Promise<void> {
    this.st.insert.run({
      id: job.id,
      accessKey: job.accessKey,
      bucket: job.bucket,
      key: job.key,
      fops: job.fops,
      notifyUrl: job.notifyUrl ?? null,
      pipeline: job.pipeline,
      type: job.type,
      force: job.force ? 1 : 0,
      reqId: job.reqId,
      taskFrom: job.taskFrom,
      createdMs: job.createdMs,
    });
    this.queue.notify();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const row = this.st.get.get(id) as JobRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async claim(pipeline: string, nowMs: number): Promise<JobRecord | undefined> {
    return this.queue.claim(nowMs, pipeline);
  }

  async list(filter: JobFilter, before: number | undefined, limit: number): Promise<{ jobs: JobRecord[]; next?: number }> {
    const where = ["kind = 'job'"];
    const args: Array<string | number> = [];
    const add = (sql: string, value: string | number | undefined): void => {
      if (value === undefined) return;
      where.push(sql);
      args.push(value);
    };
    add('seq < ?', before);
    add('access_key = ?', filter.accessKey);
    add('pipeline = ?', filter.pipeline);
    if (filter.code !== undefined) {
      const c = codeCondition(filter.code, '?');
      where.push(c.sql);
      if (c.needsValue) args.push(filter.code);
    }
    const sql = `SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(...args, limit + 1) as JobRow[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { jobs: page.map(toRecord), ...(more && last ? { next: last.seq } : {}) };
  }

  async countByState(accessKey?: string): Promise<Record<JobState, number>> {
    const out: Record<JobState, number> = { waiting: 0, running: 0, notifying: 0, done: 0 };
    const rows = (
      accessKey === undefined
        ? this.db.prepare("SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' GROUP BY state").all()
        : this.db.prepare("SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND access_key = ? GROUP BY state").all(accessKey)
    ) as { state: JobState; n: number }[];
    for (const r of rows) out[r.state] = r.n;
    return out;
  }

  async pipelinesWithWaitingJobs(): Promise<string[]> {
    return (this.st.waitingPipelines.all() as { pipeline: string }[]).map((r) => r.pipeline);
  }

  async saveItems(id: string, items: string, nowMs: number): Promise<boolean> {
    return this.queue.saveResult(id, items, nowMs);
  }

  async endItems(id: string, items: string, code: number, notify: boolean, nowMs: number): Promise<boolean> {
    return notify ? this.queue.finish(id, 'notifying', items, nowMs) : this.queue.finish(id, 'done', items, nowMs, code);
  }

  async finish(id: string, code: number, nowMs: number): Promise<boolean> {
    return this.queue.endNotifying(id, code, nowMs);
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.queue.release(id, nowMs);
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.queue.requeueAbandoned(nowMs);
  }

  async claimNotifying(nowMs: number): Promise<JobRecord | undefined> {
    return this.queue.claimNotifying(nowMs);
  }

  async depth(): Promise<{ waiting: number; running: number; notifying: number }> {
    const out = { waiting: 0, running: 0, notifying: 0 };
    for (const r of this.st.depth.all() as { state: keyof typeof out; n: number }[]) out[r.state] = r.n;
    return out;
  }

  async putPipeline(name: string, concurrency: number, nowMs: number): Promise<'created' | 'updated'> {
    const result = this.db.transaction(() => {
      if (this.st.insertPipeline.run(name, concurrency, nowMs).changes === 1) return 'created' as const;
      this.st.updatePipeline.run(concurrency, name);
      return 'updated' as const;
    }).immediate();
    this.queue.notify();
    return result;
  }

  async ensurePipeline(name: string, concurrency: number, nowMs: number): Promise<void> {
    this.st.insertPipeline.run(name, concurrency, nowMs);
  }

  async getPipeline(name: string): Promise<PipelineRecord | undefined> {
    const row = this.st.getPipeline.get(name) as { name: string; concurrency: number; created_ms: number } | undefined;
    return row ? toPipeline(row) : undefined;
  }

  async listPipelines(): Promise<PipelineRecord[]> {
    return (this.st.listPipelines.all() as { name: string; concurrency: number; created_ms: number }[]).map(toPipeline);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
