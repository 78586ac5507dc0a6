/**
 * The job queue, implementing the JobQueue port (ports/job-queue.ts) on SQLite and PostgreSQL (db.ts): the rows of
 * kind `job` of the one task table `tasks` (ports/tasks.ts; the commands in `payload`, the item outcomes in
 * `result`, a done job's final code in `code`) and the table `pipelines`.
 * - `claim(pipeline)` takes the pipeline's next waiting job (type 0 before type 1, then `seq`) in one statement
 *   (queue-table.ts): two processes or nodes never take the same job. How many jobs of a pipeline run at once is
 *   the caller's to bound (jobs/worker.ts compares its running jobs with the pipeline's concurrency before each
 *   claim), per process.
 * - every later state change is a compare-and-set on the current state and on the claiming process (`owner`), so
 *   a process presumed dead whose jobs were queued again cannot end them afterwards (queue-table.ts);
 * - `requeueAbandoned` takes back only the jobs of owners without a `process:` lease (one transaction).
 * `seq` orders submissions and is the list cursor. The public code is derived from the state (store/job-code.ts):
 * 1 waiting, 2 running or notifying, the final code once done. Subscribers are told of jobs queued and pipelines
 * changed through this object (this process), after the commit. Times in Unix ms.
 */
import type { JobFilter, JobQueue, JobRecord, JobState, NewJob, PipelineRecord } from '../../ports/job-queue.js';
import { codeCondition, jobCode } from '../job-code.js';
import { flag, type SqlDb } from './db.js';
import { QueueTable } from './queue-table.js';

interface JobRow {
  id: string;
  seq: number | bigint;
  access_key: string;
  bucket: string;
  key: string;
  payload: string;
  notify_url: string | null;
  pipeline: string;
  type: number;
  force: number | boolean;
  req_id: string;
  task_from: string;
  state: JobState;
  code: number | null;
  attempts: number;
  result: string | null;
  owner: string | null;
  created_ms: number | bigint;
  updated_ms: number | bigint;
}

interface PipelineRow {
  name: string;
  concurrency: number;
  created_ms: number | bigint;
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
  force: flag(r.force),
  reqId: r.req_id,
  taskFrom: r.task_from,
  state: r.state,
  code: jobCode(r.state, r.code),
  attempts: r.attempts,
  ...(r.result !== null ? { items: r.result } : {}),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
});

const toPipeline = (r: PipelineRow): PipelineRecord => ({
  name: r.name,
  concurrency: r.concurrency,
  createdMs: Number(r.created_ms),
});

const SQL = {
  insert: `INSERT INTO tasks (id, kind, access_key, bucket, key, payload, notify_url, pipeline, type, force, req_id, task_from,
             state, attempts, created_ms, updated_ms, next_run_ms)
           VALUES (?, 'job', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'waiting', 0, ?, ?, ?)`,
  get: "SELECT * FROM tasks WHERE id = ? AND kind = 'job'",
  waitingPipelines: "SELECT DISTINCT pipeline FROM tasks WHERE kind = 'job' AND state = 'waiting'",
  countAll: "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' GROUP BY state",
  countOf: "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND access_key = ? GROUP BY state",
  depth: "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND state IN ('waiting', 'running', 'notifying') GROUP BY state",
  ensurePipeline: 'INSERT INTO pipelines (name, concurrency, created_ms) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING',
  updatePipeline: 'UPDATE pipelines SET concurrency = ? WHERE name = ?',
  getPipeline: 'SELECT name, concurrency, created_ms FROM pipelines WHERE name = ?',
  listPipelines: 'SELECT name, concurrency, created_ms FROM pipelines ORDER BY name',
};

export class SqlJobQueue implements JobQueue {
  private readonly queue: QueueTable<JobRow, JobRecord>;

  /** `owner`: the identity of this process (recorded on claims, required by every later state change). */
  constructor(
    private readonly db: SqlDb,
    owner: string,
  ) {
    this.queue = new QueueTable(db, { table: 'tasks', kind: 'job', toRecord, owner });
  }

  async enqueue(job: NewJob): Promise<void> {
    await this.db.run(SQL.insert, [
      job.id,
      job.accessKey,
      job.bucket,
      job.key,
      job.fops,
      job.notifyUrl ?? null,
      job.pipeline,
      job.type,
      job.force ? 1 : 0,
      job.reqId,
      job.taskFrom,
      job.createdMs,
      job.createdMs,
      job.createdMs,
    ]);
    this.queue.notify();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const row = await this.db.get<JobRow>(SQL.get, [id]);
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
    const rows = await this.db.all<JobRow>(`SELECT * FROM tasks WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`, [
      ...args,
      limit + 1,
    ]);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { jobs: page.map(toRecord), ...(rows.length > limit && last ? { next: Number(last.seq) } : {}) };
  }

  async countByState(accessKey?: string): Promise<Record<JobState, number>> {
    const out: Record<JobState, number> = { waiting: 0, running: 0, notifying: 0, done: 0 };
    const rows = await this.db.all<{ state: JobState; n: number | bigint }>(
      accessKey === undefined ? SQL.countAll : SQL.countOf,
      accessKey === undefined ? [] : [accessKey],
    );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async pipelinesWithWaitingJobs(): Promise<string[]> {
    return (await this.db.all<{ pipeline: string }>(SQL.waitingPipelines)).map((r) => r.pipeline);
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
    for (const r of await this.db.all<{ state: keyof typeof out; n: number | bigint }>(SQL.depth)) out[r.state] = Number(r.n);
    return out;
  }

  /**
   * Creates the pipeline or changes its concurrency: one upsert where the database tells whether it inserted
   * (PostgreSQL), else one transaction — insert unless it exists, then set the concurrency.
   */
  async putPipeline(name: string, concurrency: number, nowMs: number): Promise<'created' | 'updated'> {
    let created: boolean;
    if (this.db.upsertInserted !== undefined) {
      const row = await this.db.get<{ created: boolean }>(
        `INSERT INTO pipelines (name, concurrency, created_ms) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency RETURNING ${this.db.upsertInserted} AS created`,
        [name, concurrency, nowMs],
      );
      created = row?.created === true;
    } else {
      const [inserted] = await this.db.batch([
        { sql: SQL.ensurePipeline, args: [name, concurrency, nowMs] },
        { sql: SQL.updatePipeline, args: [concurrency, name] },
      ]);
      created = inserted!.changes === 1;
    }
    this.queue.notify();
    return created ? 'created' : 'updated';
  }

  async ensurePipeline(name: string, concurrency: number, nowMs: number): Promise<void> {
    await this.db.run(SQL.ensurePipeline, [name, concurrency, nowMs]);
  }

  async getPipeline(name: string): Promise<PipelineRecord | undefined> {
    const row = await this.db.get<PipelineRow>(SQL.getPipeline, [name]);
    return row ? toPipeline(row) : undefined;
  }

  async listPipelines(): Promise<PipelineRecord[]> {
    return (await this.db.all<PipelineRow>(SQL.listPipelines)).map(toPipeline);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
