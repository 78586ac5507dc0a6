/**
 * Workflow templates (docs/development/kodo-protocol.md §3.1 `persistentWorkflowTemplateID`, §9.1 `workflowTemplateID`): a named list of
 * persistent-processing commands, with an optional pipeline and notify URL, that pfop and uploads start by name
 * instead of sending the commands. Kodo keeps them per account and creates them in its console; Granary keeps
 * them per account too, managed with the CLI (`granary workflow …`) and the management calls of
 * roles/api/workflow-templates.ts.
 *
 * Rules:
 * - A template belongs to its owner (an AccessKey: the root key or an account key). Names are unique per owner;
 *   every use looks the name up among the templates of the key that submits the job (the pfop signer, the upload
 *   token's key), so an account can neither see nor use another account's templates — not even root's: root has
 *   its own templates like any account.
 * - Names: 1–64 characters of `A-Z a-z 0-9 . _ -`, starting with a letter or digit (400 otherwise).
 * - Creation validates the commands with the parser pfop uses (400 naming the bad command), the pipeline (400 when
 *   it does not exist) and the notify URL (400 unless http(s)). Creating an existing name replaces its fields.
 * - A job started from a template copies the template's commands when it is submitted (later changes to the
 *   template do not touch queued jobs); its pipeline and notify URL are the request's when given, else the
 *   template's. Its prefop record says `taskFrom: "workflow: <name>"` (Kodo's `<source>: <source_id>` form).
 * - An unknown name in pfop or a put policy → 400 before anything is queued or stored; get/delete of an unknown
 *   template → 612.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { WorkflowTemplateRecord } from '../ports/workflow-templates.js';
import { commandStages, splitCommands } from './commands.js';
import { checkPipelineName } from './pipelines.js';
import { checkNotifyUrl } from './submit.js';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** 400 unless `name` is a valid template name. */
export function checkTemplateName(name: string): void {
  if (!NAME_RE.test(name)) {
    throw Errors.badWorkflowTemplateName(
      `${JSON.stringify(name.slice(0, 80))}: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
    );
  }
}

/** What a template says (as given to create it; empty strings mean absent). */
export interface TemplateFields {
  fops: string;
  pipeline?: string;
  notifyUrl?: string;
}

/**
 * The fields of a template to create, normalised (trimmed; empty optional fields dropped) and checked without the
 * store: commands (400 naming the bad one), pipeline name syntax, notify URL scheme.
 */
export function templateFields(input: { fops?: string | undefined; pipeline?: string | undefined; notifyUrl?: string | undefined }): TemplateFields {
  const fops = (input.fops ?? '').trim();
  if (fops === '') throw Errors.badFops('fops is required');
  for (const c of splitCommands(fops)) commandStages(c);
  const pipeline = input.pipeline?.trim() || undefined;
  if (pipeline !== undefined) checkPipelineName(pipeline);
  const notifyUrl = input.notifyUrl?.trim() || undefined;
  if (notifyUrl !== undefined) checkNotifyUrl(notifyUrl);
  return { fops, ...(pipeline !== undefined ? { pipeline } : {}), ...(notifyUrl !== undefined ? { notifyUrl } : {}) };
}

/** Creates `owner`'s template `name`, or replaces its fields (see the module comment for the checks). */
export async function putWorkflowTemplate(
  g: Granary,
  owner: string,
  name: string,
  input: { fops?: string | undefined; pipeline?: string | undefined; notifyUrl?: string | undefined },
): Promise<{ result: 'created' | 'updated'; template: WorkflowTemplateRecord }> {
  checkTemplateName(name);
  const fields = templateFields(input);
  if (fields.pipeline !== undefined && !(await g.jobs.getPipeline(fields.pipeline))) throw Errors.unknownPipeline(fields.pipeline);
  const nowMs = g.clock.nowMs();
  const result = await g.meta.workflowTemplates.put({ owner, name, ...fields, createdMs: nowMs, updatedMs: nowMs });
  return { result, template: (await g.meta.workflowTemplates.get(owner, name)) as WorkflowTemplateRecord };
}

/** `owner`'s template `name`; 612 when there is none. */
export async function getWorkflowTemplate(g: Granary, owner: string, name: string): Promise<WorkflowTemplateRecord> {
  const t = NAME_RE.test(name) ? await g.meta.workflowTemplates.get(owner, name) : undefined;
  if (!t) throw Errors.noSuchWorkflowTemplate(name.slice(0, 80));
  return t;
}

/** `owner`'s templates by name (every owner's, by owner then name, when `owner` is undefined). */
export async function listWorkflowTemplates(g: Granary, owner?: string): Promise<WorkflowTemplateRecord[]> {
  return g.meta.workflowTemplates.list(owner);
}

/** Deletes `owner`'s template `name`; 612 when there is none. Jobs it started are not touched. */
export async function deleteWorkflowTemplate(g: Granary, owner: string, name: string): Promise<void> {
  if (!NAME_RE.test(name) || !(await g.meta.workflowTemplates.delete(owner, name))) {
    throw Errors.noSuchWorkflowTemplate(name.slice(0, 80));
  }
}

/** The `taskFrom` of a job started from template `name` (Kodo: `<source>: <source_id>`). */
export function workflowTaskFrom(name: string): string {
  return `workflow: ${name}`;
}

/** The job fields a template gives: its commands; the request's pipeline/notify URL first, else the template's. */
export interface TemplateJob {
  fops: string;
  pipeline?: string;
  notifyUrl?: string;
  taskFrom: string;
}

/** Combines a template with the pipeline and notify URL of the request that names it (pure). */
export function jobOfTemplate(t: WorkflowTemplateRecord, request: { pipeline?: string | undefined; notifyUrl?: string | undefined }): TemplateJob {
  const pipeline = request.pipeline || t.pipeline;
  const notifyUrl = request.notifyUrl || t.notifyUrl;
  return {
    fops: t.fops,
    ...(pipeline ? { pipeline } : {}),
    ...(notifyUrl ? { notifyUrl } : {}),
    taskFrom: workflowTaskFrom(t.name),
  };
}

/**
 * The job fields of template `name` of `accessKey` (the submitter) for a request with its own pipeline/notify URL;
 * 400 when the submitter has no such template. The caller still validates the job (validateJob).
 */
export async function templateJob(
  g: Granary,
  accessKey: string,
  name: string,
  request: { pipeline?: string | undefined; notifyUrl?: string | undefined },
): Promise<TemplateJob> {
  const t = NAME_RE.test(name) ? await g.meta.workflowTemplates.get(accessKey, name) : undefined;
  if (!t) throw Errors.unknownWorkflowTemplate(name.slice(0, 80));
  return jobOfTemplate(t, request);
}
