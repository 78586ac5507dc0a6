/**
 * The job queue on PostgreSQL (tables `jobs` and `pipelines`, schema.ts), implementing the JobQueue port
 * (ports/job-queue.ts) with the semantics of store/sqlite/jobs.ts:
 * - `claim(pipeline)` takes the pipeline's next waiting job (type 0 before type 1, then `seq`) with
 *   `SELECT … FOR UPDATE SKIP LOCKED LIMIT 1` feeding the UPDATE (one statement): two nodes never take the same
 *   job. How many jobs of a pipeline run at once is the caller's to bound (jobs/worker.ts compares its running
 *   jobs with the pipeline's concurrency before each claim), per process as on SQLite.
 * - every later state change is a compare-and-set on the current state and on the claiming process (`owner`), so
 *   a process presumed dead whose jobs were queued again cannot end them afterwards;
 * - `requeueAbandoned` takes back only the jobs of owners without a `process:` lease (one transaction).
 * `seq` (bigserial) orders submissions and is the list cursor (bigint in the row, a number in records and
 * cursors). Subscribers are told of jobs queued and pipelines changed through this object (this process), after
 * the commit; other nodes' changes reach this one through the wake-up counter (wake.ts). Times in Unix ms.
 */
import type { JobFilter, JobQueue, JobRecord, JobState, NewJob, PipelineRecord } from '../../ports/job-queue.js';
import type { PgDb } from './db.js';

interface JobRow {
  id: string;
  seq: bigint;
  access_key: string;
  bucket: string;
  key: string;
  fops: string;
  notify_url: string | null;
  pipeline: string;
  type: number;
  force: boolean;
  req_id: string;
  task_from: string;
  state: JobState;
  code: number;
  attempts: number;
  items: string | null;
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
  fops: r.fops,
  ...(r.notify_url !== null && r.notify_url !== '' ? { notifyUrl: r.notify_url } : {}),
  pipeline: r.pipeline,
  type: r.type,
  force: r.force,
  reqId: r.req_id,
  taskFrom: r.task_from,
  state: r.state,
  code: r.code,
  attempts: r.attempts,
  ...(r.items !== null ? { items: r.items } : {}),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
});

const toPipeline = (r: PipelineRow): PipelineRecord => ({
  name: r.name,
  concurrency: r.concurrency,
  createdMs: Number(r.created_ms),
});

/** Jobs whose owner holds no process lease (it died: workers/recovery.ts removed its leases). */
const ABANDONED = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || jobs.owner))`;

const SQL = {
  insert: `INSERT INTO jobs (id, access_key, bucket, key, fops, notify_url, pipeline, type, force, req_id, task_from,
             state, code, attempts, created_ms, updated_ms)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'waiting', 1, 0, $12, $12)`,
  claim: `WITH next AS (
            SELECT id FROM jobs WHERE state = 'waiting' AND pipeline = $1 ORDER BY type, seq LIMIT 1
            FOR UPDATE SKIP LOCKED)
          UPDATE jobs j SET state = 'running', owner = $2, code = 2, attempts = j.attempts + 1, updated_ms = $3
          FROM next WHERE j.id = next.id RETURNING j.*`,
  saveItems: `UPDATE jobs SET items = $1, updated_ms = $2 WHERE id = $3 AND state = 'running' AND owner = $4`,
  endItems: `UPDATE jobs SET items = $1, state = $2, code = $3, updated_ms = $4
             WHERE id = $5 AND state = 'running' AND owner = $6`,
  finish: `UPDATE jobs SET state = 'done', code = $1, updated_ms = $2 WHERE id = $3 AND state = 'notifying' AND owner = $4`,
  release: `UPDATE jobs SET state = 'waiting', owner = NULL, code = 1, attempts = GREATEST(attempts - 1, 0), updated_ms = $1
            WHERE id = $2 AND state = 'running' AND owner = $3`,
  requeue: `UPDATE jobs SET state = 'waiting', owner = NULL, code = 1, updated_ms = $1 WHERE state = 'running' AND ${ABANDONED}`,
  orphanNotifying: `UPDATE jobs SET owner = NULL WHERE state = 'notifying' AND owner IS NOT NULL AND ${ABANDONED}`,
  claimNotifying: `WITH next AS (
                     SELECT id FROM jobs WHERE state = 'notifying' AND owner IS NULL ORDER BY seq LIMIT 1
                     FOR UPDATE SKIP LOCKED)
                   UPDATE jobs j SET owner = $1, updated_ms = $2 FROM next WHERE j.id = next.id RETURNING j.*`,
  upsertPipeline: `INSERT INTO pipelines (name, concurrency, created_ms) VALUES ($1, $2, $3)
                   ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency
                   RETURNING (xmax = 0) AS created`,
  ensurePipeline: 'INSERT INTO pipelines (name, concurrency, created_ms) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
};

export class PgJobQueue implements JobQueue {
  private readonly listeners = new Set<() => void>();

  /** `owner`: the identity of this process (recorded on claims, required by every later state change). */
  constructor(
    private readonly db: PgDb,
    private readonly owner: string,
  ) {}

  private tell(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        // a listener's failure must not fail the submission (the job is queued durably)
      }
    }
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
    this.tell();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [id]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async claim(pipeline: string, nowMs: number): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>(SQL.claim, [pipeline, this.owner, nowMs]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async list(filter: JobFilter, before: number | undefined, limit: number): Promise<{ jobs: JobRecord[]; next?: number }> {
    const conditions: Array<[string, string | number | undefined]> = [
      ['seq <', before],
      ['access_key =', filter.accessKey],
      ['pipeline =', filter.pipeline],
      ['code =', filter.code],
    ];
    const args: Array<string | number> = [];
    const where: string[] = [];
    for (const [cond, value] of conditions) {
      if (value === undefined) continue;
      args.push(value);
      where.push(`${cond} $${args.length}`);
    }
    args.push(limit + 1);
    const sql = `SELECT * FROM jobs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
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
        ? await this.db.query<{ state: JobState; n: bigint }>('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state')
        : await this.db.query<{ state: JobState; n: bigint }>(
            'SELECT state, COUNT(*) AS n FROM jobs WHERE access_key = $1 GROUP BY state',
            [accessKey],
          );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async pipelinesWithWaitingJobs(): Promise<string[]> {
    const { rows } = await this.db.query<{ pipeline: string }>("SELECT DISTINCT pipeline FROM jobs WHERE state = 'waiting'");
    return rows.map((r) => r.pipeline);
  }

  async saveItems(id: string, items: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(SQL.saveItems, [items, nowMs, id, this.owner])).rowCount === 1;
  }

  async endItems(id: string, items: string, code: number, notify: boolean, nowMs: number): Promise<boolean> {
    const [state, shown] = notify ? ['notifying', 2] : ['done', code];
    return (await this.db.query(SQL.endItems, [items, state, shown, nowMs, id, this.owner])).rowCount === 1;
  }

  async finish(id: string, code: number, nowMs: number): Promise<boolean> {
    return (await this.db.query(SQL.finish, [code, nowMs, id, this.owner])).rowCount === 1;
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return (await this.db.query(SQL.release, [nowMs, id, this.owner])).rowCount === 1;
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.db.tx(async (c) => {
      await c.query(SQL.orphanNotifying);
      return (await c.query(SQL.requeue, [nowMs])).rowCount ?? 0;
    });
  }

  async claimNotifying(nowMs: number): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>(SQL.claimNotifying, [this.owner, nowMs]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async depth(): Promise<{ waiting: number; running: number; notifying: number }> {
    const out = { waiting: 0, running: 0, notifying: 0 };
    const { rows } = await this.db.query<{ state: keyof typeof out; n: bigint }>(
      "SELECT state, COUNT(*) AS n FROM jobs WHERE state IN ('waiting', 'running', 'notifying') GROUP BY state",
    );
    for (const r of rows) out[r.state] = Number(r.n);
    return out;
  }

  async putPipeline(name: string, concurrency: number, nowMs: number): Promise<'created' | 'updated'> {
    const { rows } = await this.db.query<{ created: boolean }>(SQL.upsertPipeline, [name, concurrency, nowMs]);
    this.tell();
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
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
