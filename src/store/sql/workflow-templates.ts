/**
 * Workflow templates (table `workflow_templates`), implementing the WorkflowTemplateStore port
 * (ports/workflow-templates.ts) on SQLite and PostgreSQL (db.ts): primary key (owner, name), a replace keeps
 * `created_ms`, lists in byte order (PostgreSQL: `COLLATE "C"` columns). Every read goes to the database, so a
 * change made by another process or node is seen at once. Times in Unix ms.
 */
import type { WorkflowTemplateRecord, WorkflowTemplateStore } from '../../ports/workflow-templates.js';
import type { SqlDb } from './db.js';

interface TemplateRow {
  owner: string;
  name: string;
  fops: string;
  pipeline: string | null;
  notify_url: string | null;
  created_ms: number | bigint;
  updated_ms: number | bigint;
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

const INSERT = `INSERT INTO workflow_templates (owner, name, fops, pipeline, notify_url, created_ms, updated_ms)
  VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, name)`;

const SQL = {
  insert: `${INSERT} DO NOTHING`,
  upsert: `${INSERT} DO UPDATE SET fops = excluded.fops, pipeline = excluded.pipeline,
    notify_url = excluded.notify_url, updated_ms = excluded.updated_ms`,
  update: `UPDATE workflow_templates SET fops = ?, pipeline = ?, notify_url = ?, updated_ms = ? WHERE owner = ? AND name = ?`,
  get: 'SELECT * FROM workflow_templates WHERE owner = ? AND name = ?',
  listAll: 'SELECT * FROM workflow_templates ORDER BY owner, name',
  listOwner: 'SELECT * FROM workflow_templates WHERE owner = ? ORDER BY name',
  delete: 'DELETE FROM workflow_templates WHERE owner = ? AND name = ?',
};

export class SqlWorkflowTemplates implements WorkflowTemplateStore {
  constructor(private readonly db: SqlDb) {}

  /**
   * Creates or replaces (keeping `createdMs`): one upsert where the database tells whether it inserted
   * (PostgreSQL), else one transaction — insert unless it exists, then update.
   */
  async put(t: WorkflowTemplateRecord): Promise<'created' | 'updated'> {
    const pipeline = t.pipeline ?? null;
    const notifyUrl = t.notifyUrl ?? null;
    const row = [t.owner, t.name, t.fops, pipeline, notifyUrl, t.createdMs, t.updatedMs];
    if (this.db.upsertInserted !== undefined) {
      const r = await this.db.get<{ created: boolean }>(`${SQL.upsert} RETURNING ${this.db.upsertInserted} AS created`, row);
      return r?.created ? 'created' : 'updated';
    }
    const [inserted] = await this.db.batch([
      { sql: SQL.insert, args: row },
      { sql: SQL.update, args: [t.fops, pipeline, notifyUrl, t.updatedMs, t.owner, t.name] },
    ]);
    return inserted!.changes === 1 ? 'created' : 'updated';
  }

  async get(owner: string, name: string): Promise<WorkflowTemplateRecord | undefined> {
    const row = await this.db.get<TemplateRow>(SQL.get, [owner, name]);
    return row ? toRecord(row) : undefined;
  }

  async list(owner?: string): Promise<WorkflowTemplateRecord[]> {
    const rows = owner === undefined ? await this.db.all<TemplateRow>(SQL.listAll) : await this.db.all<TemplateRow>(SQL.listOwner, [owner]);
    return rows.map(toRecord);
  }

  async delete(owner: string, name: string): Promise<boolean> {
    return (await this.db.run(SQL.delete, [owner, name])) === 1;
  }
}
