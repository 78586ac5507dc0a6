/**
 * Workflow template management on the api/uc role (Granary's own calls: Kodo creates templates in its console and
 * documents no API for them). Management credential (`QBox` or `Qiniu`) of any key; the caller is the owner and
 * only ever sees and changes its own templates (jobs/workflow-templates.ts).
 * - `POST /workflowTemplates/<name>`: fields `fops` (required), `pipeline`, `notifyURL` as a form body, a JSON
 *   body (`{"fops": …, "pipeline": …, "notifyURL": …}`) or the query → creates the template or replaces its fields;
 *   200 with the template and `"created": true|false`. 400 bad name, commands, pipeline or notify URL.
 * - `GET /workflowTemplates` (also POST) → `[template, …]` by name.
 * - `GET /workflowTemplates/<name>` → the template; 612 unknown.
 * - `DELETE /workflowTemplates/<name>` → 200 `{}`; 612 unknown.
 * A template as JSON: `{"name","fops","pipeline","notifyURL","ctime","mtime"}` (`""` for an absent pipeline or
 * notify URL; times in Unix seconds).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import {
  deleteWorkflowTemplate,
  getWorkflowTemplate,
  listWorkflowTemplates,
  putWorkflowTemplate,
} from '../../jobs/workflow-templates.js';
import type { WorkflowTemplateRecord } from '../../ports/workflow-templates.js';
import { bodyBuffer, params, READ_METHODS, requireManagement, sendJson } from '../http.js';

/** The management-API view of a template. */
export function templateJson(t: WorkflowTemplateRecord): Record<string, unknown> {
  return {
    name: t.name,
    fops: t.fops,
    pipeline: t.pipeline ?? '',
    notifyURL: t.notifyUrl ?? '',
    ctime: Math.floor(t.createdMs / 1000),
    mtime: Math.floor(t.updatedMs / 1000),
  };
}

/** The template fields of a create request: a JSON body, else the form body and the query. */
function fieldsOf(request: FastifyRequest): { fops?: string; pipeline?: string; notifyUrl?: string } {
  const body = bodyBuffer(request);
  if (body && String(request.headers['content-type'] ?? '').startsWith('application/json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw Errors.badRequest('the body is not JSON');
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw Errors.badRequest('the body must be a JSON object');
    const o = parsed as Record<string, unknown>;
    const text = (name: string): string | undefined => {
      const v = o[name];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'string') throw Errors.badRequest(`${name} must be a string`);
      return v;
    };
    return definedOnly({ fops: text('fops'), pipeline: text('pipeline'), notifyUrl: text('notifyURL') ?? text('notifyUrl') });
  }
  const p = params(request);
  return definedOnly({
    fops: p.get('fops') ?? undefined,
    pipeline: p.get('pipeline') ?? undefined,
    notifyUrl: p.get('notifyURL') ?? p.get('notifyUrl') ?? undefined,
  });
}

function definedOnly<T extends object>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** Registers the workflow template calls. */
export function registerWorkflowTemplates(app: FastifyInstance, g: Granary): void {
  app.post<{ Params: { name: string } }>('/workflowTemplates/:name', async (request, reply) => {
    const caller = requireManagement(g, request);
    const { result, template } = await putWorkflowTemplate(g, caller.accessKey, request.params.name, fieldsOf(request));
    return sendJson(reply, 200, { ...templateJson(template), created: result === 'created' });
  });
  app.get<{ Params: { name: string } }>('/workflowTemplates/:name', async (request, reply) => {
    const caller = requireManagement(g, request);
    return sendJson(reply, 200, templateJson(await getWorkflowTemplate(g, caller.accessKey, request.params.name)));
  });
  app.delete<{ Params: { name: string } }>('/workflowTemplates/:name', async (request, reply) => {
    const caller = requireManagement(g, request);
    await deleteWorkflowTemplate(g, caller.accessKey, request.params.name);
    return sendJson(reply, 200, {});
  });
  app.route({
    method: READ_METHODS,
    url: '/workflowTemplates',
    handler: async (request, reply) => {
      const caller = requireManagement(g, request);
      return sendJson(reply, 200, (await listWorkflowTemplates(g, caller.accessKey)).map(templateJson));
    },
  });
}
