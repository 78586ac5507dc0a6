/**
 * GetBucketLifecycleConfiguration, PutBucketLifecycleConfiguration, DeleteBucketLifecycle
 * (`GET|PUT|DELETE /<bucket>?lifecycle`), docs/development/kodo-protocol.md §18.11.
 *
 * Put parses and checks the document (s3api/lifecycle-config.ts) and keeps every rule as sent
 * (`BucketSettings.lifecycleS3`). An **enabled** rule Kodo's rules can express — filtered by prefix only (or
 * nothing), expiring by Days (not Date), an ID that is a Kodo rule name (1–49 of `A-Z a-z 0-9 _`), a prefix no
 * earlier such rule has, Kodo's day order — is kept as a Kodo rule too (buckets/lifecycle-rule-admin.ts, the rules
 * the uc `rules/*` routes manage) and applied through it:
 * - `ID` ↔ name; the filter's prefix ↔ prefix; `Expiration/Days` ↔ delete_after_days;
 * - `Transition` `Days` + `StorageClass` STANDARD_IA ↔ to_line_after_days, INTELLIGENT_TIERING ↔
 *   to_intelligent_tiering_after_days, GLACIER_IR ↔ to_archive_ir_after_days, GLACIER ↔ to_archive_after_days,
 *   DEEP_ARCHIVE ↔ to_deep_archive_after_days (S3's day 0, "at creation", is Kodo's negative "at upload", stored as
 *   -1 and answered as 0);
 * - `NoncurrentVersionExpiration/NoncurrentDays` ↔ history_delete_after_days, `NoncurrentVersionTransition`
 *   STANDARD_IA ↔ history_to_line_after_days.
 * The other rules stay S3 rules only, applied by the expiry sweeper (objects/s3-lifecycle-sweep.ts; disabled ones
 * are kept, not applied). A rule with transitions must be one Kodo can keep (transitions are Kodo's): with a tag or
 * size filter or a Date expiration → NotImplemented (501); failing Kodo's checks (name, one rule per prefix, day
 * order, ≤ 100 rules) → InvalidArgument (400).
 *
 * Get answers the S3 rules in the order set — a rule kept as a Kodo rule as sent while that rule is unchanged, in
 * Kodo's terms once the Kodo API changed it, not at all once it deleted it — then the Kodo rules added through the
 * Kodo API. No rule → NoSuchLifecycleConfiguration (404). Put replaces everything in one transaction; Delete
 * removes every rule of both kinds (204).
 */
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import { checkRule, MAX_RULES, rulesOf, type RuleInput } from '../../buckets/lifecycle-rule-admin.js';
import { s3RulesOf } from '../../buckets/s3-lifecycle.js';
import type { LifecycleRule, S3LifecycleRule } from '../../ports/meta.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { rulesOfDocument, s3RuleXml } from '../lifecycle-config.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, xmlDocument } from '../xml.js';

type TransitionKey = 'toIAAfterDays' | 'toIntelligentTieringAfterDays' | 'toArchiveIRAfterDays' | 'toArchiveAfterDays' | 'toDeepArchiveAfterDays';

/** S3 transition storage classes ↔ the Kodo rule field (the storage types of s3api/object-headers.ts). */
const TRANSITIONS: ReadonlyArray<readonly [string, TransitionKey]> = [
  ['STANDARD_IA', 'toIAAfterDays'],
  ['INTELLIGENT_TIERING', 'toIntelligentTieringAfterDays'],
  ['GLACIER_IR', 'toArchiveIRAfterDays'],
  ['GLACIER', 'toArchiveAfterDays'],
  ['DEEP_ARCHIVE', 'toDeepArchiveAfterDays'],
];

/** The Kodo rule an S3 rule is kept as, or the reason it cannot be one. */
function kodoInputOf(r: S3LifecycleRule): RuleInput | string {
  if (!r.enabled) return 'disabled';
  if (r.filter.tags !== undefined || r.filter.sizeGreaterThan !== undefined || r.filter.sizeLessThan !== undefined) return 'a tag or size filter';
  if (r.expiration && r.expiration.days === undefined) return 'an Expiration by Date or ExpiredObjectDeleteMarker';
  if (r.noncurrentExpiration?.newerVersions !== undefined) return 'NewerNoncurrentVersions';
  const rule: RuleInput = {
    name: r.id,
    prefix: r.filter.prefix ?? '',
    deleteAfterDays: r.expiration?.days ?? 0,
    toIAAfterDays: 0,
    toIntelligentTieringAfterDays: 0,
    toArchiveIRAfterDays: 0,
    toArchiveAfterDays: 0,
    toDeepArchiveAfterDays: 0,
    historyDeleteAfterDays: r.noncurrentExpiration?.days ?? 0,
    historyToIAAfterDays: r.noncurrentTransitions?.[0]?.days ?? 0,
  };
  for (const t of r.transitions ?? []) {
    const key = TRANSITIONS.find(([c]) => c === t.storageClass)?.[1];
    if (key) rule[key] = t.days === 0 ? -1 : t.days;
  }
  return rule;
}

/** Whether a stored Kodo rule is still what the S3 rule made of it. */
function sameRule(k: LifecycleRule, input: RuleInput): boolean {
  return (
    k.prefix === input.prefix &&
    k.deleteAfterDays === input.deleteAfterDays &&
    TRANSITIONS.every(([, key]) => (k[key] ?? 0) === input[key]) &&
    (k.historyDeleteAfterDays ?? 0) === input.historyDeleteAfterDays &&
    (k.historyToIAAfterDays ?? 0) === input.historyToIAAfterDays
  );
}

/**
 * Splits the rules into those kept as Kodo rules too (their `kodo` set, the Kodo inputs returned) and S3-only
 * ones; refuses a rule with transitions Kodo cannot keep (see the module comment).
 */
function planRules(rules: S3LifecycleRule[]): RuleInput[] {
  const inputs: RuleInput[] = [];
  const prefixes = new Set<string>();
  for (const r of rules) {
    const input = kodoInputOf(r);
    const transitions = (r.transitions?.length ?? 0) > 0 || (r.noncurrentTransitions?.length ?? 0) > 0;
    let refusal: string | undefined = typeof input === 'string' ? input : undefined;
    if (typeof input !== 'string') {
      if (prefixes.has(input.prefix)) refusal = `two rules have the prefix ${JSON.stringify(input.prefix)}; this server keeps one rule per prefix`;
      else if (inputs.length >= MAX_RULES) refusal = `a bucket has at most ${MAX_RULES} lifecycle rules with transitions`;
      else {
        try {
          checkRule(input);
        } catch (err) {
          if (!isKodoError(err)) throw err;
          refusal = `rule ${r.id}: ${err.message}`;
        }
      }
    }
    if (refusal === undefined && typeof input !== 'string') {
      r.kodo = input.name;
      inputs.push(input);
      prefixes.add(input.prefix);
    } else if (transitions && r.enabled) {
      if (typeof input === 'string') throw S3Errors.NotImplemented(`a rule with transitions cannot have ${input} on this server`);
      throw S3Errors.InvalidArgument(refusal);
    }
  }
  return inputs;
}

/** A Kodo rule as a `<Rule>` element (an S3 rule's abort kept with it). */
function kodoRuleXml(r: LifecycleRule, abortDays?: number): string {
  const transitions = TRANSITIONS.filter(([, key]) => (r[key] ?? 0) !== 0)
    .map(([cls, key]) => `<Transition>${el('Days', Math.max(r[key] ?? 0, 0))}${el('StorageClass', cls)}</Transition>`)
    .join('');
  return (
    '<Rule>' +
    el('ID', r.name) +
    `<Filter>${el('Prefix', r.prefix)}</Filter>` +
    el('Status', 'Enabled') +
    transitions +
    (r.deleteAfterDays > 0 ? `<Expiration>${el('Days', r.deleteAfterDays)}</Expiration>` : '') +
    (r.historyToIAAfterDays ? `<NoncurrentVersionTransition>${el('NoncurrentDays', r.historyToIAAfterDays)}${el('StorageClass', 'STANDARD_IA')}</NoncurrentVersionTransition>` : '') +
    (r.historyDeleteAfterDays ? `<NoncurrentVersionExpiration>${el('NoncurrentDays', r.historyDeleteAfterDays)}</NoncurrentVersionExpiration>` : '') +
    (abortDays !== undefined ? `<AbortIncompleteMultipartUpload>${el('DaysAfterInitiation', abortDays)}</AbortIncompleteMultipartUpload>` : '') +
    '</Rule>'
  );
}

/** Replaces both rule sets in one MetaStore transaction (Kodo rules' ctime now; none = no rules). 404 when gone. */
async function setRules(g: Granary, bucket: string, rules: S3LifecycleRule[], inputs: RuleInput[]): Promise<void> {
  const ctime = Math.floor(g.clock.nowMs() / 1000);
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    delete next.lifecycleRules;
    delete next.lifecycleS3;
    if (rules.length > 0) next.lifecycleS3 = rules;
    if (inputs.length > 0) {
      next.lifecycleRules = inputs.map(({ historyDeleteAfterDays, historyToIAAfterDays, toIntelligentTieringAfterDays, ...rest }) => {
        const rule: LifecycleRule = { ...rest, ctime };
        if (toIntelligentTieringAfterDays) rule.toIntelligentTieringAfterDays = toIntelligentTieringAfterDays;
        if (historyDeleteAfterDays) rule.historyDeleteAfterDays = historyDeleteAfterDays;
        if (historyToIAAfterDays) rule.historyToIAAfterDays = historyToIAAfterDays;
        return rule;
      });
    }
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

export async function getBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const kodo = rulesOf(bucket);
  const parts: string[] = [];
  const shown = new Set<string>();
  for (const r of s3RulesOf(bucket.settings)) {
    const k = r.kodo === undefined ? undefined : kodo.find((x) => x.name === r.kodo);
    if (k === undefined) {
      parts.push(s3RuleXml(r));
      continue;
    }
    shown.add(k.name);
    const input = kodoInputOf(r);
    parts.push(typeof input !== 'string' && sameRule(k, input) ? s3RuleXml(r) : kodoRuleXml(k, r.abortIncompleteUploadDays));
  }
  for (const k of kodo) if (!shown.has(k.name)) parts.push(kodoRuleXml(k));
  if (parts.length === 0) throw S3Errors.NoSuchLifecycleConfiguration();
  return xmlResponse(xmlDocument('LifecycleConfiguration', parts.join('')));
}

export async function putBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = rulesOfDocument(parseXml(await readXmlBody(req.body())));
  const inputs = planRules(rules);
  await setRules(g, bucket.name, rules, inputs);
  return { status: 200 };
}

export async function deleteBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setRules(g, bucket.name, [], []);
  return { status: 204 };
}
