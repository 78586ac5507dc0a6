/**
 * Bucket lifecycle rule routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2 `put/update/deleteBucketLifecycleRule`,
 * `getBucketLifecycleRule`); management credential (route table auth step; the `bucket` parameter authorised by it), the bucket authorised like every bucket route (631
 * missing, 403 another account's).
 * - `POST /rules/add`, `POST /rules/update`: form (or query) `bucket, name, prefix, to_line_after_days,
 *   to_archive_ir_after_days, to_archive_after_days, to_deep_archive_after_days, delete_after_days,
 *   history_delete_after_days, history_to_line_after_days` (absent days = 0) → 200 `{}`;
 * - `POST /rules/delete`: `bucket, name` → 200 `{}`;
 * - `GET|POST /rules/get?bucket=` → `[{name, prefix, delete_after_days, to_line_after_days,
 *   to_archive_ir_after_days, to_archive_after_days, to_deep_archive_after_days, history_delete_after_days,
 *   history_to_line_after_days, ctime}]` (ctime an ISO 8601 string, as bucket listings), in the order added;
 *   then the S3-only lifecycle rules with an `s3` field (see getRules).
 * Errors: 400 bad or missing fields (named), taken name (`rule name exists`) or prefix, too many rules, update of an
 * unknown name (Kodo's 400s); 612 delete of an unknown name.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  addRule,
  DAY_FIELDS,
  deleteRule,
  parseDays,
  rulesOf,
  updateRule,
  type RuleInput,
} from '../../buckets/lifecycle-rule-admin.js';
import { s3OnlyRulesForKodo } from '../../buckets/s3-lifecycle.js';
import type { Caller } from '../../auth/management.js';
import type { Granary } from '../../context.js';
import type { RouteCall } from '../../http/route-call.js';
import type { BucketRecord, LifecycleRule } from '../../ports/meta.js';
import { params, requiredParam, sendEmpty, sendJson } from '../../http/wire.js';

/** The authorised bucket named by the `bucket` parameter, and the parameters. */
type Call = RouteCall<Granary, Caller>;

/** The bucket the auth step authorised (the route table's `query: bucket` rule) and the parameters. */
function bucketOf(call: Call, request: FastifyRequest): { bucket: BucketRecord; p: URLSearchParams } {
  return { bucket: call.bucket, p: params(request) };
}

/** The rule a rules/add or rules/update form describes (400 naming a malformed day field). */
function ruleInput(p: URLSearchParams): RuleInput {
  const input = { name: requiredParam(p, 'name'), prefix: p.get('prefix') ?? '' } as RuleInput;
  for (const [key, field] of DAY_FIELDS) input[key] = parseDays(p.get(field), field);
  return input;
}

/** A rule in Kodo's JSON shape. */
function ruleJson(r: LifecycleRule): Record<string, unknown> {
  return {
    name: r.name,
    prefix: r.prefix,
    delete_after_days: r.deleteAfterDays,
    to_line_after_days: r.toIAAfterDays,
    to_archive_ir_after_days: r.toArchiveIRAfterDays,
    to_archive_after_days: r.toArchiveAfterDays,
    to_deep_archive_after_days: r.toDeepArchiveAfterDays,
    history_delete_after_days: r.historyDeleteAfterDays ?? 0,
    history_to_line_after_days: r.historyToIAAfterDays ?? 0,
    // Granary's field (no SDK reads one): only when set, so the answer stays the shape the SDKs parse.
    ...(r.toIntelligentTieringAfterDays ? { to_intelligent_tiering_after_days: r.toIntelligentTieringAfterDays } : {}),
    ctime: new Date(r.ctime * 1000).toISOString(),
  };
}

/** `POST /rules/add`. */
export async function addRuleRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, p } = bucketOf(call, request);
  await addRule(g, bucket.name, ruleInput(p));
  return sendEmpty(reply);
}

/** `POST /rules/update`. */
export async function updateRuleRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, p } = bucketOf(call, request);
  await updateRule(g, bucket.name, ruleInput(p));
  return sendEmpty(reply);
}

/** `POST /rules/delete`. */
export async function deleteRuleRoute(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { g } = call;
  const { bucket, p } = bucketOf(call, request);
  await deleteRule(g, bucket.name, requiredParam(p, 'name'));
  return sendEmpty(reply);
}

/**
 * `GET|POST /rules/get`: the Kodo rules, then the S3 rules Kodo's cannot express (buckets/s3-lifecycle.ts) in
 * Kodo's shape as far as it goes, each with an `s3` field saying what else it does (they are managed through S3).
 */
export async function getRules(call: Call, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { bucket } = bucketOf(call, request);
  const s3Only = s3OnlyRulesForKodo(bucket.settings, bucket.ctime).map((r) => ({ ...ruleJson(r), s3: r.s3 }));
  return sendJson(reply, 200, [...rulesOf(bucket).map(ruleJson), ...s3Only]);
}
