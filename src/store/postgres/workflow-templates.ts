/**
 * Workflow templates on PostgreSQL (table `workflow_templates`, schema.ts), implementing the WorkflowTemplateStore
 * port (ports/workflow-templates.ts) with the semantics of store/sqlite/workflow-templates.ts: primary key
 * (owner, name), a replace keeps `created_ms`, lists in byte order (`COLLATE "C"` columns). Every read goes to the
 * database, so a change made on another node is seen at once. Times in Unix ms.
 */
import type { WorkflowTemplateRecord, WorkflowTemplateStore } from '../../ports/workflow-templates.js';
import type { PgDb } from './db.js';

interface TemplateRow {
  owner: string;
  name: string;
  fops: string;
  pipeline: string | null;
  notify_url: string | null;
  created_ms: bigint;
  updated_ms: bigint;
}

const toRecord = (r: TemplateRow): WorkflowTemplateRecord => ({
  owner: r.owner,
  name: r.name,
  fops: r.fops,
  ...(r.pipeline !== null && r.pipeline !== '' ? { pipeline: r.pipeline } : {}),
  ...(r.notify_url !== null && r.notify_url !== '' ? { notifyUrl: r.notify_url } : {}),
  createdMs: Number(r.created_ms),
  updatedMs: Number(r.updated_ms),
});

export class PgWorkflowTemplates implements WorkflowTemplateStore {
  constructor(private readonly db: PgDb) {}

  async put(t: WorkflowTemplateRecord): Promise<'created' | 'updated'> {
    // One upsert; `xmax = 0` holds only for a row this statement inserted.
    const { rows } = await this.db.query<{ created: boolean }>(
      `INSERT INTO workflow_templates (owner, name, fops, pipeline, notify_url, created_ms, updated_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (owner, name) DO UPDATE SET fops = excluded.fops, pipeline = excluded.pipeline,
         notify_url = excluded.notify_url, updated_ms = excluded.updated_ms
       RETURNING (xmax = 0) AS created`,
      [t.owner, t.name, t.fops, t.pipeline ?? null, t.notifyUrl ?? null, t.createdMs, t.updatedMs],
    );
    return rows[0]?.created ? 'created' : 'updated';
  }

  async get(owner: string, name: string): Promise<WorkflowTemplateRecord | undefined> {
    const { rows } = await this.db.query<TemplateRow>('SELECT * FROM workflow_templates WHERE owner = $1 AND name = $2', [
      owner,
      name,
    ]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async list(owner?: string): Promise<WorkflowTemplateRecord[]> {
    const { rows } =
      owner === undefined
        ? await this.db.query<TemplateRow>('SELECT * FROM workflow_templates ORDER BY owner, name')
        : await this.db.query<TemplateRow>('SELECT * FROM workflow_templates WHERE owner = $1 ORDER BY name', [owner]);
    return rows.map(toRecord);
  }

  async delete(owner: string, name: string): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM workflow_templates WHERE owner = $1 AND name = $2', [owner, name]);
    return rowCount === 1;
  }
}
