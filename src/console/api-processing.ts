/**
 * The Processing screen's API, calling src/jobs/* and src/objects/fetch/async-fetch.ts:
 * - `GET /api/jobs?pipeline=&code=&before=&limit=` → `{jobs: [prefop record + state, notifyUrl, attempts, createdMs,
 *   updatedMs], next?}`, newest first; an account sees its own jobs, the root key every job. `code` 0–4 (the notify
 *   state: 4 = the notification failed; jobs being notified have state `notifying`).
 * - `GET /api/jobs/:id` → the same record for one job (612 when unknown or another account's).
 * - `POST /api/jobs` `{bucket, key, fops, pipeline?, notifyUrl?, force?}` → `{persistentId}` (`submitPfop`: 631/403/
 *   612 for the source, 400 bad fops or pipeline).
 * - `GET /api/pipelines` → `[{name, concurrency, createdMs}]`; `PUT /api/pipelines/:name` `{concurrency}` (root only).
 * - `GET /api/workflows` → the caller's workflow templates; `PUT /api/workflows/:name` `{fops, pipeline?, notifyUrl?}`;
 *   `DELETE /api/workflows/:name`.
 * - `POST /api/fetch-tasks` `{url, bucket, key?, md5?, etag?, ignore_same_key?, …}` (the `/sisyphus/fetch` body) →
 *   `{id, wait}`; `GET /api/fetch-tasks/:id` → the task's state and result (612 unknown or another account's);
 *   `GET /api/fetch-tasks?before=&limit=` → `{tasks: [{id, state, attempts, request, result, createdMs, updatedMs}],
 *   next?}`, newest first (an account's own; every task for the root key).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { asyncFetchStatus, parseAsyncFetchRequest, submitAsyncFetch } from '../objects/fetch/async-fetch.js';
import { commandTexts } from '../jobs/commands.js';
import { listPipelines, putPipeline } from '../jobs/pipelines.js';
import type { JobFilter, JobRecord } from '../ports/job-queue.js';
import { itemsOf, prefopRecord } from '../jobs/record.js';
import { submitPfop } from '../jobs/submit.js';
import { deleteWorkflowTemplate, listWorkflowTemplates, putWorkflowTemplate } from '../jobs/workflow-templates.js';
import type { RouteCall } from '../http/route-call.js';
import type { ConsoleApi } from './api-context.js';
import type { ConsoleSession } from './sessions.js';
import { bodyOf, int, optText, pathParam, queryParam, text } from './body.js';
import { requireRoot } from './guard.js';

/** A job as the Processing screen shows it. */
function jobJson(job: JobRecord): Record<string, unknown> {
  return {
    ...prefopRecord(job, itemsOf(job, commandTexts(job.fops))),
    state: job.state,
    attempts: job.attempts,
    notifyUrl: job.notifyUrl ?? '',
    createdMs: job.createdMs,
    updatedMs: job.updatedMs,
  };
}

/** An optional integer query parameter within [min, max] (undefined when absent). */
function intQuery(value: string, name: string, min: number, max: number): number | undefined {
  if (value === '') return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw Errors.badRequest(`${name} must be an integer between ${min} and ${max}`);
  return n;
}

async function ownJob(g: Granary, accessKey: string, root: boolean, id: string): Promise<JobRecord> {
  const job = await g.jobs.get(id);
  if (!job || (!root && job.accessKey !== accessKey)) throw Errors.noSuchJob(id.slice(0, 80));
  return job;
}

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** `GET /api/jobs`. */
export async function listJobsApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const filter: JobFilter = {};
  if (!s.root) filter.accessKey = s.accessKey;
  const pipeline = queryParam(request, 'pipeline');
  if (pipeline !== '') filter.pipeline = pipeline;
  const code = intQuery(queryParam(request, 'code'), 'code', 0, 4);
  if (code !== undefined) filter.code = code;
  const before = intQuery(queryParam(request, 'before'), 'before', 1, Number.MAX_SAFE_INTEGER);
  const limit = intQuery(queryParam(request, 'limit'), 'limit', 1, 200) ?? 50;
  const page = await g.jobs.list(filter, before, limit);
  return { jobs: page.jobs.map(jobJson), ...(page.next !== undefined ? { next: page.next } : {}) };
}

/** `GET /api/jobs/:id`. */
export async function jobApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  return jobJson(await ownJob(g, s.accessKey, s.root, pathParam(request, 'id')));
}

/** `POST /api/jobs`. */
export async function submitJobApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const b = bodyOf(request);
  const notifyUrl = optText(b, 'notifyUrl');
  const persistentId = await submitPfop(g, s.accessKey, {
    bucket: text(b, 'bucket'),
    key: text(b, 'key'),
    fops: text(b, 'fops'),
    pipeline: optText(b, 'pipeline'),
    ...(notifyUrl ? { notifyUrl } : {}),
    type: 0,
    force: b.force === true,
    reqId: request.id,
    taskFrom: 'pfop',
  });
  return { persistentId };
}

/** `GET /api/pipelines`. */
export async function listPipelinesApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  return listPipelines(call.g);
}

/** `PUT /api/pipelines/:name`. */
export async function putPipelineApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  requireRoot(call.caller, 'change pipelines');
  const { result, pipeline } = await putPipeline(g, pathParam(request, 'name'), int(bodyOf(request), 'concurrency', 0, 64));
  return { ...pipeline, created: result === 'created' };
}

/** `GET /api/workflows`. */
export async function listWorkflowsApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  return listWorkflowTemplates(g, s.accessKey);
}

/** `PUT /api/workflows/:name`. */
export async function putWorkflowApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const b = bodyOf(request);
  const pipeline = optText(b, 'pipeline');
  const notifyUrl = optText(b, 'notifyUrl');
  const { result, template } = await putWorkflowTemplate(g, s.accessKey, pathParam(request, 'name'), {
    fops: text(b, 'fops'),
    pipeline: pipeline || undefined,
    notifyUrl: notifyUrl || undefined,
  });
  return { ...template, created: result === 'created' };
}

/** `DELETE /api/workflows/:name`. */
export async function deleteWorkflowApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  await deleteWorkflowTemplate(g, s.accessKey, pathParam(request, 'name'));
  return reply.code(204).send();
}

/** `POST /api/fetch-tasks`. */
export async function submitFetchTaskApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const req = parseAsyncFetchRequest(Buffer.from(JSON.stringify(bodyOf(request)), 'utf8'));
  return submitAsyncFetch(g, s.accessKey, req);
}

/** `GET /api/fetch-tasks`. */
export async function listFetchTasksApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const before = intQuery(queryParam(request, 'before'), 'before', 1, Number.MAX_SAFE_INTEGER);
  const limit = intQuery(queryParam(request, 'limit'), 'limit', 1, 200) ?? 50;
  const page = await g.meta.fetchTasks.list(s.root ? undefined : s.accessKey, before, limit);
  const parse = (text: string | undefined): unknown => {
    try {
      return text === undefined ? null : JSON.parse(text);
    } catch {
      return null;
    }
  };
  return {
    tasks: page.tasks.map((t) => ({
      id: t.id,
      state: t.state,
      attempts: t.attempts,
      request: parse(t.request),
      result: parse(t.result),
      createdMs: t.createdMs,
      updatedMs: t.updatedMs,
    })),
    ...(page.next !== undefined ? { next: page.next } : {}),
  };
}

/** `GET /api/fetch-tasks/:id`. */
export async function fetchTaskApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  return asyncFetchStatus(g, s.accessKey, pathParam(request, 'id'));
}
