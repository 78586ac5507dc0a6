/**
 * Persistent processing on the api role (docs/development/kodo-protocol.md §9) and pipelines on the api/uc role:
 * - `POST /pfop/` and `POST /pfop` (both accepted; Qiniu answers the second with 301): form fields `bucket`,
 *   `key`, `fops`, `notifyURL`, `force` (`1`/`true`), `pipeline`, `type` (0/1); `QBox` or `Qiniu` credentials
 *   (the form body signed) → 200 `{"persistentId": "<id>"}`. `workflowTemplateID` instead of `fops` runs one of
 *   the signer's workflow templates (jobs/workflow-templates.ts: 400 unknown; the request's `pipeline` and
 *   `notifyURL` win over the template's); both together → 400.
 * - `GET /status/get/prefop?id=` and `POST /status/get/prefop` (form `id`), credentials optional (ignored) →
 *   the record (jobs/record.ts); 400 malformed id, 612 unknown.
 * - `POST /pipelines/<name>[?concurrency=n]` (root key only; `concurrency` also as a form field) creates a
 *   pipeline or changes its concurrency → 200 `{"name","concurrency","created"}`; `GET /pipelines` (also POST
 *   with no name; any valid key) → `[{"name","concurrency","ctime"}]` (ctime Unix seconds).
 * Semantics and error codes: jobs/submit.ts, jobs/pipelines.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { Errors } from '../../errors.js';
import { listPipelines, parseConcurrency, putPipeline } from '../../jobs/pipelines.js';
import { jobStatus, submitPfop } from '../../jobs/submit.js';
import { templateJob, type TemplateJob } from '../../jobs/workflow-templates.js';
import { params, requiredParam, sendJson } from '../../http/wire.js';

function parseType(text: string | null): number {
  if (text === null || text === '') return 0;
  if (text !== '0' && text !== '1') throw Errors.badRequest('type must be 0 or 1');
  return Number(text);
}

type Call = RouteCall<Granary, Caller>;

/** `POST /pfop[/]` (route table: management; the bucket authorised by `submitPfop`). */
export async function pfop(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { g, caller } = call;
  const p = params(request);
  const bucket = requiredParam(p, 'bucket');
  const key = p.get('key');
  if (key === null) throw Errors.badRequest('key is required');
  const fops = p.get('fops') ?? '';
  const templateId = p.get('workflowTemplateID') ?? '';
  if (fops !== '' && templateId !== '') throw Errors.fopsWithWorkflow();
  if (fops === '' && templateId === '') throw Errors.badFops('fops (or workflowTemplateID) is required');
  const force = p.get('force');
  const notifyUrl = p.get('notifyURL') ?? p.get('notifyUrl') ?? '';
  const pipeline = p.get('pipeline') ?? '';
  const job: TemplateJob =
    templateId !== ''
      ? await templateJob(g, caller.accessKey, templateId, { pipeline, notifyUrl })
      : { fops, pipeline, ...(notifyUrl ? { notifyUrl } : {}), taskFrom: 'pfop' };
  const persistentId = await submitPfop(g, caller.accessKey, {
    bucket,
    key,
    ...job,
    type: parseType(p.get('type')),
    force: force === '1' || force === 'true',
    reqId: request.id,
  });
  return sendJson(reply, 200, { persistentId });
}

/** `GET|POST /status/get/prefop?id=` (route table: no credential). */
export async function prefop(call: RouteCall<Granary, unknown>, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { g } = call;
  const id = params(request).get('id');
  if (id === null || id === '') throw Errors.badPersistentId('id is required');
  return sendJson(reply, 200, await jobStatus(g, id));
}

/** `POST /pipelines/<name>[?concurrency=n]`: root key only (403). */
export async function putPipelineRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  if (!call.g.keyIndex.isRoot(call.caller.accessKey)) throw Errors.forbidden('only the root key manages pipelines');
  const text = params(request).get('concurrency');
  const concurrency = text === null || text === '' ? undefined : parseConcurrency(text);
  const { result, pipeline } = await putPipeline(call.g, (request.params as { name: string }).name, concurrency);
  return sendJson(reply, 200, { name: pipeline.name, concurrency: pipeline.concurrency, created: result === 'created' });
}

/** `GET|POST /pipelines`: any valid key. */
export async function listPipelinesRoute(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const list = await listPipelines(call.g);
  return sendJson(
    reply,
    200,
    list.map((p) => ({ name: p.name, concurrency: p.concurrency, ctime: Math.floor(p.createdMs / 1000) })),
  );
}
