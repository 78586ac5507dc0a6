/**
 * The job queue on PostgreSQL, implementing the JobQueue port (ports/job-queue.ts) with the semantics of
 * store/sqlite/jobs.ts: the rows of kind `job` of the one task table `tasks` (schema.ts, ports/tasks.ts; the
 * commands in `payload`, the item outcomes in `result`, a done job's final code in `code`, the public code 1/2
 * derived from the state: store/job-code.ts) and the table `pipelines`.
 * - `claim(pipeline)` takes the pipeline's next waiting job (type 0 before type 1, then `seq`) with
 *   `SELECT … FOR UPDATE SKIP LOCKED LIMIT 1` feeding the UPDATE (one statement, queue-table.ts): two nodes never
 *   take the same job. How many jobs of a pipeline run at once is the caller's to bound (jobs/worker.ts compares
 *   its running jobs with the pipeline's concurrency before each claim), per process as on SQLite.
 * - every later state change is a compare-and-set on the current state and on the claiming process (`owner`), so
 *   a process presumed dead whose jobs were queued again cannot end them afterwards (queue-table.ts);
 * - `requeueAbandoned` takes back only the jobs of owners without a `process:` lease (one transaction).
 * `seq` (bigserial) orders submissions and is the list cursor (bigint in the row, a number in records and
 * cursors). Subscribers are told of jobs queued and pipelines changed through this object (this process), after
 * the commit; other nodes' changes reach this one through the wake-up counter (wake.ts). Times in Unix ms.
 */
import type { JobFilter, JobQueue, JobRecord, JobState, NewJob, PipelineRecord } from '../../ports/job-queue.js';
import { codeCondition, jobCode } from '../job-code.js';
import type { PgDb } from './db.js';
import { PgQueueTable } from './queue-table.js';

interface JobRow {
  id: string;
  seq: bigint;
  access_key: string;
  bucket: string;
  key: string;
  payload: string;
  notify_url: string | null;
  pipeline: string;
  type: number;
  force: boolean;
  req_id: string;
  task_from: string;
  state: JobState;
  code: number | null;
  attempts: number;
  result: string | null;
  owner: string | null;
  created_ms: bigint;
  updated_ms: bigint;
}

interface PipelineRow {
  name: string;
  concurrency: number;
  created_ms: bigint;
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
  force: r.force,
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
           VALUES ($1, 'job', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'waiting', 0, $12, $12, $12)`,
  upsertPipeline: `INSERT INTO pipelines (name, concurrency, created_ms) VALUES ($1, $2, $3)
                   ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency
                   RETURNING (xmax = 0) AS created`,
  ensurePipeline: 'INSERT INTO pipelines (name, concurrency, created_ms) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
};

export class PgJobQueue implements JobQueue {
  private readonly queue: PgQueueTable<JobRow, JobRecord>;

  /** `owner`: the identity of this process (recorded on claims, required by every later state change). */
  constructor(
    private readonly db: PgDb,
    owner: string,
  ) {
    this.queue = new PgQueueTable(db, { table: 'tasks', kind: 'job', toRecord, owner });
  }

  async enqueue(job: NewJob): Promise<void> {
    await this.db.query(SQL.insert, [
      job.id,
      job.accessKey,
      job.bucket,
      job.key,
      job.fops,
      job.notifyUrl ?? null,
      job.pipeline,
      job.type,
      job.force,
      job.reqId,
      job.taskFrom,
      job.createdMs,
    ]);
    this.queue.notify();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>("SELECT * FROM tasks WHERE id = $1 AND kind = 'job'", [id]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async claim(pipeline: string, nowMs: number): Promise<JobRecord | undefined> {
    return this.queue.claim(nowMs, pipeline);
  }

  async list(filter: JobFilter, before: number | undefined, limit: number): Promise<{ jobs: JobRecord[]; next?: number }> {
    const args: Array<string | number> = [];
    const where = ["kind = 'job'"];
    const add = (cond: string, value: string | number | undefined): void => {
      if (value === undefined) return;
      args.push(value);
      where.push(`${cond} $${args.length}`);
    };
    add('seq <', before);
    add('access_key =', filter.accessKey);
    add('pipeline =', filter.pipeline);
    if (filter.code !== undefined) {
      const c = codeCondition(filter.code, `$${args.length + 1}`);
      where.push(c.sql);
      if (c.needsValue) args.push(filter.code);
    }
    args.push(limit + 1);
    const sql = `SELECT * FROM tasks WHERE ${where.join(' AND ')}
                 ORDER BY seq DESC LIMIT $${args.length}`;
    const { rows } = await this.db.query<JobRow>(sql, args);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { jobs: page.map(toRecord), ...(rows.length > limit && last ? { next: Number(last.seq) } : {}) };
  }

  async countByState(accessKey?: string): Promise<Record<JobState, number>> {
    const out: Record<JobState, number> = { waiting: 0, running: 0, notifying: 0, done: 0 };
    const { rows } =
      accessKey === undefined
        ? await this.db.query<{ state: JobState; n: bigint }>("SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' GROUP BY state")
        : await this.db.query<{ state: JobState; n: bigint }>(
            "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND access_key = $1 GROUP BY state",
            [accessKey],
          );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async pipelinesWithWaitingJobs(): Promise<string[]> {
    const { rows } = await this.db.query<{ pipeline: string }>("SELECT DISTINCT pipeline FROM tasks WHERE kind = 'job' AND state = 'waiting'");
    return rows.map((r) => r.pipeline);
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
    const { rows } = await this.db.query<{ state: keyof typeof out; n: bigint }>(
      "SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'job' AND state IN ('waiting', 'running', 'notifying') GROUP BY state",
    );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async putPipeline(name: string, concurrency: number, nowMs: number): Promise<'created' | 'updated'> {
    const { rows } = await this.db.query<{ created: boolean }>(SQL.upsertPipeline, [name, concurrency, nowMs]);
    this.queue.notify();
    return rows[0]?.created ? 'created' : 'updated';
  }

  async ensurePipeline(name: string, concurrency: number, nowMs: number): Promise<void> {
    await this.db.query(SQL.ensurePipeline, [name, concurrency, nowMs]);
  }

  async getPipeline(name: string): Promise<PipelineRecord | undefined> {
    const { rows } = await this.db.query<PipelineRow>('SELECT name, concurrency, created_ms FROM pipelines WHERE name = $1', [
      name,
    ]);
    return rows[0] ? toPipeline(rows[0]) : undefined;
  }

  async listPipelines(): Promise<PipelineRecord[]> {
    const { rows } = await this.db.query<PipelineRow>('SELECT name, concurrency, created_ms FROM pipelines ORDER BY name');
    return rows.map(toPipeline);
  }

  subscribe(listener: () => void): () => void {
    return this.queue.subscribe(listener);
  }
}
