/**
 * The Buckets screen's API (JSON; the session and every bucket checked by the route table's auth step like the
 * Kodo API: 631 missing, 403 another account's), calling the bucket domain functions (src/buckets/*, src/events/rules.ts):
 * - `GET /api/buckets` → `[{name, region, private, ctime, owner, objects, bytes}]`, the caller's buckets only
 *   (every bucket for the root key); `objects`/`bytes` from the usage counters (no scan).
 * - `POST /api/buckets` `{name, region?}` → 200 `{name}` (400 bad name, 614 exists); owned by the caller.
 * - `DELETE /api/buckets/:bucket` → 204 (400 not empty).
 * - `GET /api/buckets/:bucket` → `{info (v2/bucketInfo's shape), owner, usage, quota, cors (wire shape), domains,
 *   rules (lifecycle), events, versioning ('Enabled' | 'Suspended' | null: never versioned)}`.
 * - `PUT /api/buckets/:bucket/settings/:setting` with the setting's body (see SETTINGS) → 204; `versioning`
 *   `{status: 'Enabled'|'Suspended'}` (docs/reference/versioning.md: never back to unversioned).
 * - `PUT|DELETE /api/buckets/:bucket/styles/:name` `{pipeline}`; `POST|DELETE /api/buckets/:bucket/domains[/:domain]`;
 *   `POST /api/buckets/:bucket/rules`, `PUT|DELETE …/rules/:name` (lifecycle); `POST /api/buckets/:bucket/events`,
 *   `PUT|DELETE …/events/:name` (event notifications) → 204.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayAccess, VISIBLE } from '../auth/authorize.js';
import { bindDomain, bucketInfo, clearBucketSource, createBucket, dropBucket, setBucketNrop, setBucketPrivate, setBucketSource } from '../buckets/buckets.js';
import { corsRulesToWire, parseCorsRules, setCorsRules } from '../buckets/cors.js';
import { addRule, DAY_FIELDS, deleteRule, rulesOf, updateRule, type RuleInput } from '../buckets/lifecycle-rule-admin.js';
import { s3OnlyRulesForKodo } from '../buckets/s3-lifecycle.js';
import { parseMaxAge, setMaxAge } from '../buckets/max-age.js';
import { normaliseDomain } from '../buckets/names.js';
import { setProtected } from '../buckets/protection.js';
import { parseQuotaValue, quotaOf, setBucketQuota } from '../buckets/quota.js';
import { parseRefererSettings, setReferer } from '../buckets/referer.js';
import { removeStyle, setSeparator, setStyle } from '../buckets/styles.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { addEventRule, deleteEventRule, eventRulesJson, updateEventRule, type EventRuleInput } from '../events/rules.js';
import type { BucketRecord } from '../ports/meta.js';
import type { RouteCall } from '../http/route-call.js';
import type { ConsoleApi } from './api-context.js';
import type { ConsoleSession } from './sessions.js';
import { bodyOf, flag, optText, pathParam, text, type Body } from './body.js';
import { setBucketVersioning } from '../buckets/versioning.js';

/** A field as text for the parsers of the uc routes ('' when absent; numbers and booleans as the wire writes them). */
function wire(b: Body, name: string): string {
  const v = b[name];
  if (v === undefined || v === null) return '';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number' || typeof v === 'string') return String(v);
  throw Errors.badRequest(`${name} must be a string or a number`);
}

/** One bucket setting: its body → the domain call. */
const SETTINGS: Record<string, (g: Granary, bucket: string, b: Body) => Promise<unknown>> = {
  private: (g, bucket, b) => setBucketPrivate(g, bucket, flag(b, 'private')),
  nrop: (g, bucket, b) => setBucketNrop(g, bucket, flag(b, 'enabled')),
  source: (g, bucket, b) => {
    const url = optText(b, 'url');
    if (url === '') return clearBucketSource(g, bucket);
    const host = optText(b, 'host');
    return setBucketSource(g, bucket, url, host === '' ? undefined : host);
  },
  maxAge: (g, bucket, b) => setMaxAge(g, bucket, parseMaxAge(wire(b, 'maxAge'))),
  referer: (g, bucket, b) =>
    setReferer(
      g,
      bucket,
      parseRefererSettings({ mode: wire(b, 'mode'), norefer: wire(b, 'norefer'), pattern: wire(b, 'pattern'), sourceEnabled: wire(b, 'sourceEnabled') }),
    ),
  cors: (g, bucket, b) => setCorsRules(g, bucket, parseCorsRules(b.rules)),
  protection: (g, bucket, b) => setProtected(g, bucket, flag(b, 'on')),
  quota: (g, bucket, b) => setBucketQuota(g, bucket, { size: parseQuotaValue(wire(b, 'size'), 'size'), count: parseQuotaValue(wire(b, 'count'), 'count') }),
  separator: (g, bucket, b) => setSeparator(g, bucket, wire(b, 'separator')),
  versioning: async (g, bucket, b) => {
    const status = text(b, 'status');
    if (status !== 'Enabled' && status !== 'Suspended') throw Errors.badRequest('status must be Enabled or Suspended');
    if ((await setBucketVersioning(g, bucket, status)) === 'unsupported') {
      throw Errors.badRequest('versioning is not kept by this metadata store (PostgreSQL) yet');
    }
  },
};

/** The setting the path names; 400 for an unknown one (the route's precheck: answered before the session check). */
export function settingOf(request: FastifyRequest): (g: Granary, bucket: string, b: Body) => Promise<unknown> {
  const setting = pathParam(request, 'setting');
  const apply = Object.hasOwn(SETTINGS, setting) ? SETTINGS[setting] : undefined;
  if (!apply) throw Errors.badRequest(`unknown bucket setting ${JSON.stringify(setting)}`);
  return apply;
}

/** A lifecycle rule from a body with Kodo's form names (`delete_after_days`, …; absent days = 0). */
function ruleInput(b: Body, name: string): RuleInput {
  const input = { name, prefix: optText(b, 'prefix') } as RuleInput;
  for (const [key, field] of DAY_FIELDS) {
    const v = wire(b, field);
    if (v !== '' && !/^-?\d{1,7}$/.test(v)) throw Errors.badLifecycleRule(`${field} must be an integer, got ${JSON.stringify(v)}`);
    input[key] = v === '' ? 0 : Number(v);
  }
  return input;
}

/** The Kodo rules, then the S3-only lifecycle rules with their `s3` description (buckets/s3-lifecycle.ts). */
function lifecycleJson(b: BucketRecord): Array<Record<string, unknown>> {
  return [...rulesOf(b), ...s3OnlyRulesForKodo(b.settings, b.ctime)].map((r) => {
    const out: Record<string, unknown> = { name: r.name, prefix: r.prefix, ctime: new Date(r.ctime * 1000).toISOString() };
    for (const [key, field] of DAY_FIELDS) out[field] = r[key] ?? 0;
    if ('s3' in r) out.s3 = r.s3;
    return out;
  });
}

/** An event rule from a body `{prefix, suffix, events: [], callbackUrls: [], accessKey, host}`. */
function eventInput(b: Body, name: string): EventRuleInput {
  const list = (field: string): string[] | undefined => {
    const v = b[field];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw Errors.badRequest(`${field} must be an array of strings`);
    return (v as string[]).map((x) => x.trim()).filter((x) => x !== '');
  };
  const input: EventRuleInput = { name };
  for (const field of ['prefix', 'suffix', 'accessKey', 'host'] as const) if (b[field] !== undefined) input[field] = optText(b, field);
  const events = list('events');
  if (events) input.events = events;
  const urls = list('callbackUrls');
  if (urls) input.callbackUrls = urls;
  return input;
}

type Call = RouteCall<ConsoleApi, ConsoleSession>;

/** `GET /api/buckets`. */
export async function listBucketsApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const mine = (await g.meta.listBuckets()).filter((b) => mayAccess(g, s.accessKey, b, { action: VISIBLE }));
  return Promise.all(
    mine.map(async (b) => {
      const usage = await g.meta.bucketUsage(b.name);
      return { name: b.name, region: b.region, private: b.private, ctime: b.ctime, owner: b.owner, objects: usage?.count ?? 0, bytes: usage?.bytes ?? 0 };
    }),
  );
}

/** `POST /api/buckets`. */
export async function createBucketApi(call: Call, request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const s = call.caller;
  const b = bodyOf(request);
  const region = optText(b, 'region');
  const rec = await createBucket(g, text(b, 'name'), s.accessKey, region === '' ? undefined : region);
  return { name: rec.name };
}

/** `DELETE /api/buckets/:bucket`. */
export async function dropBucketApi(call: Call, _request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await dropBucket(g, bucket.name);
  return reply.code(204).send();
}

/** `GET /api/buckets/:bucket`. */
export async function bucketApi(call: Call, _request: FastifyRequest, _reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  const usage = await g.meta.bucketUsage(bucket.name);
  return {
    name: bucket.name,
    owner: bucket.owner,
    info: bucketInfo(bucket),
    usage: { objects: usage?.count ?? 0, bytes: usage?.bytes ?? 0 },
    quota: quotaOf(bucket),
    referer: bucket.settings.referer ?? null,
    cors: corsRulesToWire(bucket.settings.cors ?? []),
    domains: (await g.meta.domainsOf(bucket.name)).map((d) => d.domain),
    rules: lifecycleJson(bucket),
    events: eventRulesJson(bucket),
    versioning: bucket.settings.versioning ?? null,
  };
}

/** `PUT /api/buckets/:bucket/settings/:setting`: the setting name checked first (precheck). */
export async function putSettingApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const apply = settingOf(request);
  await apply(call.g, call.bucket.name, bodyOf(request));
  return reply.code(204).send();
}

/** `PUT /api/buckets/:bucket/styles/:name`. */
export async function putStyleApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await setStyle(g, bucket.name, pathParam(request, 'name'), text(bodyOf(request), 'pipeline'));
  return reply.code(204).send();
}

/** `DELETE /api/buckets/:bucket/styles/:name`. */
export async function deleteStyleApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await removeStyle(g, bucket.name, pathParam(request, 'name'));
  return reply.code(204).send();
}

/** `POST /api/buckets/:bucket/domains`. */
export async function bindDomainApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await bindDomain(g, text(bodyOf(request), 'domain'), bucket.name);
  return reply.code(204).send();
}

/** `DELETE /api/buckets/:bucket/domains/:domain`. */
export async function unbindDomainApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  const domain = normaliseDomain(pathParam(request, 'domain'));
  if (!(await g.meta.domainsOf(bucket.name)).some((d) => d.domain === domain)) throw Errors.notFound(`domain ${domain} is not bound to ${bucket.name}`);
  await g.meta.unbindDomain(domain);
  await g.domains.reload();
  return reply.code(204).send();
}

/** `POST /api/buckets/:bucket/rules`. */
export async function addRuleApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  const b = bodyOf(request);
  await addRule(g, bucket.name, ruleInput(b, text(b, 'name')));
  return reply.code(204).send();
}

/** `PUT /api/buckets/:bucket/rules/:name`. */
export async function updateRuleApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await updateRule(g, bucket.name, ruleInput(bodyOf(request), pathParam(request, 'name')));
  return reply.code(204).send();
}

/** `DELETE /api/buckets/:bucket/rules/:name`. */
export async function deleteRuleApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await deleteRule(g, bucket.name, pathParam(request, 'name'));
  return reply.code(204).send();
}

/** `POST /api/buckets/:bucket/events`. */
export async function addEventApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  const b = bodyOf(request);
  await addEventRule(g, accessKey, bucket.name, eventInput(b, text(b, 'name')));
  return reply.code(204).send();
}

/** `PUT /api/buckets/:bucket/events/:name`. */
export async function updateEventApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { accessKey } = call.caller;
  const bucket = call.bucket;
  await updateEventRule(g, accessKey, bucket.name, eventInput(bodyOf(request), pathParam(request, 'name')));
  return reply.code(204).send();
}

/** `DELETE /api/buckets/:bucket/events/:name`. */
export async function deleteEventApi(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const bucket = call.bucket;
  await deleteEventRule(g, bucket.name, pathParam(request, 'name'));
  return reply.code(204).send();
}
