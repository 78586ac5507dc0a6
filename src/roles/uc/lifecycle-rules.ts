/**
 * Bucket lifecycle rule routes on the uc role (docs/development/kodo-protocol.md §8.6, §13.2 `put/update/deleteBucketLifecycleRule`,
 * `getBucketLifecycleRule`); management credential required, the bucket authorised like every bucket route (631
 * missing, 403 another account's).
 * - `POST /rules/add`, `POST /rules/update`: form (or query) `bucket, name, prefix, to_line_after_days,
 *   to_archive_ir_after_days, to_archive_after_days, to_deep_archive_after_days, delete_after_days,
 *   history_delete_after_days, history_to_line_after_days` (absent days = 0) → 200 `{}`;
 * - `POST /rules/delete`: `bucket, name` → 200 `{}`;
 * - `GET|POST /rules/get?bucket=` → `[{name, prefix, delete_after_days, to_line_after_days,
 *   to_archive_ir_after_days, to_archive_after_days, to_deep_archive_after_days, history_delete_after_days,
 *   history_to_line_after_days, ctime}]` (ctime an ISO 8601 string, as bucket listings), in the order added.
 * Errors: 400 bad or missing fields (named), taken prefix, too many rules, update of an unknown name (Kodo's 400);
 * 614 taken name; 612 delete of an unknown name.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeBucket } from '../../auth/authorize.js';
import {
  addRule,
  DAY_FIELDS,
  deleteRule,
  parseDays,
  rulesOf,
  updateRule,
  type RuleInput,
} from '../../buckets/lifecycle-rule-admin.js';
import type { Granary } from '../../context.js';
import type { BucketRecord, LifecycleRule } from '../../ports/meta.js';
import { params, READ_METHODS, requiredParam, requireManagement, sendEmpty, sendJson } from '../http.js';

/** The authorised bucket named by the `bucket` parameter, and the parameters. */
async function bucketOf(g: Granary, request: FastifyRequest): Promise<{ bucket: BucketRecord; p: URLSearchParams }> {
  const caller = requireManagement(g, request);
  const p = params(request);
  const name = requiredParam(p, 'bucket');
  return { bucket: await authorizeBucket(g, caller.accessKey, name), p };
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
    ctime: new Date(r.ctime * 1000).toISOString(),
  };
}

/** Registers the lifecycle rule routes. */
export function registerLifecycleRules(app: FastifyInstance, g: Granary): void {
  app.post('/rules/add', async (request, reply) => {
    const { bucket, p } = await bucketOf(g, request);
    await addRule(g, bucket.name, ruleInput(p));
    return sendEmpty(reply);
  });

  app.post('/rules/update', async (request, reply) => {
    const { bucket, p } = await bucketOf(g, request);
    await updateRule(g, bucket.name, ruleInput(p));
    return sendEmpty(reply);
  });

  app.post('/rules/delete', async (request, reply) => {
    const { bucket, p } = await bucketOf(g, request);
    await deleteRule(g, bucket.name, requiredParam(p, 'name'));
    return sendEmpty(reply);
  });

  app.route({
    method: READ_METHODS,
    url: '/rules/get',
    handler: async (request, reply) => {
      const { bucket } = await bucketOf(g, request);
      return sendJson(reply, 200, rulesOf(bucket).map(ruleJson));
    },
  });
}
