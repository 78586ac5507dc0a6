/**
 * Bucket event notification rules on the uc role (docs/development/kodo-protocol.md §8.6, §13.2; the Node SDK's putBucketEvent,
 * updateBucketEvent, deleteBucketEvent, getBucketEvent): management credential (the route table's auth step), the bucket authorised like every
 * bucket operation (631 missing, 403 another account's).
 * - `POST /events/add`, form `bucket, name, prefix, suffix, event, callbackURL, access_key, host`: 200 `{}`.
 *   `event` and `callbackURL` may repeat (the SDK sends arrays as repeated fields) or hold several values
 *   separated by `,` (events) or `;` (URLs).
 * - `POST /events/update`, same fields, `bucket` and `name` required: the fields sent replace the rule's; 400
 *   unknown name (Kodo's status for an update).
 * - `POST /events/delete`, form `bucket, name`: 200 `{}`; 612 unknown name.
 * - `GET|POST /events/get?bucket=`: `[{name, prefix, suffix, events, callback_urls, access_key, host, ctime}]`.
 * Fields are read from the query and from a form body (query first).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import { addEventRule, deleteEventRule, eventRulesJson, updateEventRule, type EventRuleInput } from '../../events/rules.js';
import { bodyBuffer, rawUrlOf, requiredParam, sendEmpty, sendJson } from '../../http/wire.js';

/** Query fields, then form-body fields, every value of repeated names kept. */
function fields(request: FastifyRequest): URLSearchParams {
  const raw = rawUrlOf(request);
  const q = raw.indexOf('?');
  const out = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : '');
  const body = bodyBuffer(request);
  const ct = String(request.headers['content-type'] ?? '');
  if (body && ct.startsWith('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) out.append(k, v);
  }
  return out;
}

/** All values of `name`, each split on `sep`, trimmed, empty ones dropped; undefined when the field is absent. */
function list(p: URLSearchParams, name: string, sep: string): string[] | undefined {
  if (!p.has(name)) return undefined;
  return p
    .getAll(name)
    .flatMap((v) => v.split(sep))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** The rule fields of a request (absent fields stay undefined). */
function ruleInput(p: URLSearchParams): EventRuleInput {
  const input: EventRuleInput = { name: requiredParam(p, 'name') };
  const text = (name: string): string | undefined => (p.has(name) ? (p.get(name) ?? '') : undefined);
  const prefix = text('prefix');
  if (prefix !== undefined) input.prefix = prefix;
  const suffix = text('suffix');
  if (suffix !== undefined) input.suffix = suffix;
  const events = list(p, 'event', ',');
  if (events !== undefined) input.events = events;
  const urls = list(p, 'callbackURL', ';');
  if (urls !== undefined) input.callbackUrls = urls;
  const accessKey = text('access_key');
  if (accessKey !== undefined) input.accessKey = accessKey;
  const host = text('host');
  if (host !== undefined) input.host = host;
  return input;
}

type Call = RouteCall<Granary, Caller>;

/** `POST /events/add`. */
export async function addEvents(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const p = fields(request);
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await addEventRule(g, call.caller.accessKey, bucket.name, ruleInput(p));
  return sendEmpty(reply);
}

/** `POST /events/update`. */
export async function updateEvents(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const p = fields(request);
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await updateEventRule(g, call.caller.accessKey, bucket.name, ruleInput(p));
  return sendEmpty(reply);
}

/** `POST /events/delete`. */
export async function deleteEvents(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const p = fields(request);
  const bucket = await call.authorize(requiredParam(p, 'bucket'));
  await deleteEventRule(g, bucket.name, requiredParam(p, 'name'));
  return sendEmpty(reply);
}

/** `GET|POST /events/get`. */
export async function getEvents(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const bucket = await call.authorize(requiredParam(fields(request), 'bucket'));
  return sendJson(reply, 200, eventRulesJson(bucket));
}
