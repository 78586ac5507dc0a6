/**
 * The IAM audit log (go-sdk iam/apis GetAudits): `GET /iam/v1/audits?iuid=&service=&action=&resource=&start_time=
 * &end_time=&marker=&limit=` → `{data: {marker, list: [{id, root_uid, iuid, service, action, created_at,
 * event_time, duration_ms, source_ip, user_event, error_code, error_message, resource, request_id, access_key}]}}`,
 * oldest first. Every IAM change of the account is recorded (iam/admin.ts); the account keeps its last
 * GRANARY_IAM_AUDIT_MAX records. `marker`: pass the answer's marker to read on (`""` when there is no more).
 * `start_time`/`end_time`: RFC 3339 or Unix seconds (`end_time` exclusive). `limit`: 1–1000, default 20.
 * `user_event` is a JSON text `{access_key, resource, request_id, detail}`; `resource`, `request_id` and
 * `access_key` are also given as fields of their own (extra to go-sdk's struct). 400 for a malformed parameter.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../../../errors.js';
import { accountUid } from '../../../iam/ids.js';
import type { IamAuditRecord } from '../../../ports/iam.js';
import { type Call, intParam, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, queryOf, sendData, timeText } from './wire.js';

/** A time parameter: RFC 3339 or Unix seconds → Unix ms; undefined when absent; 400 when malformed. */
function timeParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (/^\d{1,12}$/.test(v)) return Number(v) * 1000;
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(ms)) throw Errors.badRequest(`${name} must be RFC 3339 or Unix seconds`);
  return ms;
}

/** An audit record as the API answers it (go-sdk GetAudits: `AuditLogInfo`, plus `resource`, `request_id`, `access_key`). */
export function auditJson(a: IamAuditRecord): Record<string, unknown> {
  return {
    id: String(a.seq),
    root_uid: accountUid(a.owner),
    iuid: a.iuid,
    service: a.service,
    action: a.action,
    created_at: timeText(a.atMs),
    event_time: timeText(a.atMs),
    duration_ms: 0,
    source_ip: a.sourceIp,
    user_event: JSON.stringify({ access_key: a.actor, resource: a.resource, request_id: a.requestId, detail: JSON.parse(a.detail) as unknown }),
    error_code: a.errorCode,
    error_message: a.errorMessage,
    resource: a.resource,
    request_id: a.requestId,
    access_key: a.actor,
  };
}

export async function getAudits(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const q = queryOf(request);
  const marker = q.get('marker') || '0';
  if (!/^\d{1,15}$/.test(marker)) throw Errors.badRequest('marker is not one this server gave');
  const limit = intParam(q, 'limit') || PAGE_SIZE_DEFAULT;
  if (limit > PAGE_SIZE_MAX) throw Errors.badRequest(`limit must be at most ${PAGE_SIZE_MAX}`);
  const fromMs = timeParam(q, 'start_time');
  const toMs = timeParam(q, 'end_time');
  const iuid = intParam(q, 'iuid');
  const list = await call.g.meta.iam.listAudits(call.caller.accessKey, {
    afterSeq: Number(marker),
    limit,
    ...(iuid ? { iuid } : {}),
    ...(q.get('service') ? { service: q.get('service')! } : {}),
    ...(q.get('action') ? { action: q.get('action')! } : {}),
    ...(q.get('resource') ? { resource: q.get('resource')! } : {}),
    ...(fromMs !== undefined ? { fromMs } : {}),
    ...(toMs !== undefined ? { toMs } : {}),
  });
  const next = list.length === limit ? String(list[list.length - 1]!.seq) : '';
  return sendData(reply, { marker: next, list: list.map(auditJson) });
}
