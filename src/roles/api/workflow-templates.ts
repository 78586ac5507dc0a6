/**
 * Workflow template management on the api/uc role (Granary's own calls: Kodo creates templates in its console and
 * documents no API for them). Management credential (`QBox` or `Qiniu`, the route table's auth step) of any key; the caller is the owner and
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
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import {
  deleteWorkflowTemplate,
  getWorkflowTemplate,
  listWorkflowTemplates,
  putWorkflowTemplate,
} from '../../jobs/workflow-templates.js';
import type { WorkflowTemplateRecord } from '../../ports/workflow-templates.js';
import { bodyBuffer, params, sendJson } from '../../http/wire.js';

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

type Call = RouteCall<Granary, Caller>;

/** `POST /workflowTemplates/:name`. */
export async function putTemplate(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { result, template } = await putWorkflowTemplate(g, call.caller.accessKey, (request.params as { name: string }).name, fieldsOf(request));
  return sendJson(reply, 200, { ...templateJson(template), created: result === 'created' });
}

/** `GET /workflowTemplates/:name`. */
export async function getTemplate(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  return sendJson(reply, 200, templateJson(await getWorkflowTemplate(g, call.caller.accessKey, (request.params as { name: string }).name)));
}

/** `DELETE /workflowTemplates/:name`. */
export async function deleteTemplate(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  await deleteWorkflowTemplate(g, call.caller.accessKey, (request.params as { name: string }).name);
  return sendJson(reply, 200, {});
}

/** `GET|POST /workflowTemplates`. */
export async function listTemplates(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  return sendJson(reply, 200, (await listWorkflowTemplates(g, call.caller.accessKey)).map(templateJson));
}
