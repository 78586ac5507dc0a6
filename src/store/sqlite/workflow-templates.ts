/**
 * Workflow templates on SQLite (table `workflow_templates`, schema.ts), implementing the WorkflowTemplateStore
 * port (ports/workflow-templates.ts). The primary key is (owner, name).
 */
import type Database from 'better-sqlite3';
import type { WorkflowTemplateRecord, WorkflowTemplateStore } from '../../ports/workflow-templates.js';

interface TemplateRow {
  owner: string;
  name: string;
  fops: string;
  pipeline: string | null;
  notify_url: string | null;
  created_ms: number;
  updated_ms: number;
}

const toRecord = (r: TemplateRow): WorkflowTemplateRecord => ({
  owner: r.owner,
  name: r.name,
  fops: r.fops,
  ...(r.pipeline !== null && r.pipeline !== '' ? { pipeline: r.pipeline } : {}),
  ...(r.notify_url !== null && r.notify_url !== '' ? { notifyUrl: r.notify_url } : {}),
  createdMs: r.created_ms,
  updatedMs: r.updated_ms,
});

export class SqliteWorkflowTemplates implements WorkflowTemplateStore {
  private readonly st;

  constructor(private readonly db: Database.Database) {
    this.st = {
      insert: db.prepare(
        `INSERT OR IGNORE INTO workflow_templates (owner, name, fops, pipeline, notify_url, created_ms, updated_ms)
         VALUES (@owner, @name, @fops, @pipeline, @notifyUrl, @createdMs, @updatedMs)`,
      ),
      update: db.prepare(
        `UPDATE workflow_templates SET fops = @fops, pipeline = @pipeline, notify_url = @notifyUrl, updated_ms = @updatedMs
         WHERE owner = @owner AND name = @name`,
      ),
      get: db.prepare('SELECT * FROM workflow_templates WHERE owner = ? AND name = ?'),
      listOwner: db.prepare('SELECT * FROM workflow_templates WHERE owner = ? ORDER BY name'),
      listAll: db.prepare('SELECT * FROM workflow_templates ORDER BY owner, name'),
      delete: db.prepare('DELETE FROM workflow_templates WHERE owner = ? AND name = ?'),
    };
  }

  async put(t: WorkflowTemplateRecord): Promise<'created' | 'updated'> {
    const row = {
      owner: t.owner,
      name: t.name,
      fops: t.fops,
      pipeline: t.pipeline ?? null,
      notifyUrl: t.notifyUrl ?? null,
      createdMs: t.createdMs,
      updatedMs: t.updatedMs,
    };
    return this.db.transaction(() => {
      if (this.st.insert.run(row).changes === 1) return 'created' as const;
      this.st.update.run(row);
      return 'updated' as const;
    }).immediate();
  }

  async get(owner: string, name: string): Promise<WorkflowTemplateRecord | undefined> {
    const row = this.st.get.get(owner, name) as TemplateRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async list(owner?: string): Promise<WorkflowTemplateRecord[]> {
    const rows = (owner === undefined ? this.st.listAll.all() : this.st.listOwner.all(owner)) as TemplateRow[];
    return rows.map(toRecord);
  }

  async delete(owner: string, name: string): Promise<boolean> {
    return this.st.delete.run(owner, name).changes === 1;
  }
}
