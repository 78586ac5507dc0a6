/**
 * Workflow templates without a server: the pure checks of jobs/workflow-templates.ts (names, fields with the pfop
 * command parser, the job a template gives), the WorkflowTemplateStore port on SQLite and PostgreSQL (one
 * namespace per owner, replace keeps ctime, list order, delete), and an SQLite database made before templates
 * existed (the table appears).
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import {
  checkTemplateName,
  jobOfTemplate,
  templateFields,
  workflowTaskFrom,
} from '../../src/jobs/workflow-templates.js';
import type { MetaStore } from '../../src/ports/meta.js';
import type { WorkflowTemplateRecord } from '../../src/ports/workflow-templates.js';
import { SqliteMetaStore } from '../../src/store/sqlite/sqlite-meta-store.js';
import { metaStoreKinds } from '../helpers/meta-stores.js';

const kinds = metaStoreKinds();

/** The catalogue kind and status of what `fn` throws. */
function thrown(fn: () => unknown): { kind: string; status: number; message: string } {
  try {
    fn();
  } catch (err) {
    if (isKodoError(err)) return { kind: err.kind, status: err.status, message: err.message };
    throw err;
  }
  throw new Error('did not throw');
}

describe('template names', () => {
  it.each(['a', 'thumbs', 'Thumbs.v2', 'x_y-z', '0', 'a'.repeat(64)])('accepts %j', (name) => {
    expect(() => checkTemplateName(name)).not.toThrow();
  });
  it.each(['', '.', '..', '.hidden', '-x', '_x', 'a b', 'a/b', 'é', 'a'.repeat(65), 'a:b'])('refuses %j with 400', (name) => {
    expect(thrown(() => checkTemplateName(name))).toMatchObject({ kind: 'badWorkflowTemplateName', status: 400 });
  });
});

describe('templateFields', () => {
  it('trims, drops empty optional fields and keeps valid commands', () => {
    expect(templateFields({ fops: ' imageInfo;imageAve ', pipeline: '', notifyUrl: '  ' })).toEqual({ fops: 'imageInfo;imageAve' });
    expect(templateFields({ fops: 'imageView2/2/w/100', pipeline: 'thumbs', notifyUrl: 'https://app.example/n' })).toEqual({
      fops: 'imageView2/2/w/100',
      pipeline: 'thumbs',
      notifyUrl: 'https://app.example/n',
    });
  });

  it('refuses missing fops, unknown commands and bad parameters with 400 naming the command (the pfop parser)', () => {
    expect(thrown(() => templateFields({}))).toMatchObject({ kind: 'badFops', status: 400 });
    expect(thrown(() => templateFields({ fops: ' ; ' }))).toMatchObject({ kind: 'badFops', status: 400 });
    expect(thrown(() => templateFields({ fops: 'imageInfo;bogusCmd/1' })).message).toMatch(/bogusCmd/);
    expect(thrown(() => templateFields({ fops: 'imageView2/9/w/10' })).message).toMatch(/imageView2/);
    expect(thrown(() => templateFields({ fops: 'imageInfo|saveas/!!!' })).status).toBe(400);
    expect(thrown(() => templateFields({ fops: Array(21).fill('imageInfo').join(';') })).message).toMatch(/20/);
  });

  it('refuses a bad pipeline name and a notify URL that is not http(s)', () => {
    expect(thrown(() => templateFields({ fops: 'imageInfo', pipeline: 'bad name' }))).toMatchObject({ kind: 'badPipelineName', status: 400 });
    expect(thrown(() => templateFields({ fops: 'imageInfo', notifyUrl: 'ftp://x' })).message).toMatch(/notifyURL/);
    expect(thrown(() => templateFields({ fops: 'imageInfo', notifyUrl: 'not a url' })).message).toMatch(/notifyURL/);
  });
});

describe('the job of a template', () => {
  const t: WorkflowTemplateRecord = {
    owner: 'ak',
    name: 'thumbs',
    fops: 'imageInfo',
    pipeline: 'tp',
    notifyUrl: 'http://t/n',
    createdMs: 1,
    updatedMs: 1,
  };

  it('takes the commands; the request pipeline/notify URL win over the template, which wins over none', () => {
    expect(jobOfTemplate(t, {})).toEqual({ fops: 'imageInfo', pipeline: 'tp', notifyUrl: 'http://t/n', taskFrom: 'workflow: thumbs' });
    expect(jobOfTemplate(t, { pipeline: '', notifyUrl: '' })).toMatchObject({ pipeline: 'tp', notifyUrl: 'http://t/n' });
    expect(jobOfTemplate(t, { pipeline: 'rp', notifyUrl: 'http://r/n' })).toMatchObject({ pipeline: 'rp', notifyUrl: 'http://r/n' });
    const bare = jobOfTemplate({ ...t, pipeline: undefined, notifyUrl: undefined } as unknown as WorkflowTemplateRecord, {});
    expect(bare).toEqual({ fops: 'imageInfo', taskFrom: 'workflow: thumbs' });
  });

  it('says where it came from in Kodo\'s "<source>: <source_id>" form', () => {
    expect(workflowTaskFrom('a.b')).toBe('workflow: a.b');
  });
});

const rec = (owner: string, name: string, over: Partial<WorkflowTemplateRecord> = {}): WorkflowTemplateRecord => ({
  owner,
  name,
  fops: 'imageInfo',
  createdMs: 1000,
  updatedMs: 1000,
  ...over,
});

describe.each(kinds.names)('the WorkflowTemplateStore on %s', (kind) => {
  let meta: MetaStore;
  beforeEach(async () => {
    [meta] = (await kinds.fresh(kind)) as [MetaStore];
  });

  it('keeps one namespace per owner; replacing keeps ctime and can clear optional fields', async () => {
    const store = meta.workflowTemplates;
    expect(await store.put(rec('alice', 'wf', { pipeline: 'p', notifyUrl: 'http://n' }))).toBe('created');
    expect(await store.put(rec('bob', 'wf', { fops: 'imageAve' }))).toBe('created');
    expect(await store.get('alice', 'wf')).toEqual(rec('alice', 'wf', { pipeline: 'p', notifyUrl: 'http://n' }));
    expect(await store.get('bob', 'wf')).toEqual(rec('bob', 'wf', { fops: 'imageAve' }));
    expect(await store.get('carol', 'wf')).toBeUndefined();

    expect(await store.put(rec('alice', 'wf', { fops: 'exif', createdMs: 5000, updatedMs: 5000 }))).toBe('updated');
    expect(await store.get('alice', 'wf')).toEqual(rec('alice', 'wf', { fops: 'exif', createdMs: 1000, updatedMs: 5000 }));
  });

  it('lists by name for an owner, by owner then name for all; deletes one owner\'s template only', async () => {
    const store = meta.workflowTemplates;
    for (const [o, n] of [['bob', 'z'], ['alice', 'b'], ['alice', 'a'], ['bob', 'a']] as const) await store.put(rec(o, n));
    expect((await store.list('alice')).map((t) => t.name)).toEqual(['a', 'b']);
    expect((await store.list()).map((t) => `${t.owner}/${t.name}`)).toEqual(['alice/a', 'alice/b', 'bob/a', 'bob/z']);
    expect(await store.delete('alice', 'a')).toBe(true);
    expect(await store.delete('alice', 'a')).toBe(false);
    expect(await store.get('bob', 'a')).toBeDefined();
    expect((await store.list()).map((t) => `${t.owner}/${t.name}`)).toEqual(['alice/b', 'bob/a', 'bob/z']);
  });

  it('keeps names and owners byte for byte (case and non-ASCII are distinct; byte order)', async () => {
    const store = meta.workflowTemplates;
    for (const n of ['b', 'B', 'é', 'a']) await store.put(rec('ak', n));
    expect((await store.list('ak')).map((t) => t.name)).toEqual(['B', 'a', 'b', 'é']);
    expect(await store.get('AK', 'a')).toBeUndefined();
  });
});

describe('the WorkflowTemplateStore on SQLite', () => {
  let dir = '';
  let meta: SqliteMetaStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'granary-wf-'));
    meta = new SqliteMetaStore(join(dir, 'meta.db'));
  });
  afterEach(async () => {
    await meta.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is on disk (another connection reads it), and a database made before templates existed gets the table on open', async () => {
    await meta.workflowTemplates.put(rec('alice', 'kept'));
    await meta.close();
    // A database of an earlier version: drop the table as if it never existed; opening brings it back.
    const raw = new Database(join(dir, 'meta.db'));
    expect(raw.prepare('SELECT COUNT(*) AS n FROM workflow_templates').get()).toEqual({ n: 1 });
    raw.exec('DROP TABLE workflow_templates');
    raw.close();
    meta = new SqliteMetaStore(join(dir, 'meta.db'));
    expect(await meta.workflowTemplates.list()).toEqual([]);
    await meta.workflowTemplates.put(rec('alice', 'again'));
    expect((await meta.workflowTemplates.list()).map((t) => t.name)).toEqual(['again']);
  });
});
