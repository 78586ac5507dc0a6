/**
 * Wire shapes of the Kodo IAM API (`/iam/v1/…` on the api host), as Qiniu's go-sdk `iam/apis` parses them: every
 * answer with a result is `{"data": …}`; lists are `{"data": {"count": <total>, "list": […]}}`; times are strings
 * (RFC 3339, UTC, seconds); ids are strings, `root_uid`/`iuid` numbers. Requests are JSON bodies (`alias`,
 * `password`, `description`, `edit_type`, `statement`, `policy_aliases`, `user_aliases`, `group_aliases`) and
 * `page`/`page_size` query parameters. Source: go-sdk iam/apis/<name>/api.go (the JSON tags of each
 * Request/Response).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../../auth/management.js';
import type { Granary } from '../../../context.js';
import { Errors } from '../../../errors.js';
import type { IamActor } from '../../../iam/admin.js';
import { accountUid } from '../../../iam/ids.js';
import { storedStatements } from '../../../iam/policy.js';
import type { IamGroupRecord, IamKeyPairRecord, IamPolicyRecord, IamUserRecord, Page, PageRequest } from '../../../ports/iam.js';
import type { RouteCall } from '../../../http/route-call.js';
import { bodyBuffer, rawUrlOf, sendJson } from '../../../http/wire.js';

export type Call = RouteCall<Granary, Caller>;

/** Default and largest `page_size`. */
export const PAGE_SIZE_DEFAULT = 20;
export const PAGE_SIZE_MAX = 1000;

/** Unix ms → `2006-01-02T15:04:05Z`. */
export function timeText(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `last_login_time` of a sub-user that never signed in: Go's zero time, as Go services write it. */
const NEVER = '0001-01-01T00:00:00Z';

export function userJson(u: IamUserRecord): Record<string, unknown> {
  return {
    id: u.id,
    root_uid: accountUid(u.owner),
    iuid: u.iuid,
    alias: u.alias,
    created_at: timeText(u.createdMs),
    updated_at: timeText(u.updatedMs),
    last_login_time: u.lastLoginMs > 0 ? timeText(u.lastLoginMs) : NEVER,
    enabled: u.enabled,
  };
}

export function keyPairJson(k: IamKeyPairRecord): Record<string, unknown> {
  return { id: k.id, access_key: k.accessKey, secret_key: k.secretKey, user_id: k.userId, created_at: timeText(k.createdMs), enabled: k.enabled };
}

export function groupJson(gr: IamGroupRecord): Record<string, unknown> {
  return {
    id: gr.id,
    root_uid: accountUid(gr.owner),
    alias: gr.alias,
    description: gr.description,
    enabled: gr.enabled,
    created_at: timeText(gr.createdMs),
    updated_at: timeText(gr.updatedMs),
  };
}

export function policyJson(p: IamPolicyRecord): Record<string, unknown> {
  return {
    id: p.id,
    root_uid: accountUid(p.owner),
    alias: p.alias,
    description: p.description,
    edit_type: p.editType,
    enabled: p.enabled,
    created_at: timeText(p.createdMs),
    updated_at: timeText(p.updatedMs),
    statement: storedStatements(p.statement),
  };
}

/** Answers `{"data": data}` (200). */
export function sendData(reply: FastifyReply, data: unknown): FastifyReply {
  return sendJson(reply, 200, { data });
}

/** Answers a page as `{"data": {"count", "list"}}`. */
export function sendPage<T>(reply: FastifyReply, page: Page<T>, view: (t: T) => unknown): FastifyReply {
  return sendData(reply, { count: page.count, list: page.list.map(view) });
}

/** The query parameters. */
export function queryOf(request: FastifyRequest): URLSearchParams {
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  return new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
}

/** A non-negative integer query parameter, or undefined when absent/empty (400 when malformed). */
export function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = /^\d{1,16}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw Errors.badRequest(`${name} must be a non-negative integer`);
  return n;
}

/** `page` (1-based; 0 or absent: 1) and `page_size` (absent or 0: 20; at most 1000) → offset and limit. */
export function pageOf(request: FastifyRequest): PageRequest {
  const q = queryOf(request);
  const page = Math.max(1, intParam(q, 'page') ?? 1);
  const size = intParam(q, 'page_size') || PAGE_SIZE_DEFAULT;
  if (size > PAGE_SIZE_MAX) throw Errors.badRequest(`page_size must be at most ${PAGE_SIZE_MAX}`);
  return { offset: (page - 1) * size, limit: size };
}

/** The JSON object body (an empty body is `{}`); 400 when it is not a JSON object. */
export function jsonBody(request: FastifyRequest): Record<string, unknown> {
  const body = bodyBuffer(request);
  if (!body || body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw Errors.badRequest('the body is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw Errors.badRequest('the body must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** A path parameter. */
export function pathParam(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, string | undefined>)[name];
  if (!v) throw Errors.badRequest(`${name} is required`);
  return v;
}

/** The acting account and the request's facts for the audit log. */
export function actorOf(call: Call, request: FastifyRequest): IamActor {
  return { owner: call.caller.accessKey, requestId: String(request.id), sourceIp: request.ip };
}
