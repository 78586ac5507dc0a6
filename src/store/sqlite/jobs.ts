/**
 * The job queue on SQLite (tables `jobs` and `pipelines`, schema.ts), implementing the JobQueue port
 * (ports/job-queue.ts). Claims run in an IMMEDIATE transaction, so two processes sharing the data dir never take the
 * same job; every state change is a compare-and-set on the current state and on the claiming process (`owner`,
 * this store's process identity), so a process presumed dead whose jobs were queued again cannot end them
 * afterwards. `seq` orders submissions. Subscribers are told of jobs queued and pipelines changed through this
 * object (this process).
 */
import type Database from 'better-sqlite3';
import type { JobFilter, JobQueue, JobRecord, JobState, NewJob, PipelineRecord } from '../../ports/job-queue.js';

interface JobRow {
  id: string;
  seq: number;
  access_key: string;
  bucket: string;
  key: string;
  fops: string;
  notify_url: string | null;
  pipeline: string;
  type: number;
  force: number;
  req_id: string;
  task_from: string;
  state: JobState;
  code: number;
  attempts: number;
  items: string | null;
  owner: string | null;
  created_ms: number;
  updated_ms: number;
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
  force: r.force === 1,
  reqId: r.req_id,
  taskFrom: r.task_from,
  state: r.state,
  code: r.code,
  attempts: r.attempts,
  ...(r.items !== null ? { items: r.items } : {}),
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
  private readonly listeners = new Set<() => void>();

  /** `owner`: the identity of this process (recorded on claims, required by every later state change). */
  constructor(
    private readonly db: Database.Database,
    private readonly owner: string,
  ) {
    /** Rows of `jobs` whose owner holds no process lease (it died: workers/recovery.ts removed its leases). */
    const abandoned = `(owner IS NULL OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'process:' || jobs.owner))`;
    this.st = {
      insert: db.prepare(
        `INSERT INTO jobs (id, seq, access_key, bucket, key, fops, notify_url, pipeline, type, force, req_id, task_from,
           state, code, attempts, created_ms, updated_ms)
         VALUES (@id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs), @accessKey, @bucket, @key, @fops, @notifyUrl,
           @pipeline, @type, @force, @reqId, @taskFrom, 'waiting', 1, 0, @createdMs, @createdMs)`,
      ),
      get: db.prepare('SELECT * FROM jobs WHERE id = ?'),
      next: db.prepare(
        "SELECT * FROM jobs WHERE state = 'waiting' AND pipeline = ? ORDER BY type, seq LIMIT 1",
      ),
      take: db.prepare(
        "UPDATE jobs SET state = 'running', owner = ?, code = 2, attempts = attempts + 1, updated_ms = ? WHERE id = ? AND state = 'waiting'",
      ),
      waitingPipelines: db.prepare("SELECT DISTINCT pipeline FROM jobs WHERE state = 'waiting'"),
      saveItems: db.prepare("UPDATE jobs SET items = ?, updated_ms = ? WHERE id = ? AND state = 'running' AND owner IS ?"),
      endItems: db.prepare(
        "UPDATE jobs SET items = ?, state = ?, code = ?, updated_ms = ? WHERE id = ? AND state = 'running' AND owner IS ?",
      ),
      finish: db.prepare(
        "UPDATE jobs SET state = 'done', code = ?, updated_ms = ? WHERE id = ? AND state = 'notifying' AND owner IS ?",
      ),
      release: db.prepare(
        `UPDATE jobs SET state = 'waiting', owner = NULL, code = 1, attempts = MAX(attempts - 1, 0), updated_ms = ?
         WHERE id = ? AND state = 'running' AND owner IS ?`,
      ),
      requeue: db.prepare(
        `UPDATE jobs SET state = 'waiting', owner = NULL, code = 1, updated_ms = @now WHERE state = 'running' AND ${abandoned}`,
      ),
      orphanNotifying: db.prepare(`UPDATE jobs SET owner = NULL WHERE state = 'notifying' AND ${abandoned}`),
      anyUnownedNotifying: db.prepare("SELECT 1 FROM jobs WHERE state = 'notifying' AND owner IS NULL LIMIT 1"),
      claimNotifying: db.prepare(
        `UPDATE jobs SET owner = ?, updated_ms = ? WHERE id = (
           SELECT id FROM jobs WHERE state = 'notifying' AND owner IS NULL ORDER BY seq LIMIT 1)
         AND state = 'notifying' AND owner IS NULL RETURNING *`,
      ),
      depth: db.prepare("SELECT state, COUNT(*) AS n FROM jobs WHERE state IN ('waiting', 'running', 'notifying') GROUP BY state"),
      getPipeline: db.prepare('SELECT name, concurrency, created_ms FROM pipelines WHERE name = ?'),
      listPipelines: db.prepare('SELECT name, concurrency, created_ms FROM pipelines ORDER BY name'),
      insertPipeline: db.prepare('INSERT OR IGNORE INTO pipelines (name, concurrency, created_ms) VALUES (?, ?, ?)'),
      updatePipeline: db.prepare('UPDATE pipelines SET concurrency = ? WHERE name = ?'),
    };
  }

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
    this.tell();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const row = this.st.get.get(id) as JobRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async claim(pipeline: string, nowMs: number): Promise<JobRecord | undefined> {
    return this.db
      .transaction(() => {
        const row = this.st.next.get(pipeline) as JobRow | undefined;
        if (!row) return undefined;
        this.st.take.run(this.owner, nowMs, row.id);
        return toRecord({ ...row, state: 'running', owner: this.owner, code: 2, attempts: row.attempts + 1, updated_ms: nowMs });
      })
      .immediate();
  }

  async list(filter: JobFilter, before: number | undefined, limit: number): Promise<{ jobs: JobRecord[]; next?: number }> {
    const conditions: Array<[string, string | number | undefined]> = [
      ['seq < ?', before],
      ['access_key = ?', filter.accessKey],
      ['pipeline = ?', filter.pipeline],
      ['code = ?', filter.code],
    ];
    const given = conditions.filter(([, v]) => v !== undefined);
    const where = given.map(([c]) => c);
    const args = given.map(([, v]) => v as string | number);
    const sql = `SELECT * FROM jobs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
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
        ? this.db.prepare('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all()
        : this.db.prepare('SELECT state, COUNT(*) AS n FROM jobs WHERE access_key = ? GROUP BY state').all(accessKey)
    ) as { state: JobState; n: number }[];
    for (const r of rows) out[r.state] = r.n;
    return out;
  }

  async pipelinesWithWaitingJobs(): Promise<string[]> {
    return (this.st.waitingPipelines.all() as { pipeline: string }[]).map((r) => r.pipeline);
  }

  async saveItems(id: string, items: string, nowMs: number): Promise<boolean> {
    return this.st.saveItems.run(items, nowMs, id, this.owner).changes === 1;
  }

  async endItems(id: string, items: string, code: number, notify: boolean, nowMs: number): Promise<boolean> {
    const [state, shown] = notify ? ['notifying', 2] : ['done', code];
    return this.st.endItems.run(items, state, shown, nowMs, id, this.owner).changes === 1;
  }

  async finish(id: string, code: number, nowMs: number): Promise<boolean> {
    return this.st.finish.run(code, nowMs, id, this.owner).changes === 1;
  }

  async release(id: string, nowMs: number): Promise<boolean> {
    return this.st.release.run(nowMs, id, this.owner).changes === 1;
  }

  async requeueAbandoned(nowMs: number): Promise<number> {
    return this.db.transaction(() => {
      this.st.orphanNotifying.run();
      return this.st.requeue.run({ now: nowMs }).changes;
    }).immediate();
  }

  async claimNotifying(nowMs: number): Promise<JobRecord | undefined> {
    if (this.st.anyUnownedNotifying.get() === undefined) return undefined; // a read: no write lock for nothing
    const row = this.st.claimNotifying.get(this.owner, nowMs) as JobRow | undefined;
    return row ? toRecord(row) : undefined;
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
    this.tell();
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
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
