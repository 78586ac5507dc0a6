/**
 * S3 lifecycle rules kept as S3 rules (`BucketSettings.lifecycleS3`, set by s3api/ops/bucket-lifecycle.ts): their
 * pure evaluation. Rules Kodo's rules can express are kept as Kodo rules too (`kodo` names it) and applied through
 * them (lifecycle-rules.ts: CST midnights, longest prefix). The rest — tag and size filters, `Date` expirations,
 * rules sharing a prefix, IDs Kodo cannot name — are applied by the sweeper (objects/s3-lifecycle-sweep.ts) the
 * way AWS documents S3 Lifecycle (https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html,
 * "Lifecycle configuration elements"):
 * - a rule applies to the keys that match **every** condition of its filter (prefix, each tag with its value,
 *   size strictly greater / strictly less); every enabled rule applies on its own (no longest-prefix exemption);
 * - `Expiration/Days` n: the object expires at the first UTC midnight at or after its upload + n × 24 h (AWS
 *   "rounds the resulting time to the next day's midnight UTC"); `Expiration/Date`: every matching object expires
 *   from that UTC midnight on;
 * - `AbortIncompleteMultipartUpload/DaysAfterInitiation` n: an upload started n days ago (rounded the same way)
 *   is aborted;
 * - Disabled rules are kept and answered, never applied;
 * - on a versioned bucket (docs/reference/versioning.md; objects/noncurrent-sweep.ts applies these):
 *   `NoncurrentVersionExpiration/NoncurrentDays` n: a noncurrent version (or noncurrent delete marker) is deleted
 *   for good at the first UTC midnight at or after the time it became noncurrent — its successor's creation — + n
 *   days ("How Amazon S3 calculates when an object became noncurrent"); with `NewerNoncurrentVersions` m, only
 *   once at least m newer noncurrent versions of the key exist (the m newest are kept whatever their age);
 *   `Expiration/ExpiredObjectDeleteMarker` true: a delete marker that is its key's only version is removed;
 *   `Expiration/Days` n removes such a marker too once it is n days old (rounded the same way), as AWS does
 *   ("When you specify the Days tag, Amazon S3 automatically performs ExpiredObjectDeleteMarker cleanup when the
 *   delete markers are old enough"); a Kodo rule's `historyDeleteAfterDays` is a NoncurrentDays rule.
 * Units: Unix seconds for dates, 100-ns units for putTime, bytes for sizes.
 */
import type { BucketSettings, LifecycleRule, S3LifecycleRule } from '../ports/meta.js';

const DAY_SEC = 86_400;

/** The first UTC midnight at or after `sec` (Unix seconds). */
export function nextUtcMidnight(sec: number): number {
  return Math.ceil(sec / DAY_SEC) * DAY_SEC;
}

/** When an action `days` after `startSec` falls due (Unix seconds): the first UTC midnight at or after it. */
export function dueAfterDays(startSec: number, days: number): number {
  return nextUtcMidnight(startSec + days * DAY_SEC);
}

/** Whether the S3 rule still holds: a rule kept as a Kodo rule lives as long as that Kodo rule (Kodo may delete it). */
export function ruleAlive(rule: S3LifecycleRule, kodoRules: readonly LifecycleRule[] | undefined): boolean {
  return rule.kodo === undefined || (kodoRules ?? []).some((k) => k.name === rule.kodo);
}

/** The S3 rules of a bucket that are still in force or kept (see `ruleAlive`), in the order set. */
export function s3RulesOf(settings: BucketSettings): S3LifecycleRule[] {
  return (settings.lifecycleS3 ?? []).filter((r) => ruleAlive(r, settings.lifecycleRules));
}

/** The object facts a filter looks at: key, size (bytes) and tags. */
export interface FilterSubject {
  key: string;
  size: number;
  tags: ReadonlyArray<readonly [string, string]>;
}

/** Whether an object matches every condition of the rule's filter. */
export function filterMatches(filter: S3LifecycleRule['filter'], o: FilterSubject): boolean {
  if (filter.prefix !== undefined && !o.key.startsWith(filter.prefix)) return false;
  if (filter.sizeGreaterThan !== undefined && !(o.size > filter.sizeGreaterThan)) return false;
  if (filter.sizeLessThan !== undefined && !(o.size < filter.sizeLessThan)) return false;
  for (const [k, v] of filter.tags ?? []) {
    if (!o.tags.some(([tk, tv]) => tk === k && tv === v)) return false;
  }
  return true;
}

/** Whether the filter looks at tags or sizes (the sweeper reads each entry's metadata then). */
export function filterNeedsEntry(filter: S3LifecycleRule['filter']): boolean {
  return (filter.tags?.length ?? 0) > 0 || filter.sizeGreaterThan !== undefined || filter.sizeLessThan !== undefined;
}

/**
 * The expiry the sweeper applies for a rule (enabled, not kept as a Kodo rule, with an Expiration by Days or
 * Date), else undefined: `putAtMostSec` — objects uploaded at or before it are expired now (Days), or `all` (a
 * Date passed: every matching object).
 */
export function sweepExpiry(rule: S3LifecycleRule, nowSec: number): { putAtMostSec: number } | { all: true } | undefined {
  if (!rule.enabled || rule.kodo !== undefined || !rule.expiration) return undefined;
  const { days, date } = rule.expiration;
  if (date !== undefined) return Date.parse(date) / 1000 <= nowSec ? { all: true } : undefined;
  if (days === undefined) return undefined;
  // Due when nextUtcMidnight(put + days) ≤ now ⇔ put + days ≤ the last UTC midnight ≤ now.
  return { putAtMostSec: Math.floor(nowSec / DAY_SEC) * DAY_SEC - days * DAY_SEC };
}

/** Whether an upload started at `createdAt` (Unix seconds) is aborted by `days` after initiation at `nowSec`. */
export function uploadAbortDue(createdAt: number, days: number, nowSec: number): boolean {
  return dueAfterDays(createdAt, days) <= nowSec;
}

/** A readable summary of what Kodo's rule fields cannot show of an S3 rule ('' when nothing). */
export function s3OnlyConditions(r: S3LifecycleRule): string {
  const out: string[] = [];
  if (!r.enabled) out.push('disabled');
  for (const [k, v] of r.filter.tags ?? []) out.push(`tag ${k}=${v}`);
  if (r.filter.sizeGreaterThan !== undefined) out.push(`size > ${r.filter.sizeGreaterThan}`);
  if (r.filter.sizeLessThan !== undefined) out.push(`size < ${r.filter.sizeLessThan}`);
  if (r.expiration?.date) out.push(`expires on ${r.expiration.date.slice(0, 10)}`);
  if (r.expiration?.expiredObjectDeleteMarker) out.push('expired delete markers removed');
  if (r.abortIncompleteUploadDays) out.push(`incomplete multipart uploads aborted after ${r.abortIncompleteUploadDays} days`);
  if (r.noncurrentExpiration?.newerVersions) out.push(`newer noncurrent versions kept: ${r.noncurrentExpiration.newerVersions}`);
  return out.join(', ');
}

/**
 * The S3 rules that are not Kodo rules, in Kodo's rule shape as far as it goes (name = ID, the filter's prefix,
 * `deleteAfterDays` = Expiration/Days), with `s3` describing the rest (`s3OnlyConditions`): what Kodo's rule
 * listings (uc `rules/get`, the console) show of them. ctime = `ctime` given (they carry none of their own).
 */
export function s3OnlyRulesForKodo(settings: BucketSettings, ctime: number): Array<LifecycleRule & { s3: string }> {
  return (settings.lifecycleS3 ?? [])
    .filter((r) => r.kodo === undefined)
    .map((r) => ({
      name: r.id,
      prefix: r.filter.prefix ?? '',
      deleteAfterDays: r.expiration?.days ?? 0,
      toIAAfterDays: 0,
      toArchiveIRAfterDays: 0,
      toArchiveAfterDays: 0,
      toDeepArchiveAfterDays: 0,
      ...(r.noncurrentExpiration?.days ? { historyDeleteAfterDays: r.noncurrentExpiration.days } : {}),
      ctime,
      s3: s3OnlyConditions(r) || 'an S3 rule',
    }));
}

/**
 * What a rule asks of a versioned bucket's history (objects/noncurrent-sweep.ts): the filter, `noncurrentDays` /
 * `newerVersions` (NoncurrentVersionExpiration), and `markerDays` — remove a key's sole delete marker once it is
 * that many days old (0: at once, ExpiredObjectDeleteMarker).
 */
export interface VersionRulePlan {
  id: string;
  filter: S3LifecycleRule['filter'];
  noncurrentDays?: number;
  newerVersions?: number;
  markerDays?: number;
}

/** The history plans of a bucket's enabled rules (S3 rules, and Kodo rules with historyDeleteAfterDays no S3 rule made). */
export function versionRulePlans(settings: BucketSettings): VersionRulePlan[] {
  const out: VersionRulePlan[] = [];
  const s3 = s3RulesOf(settings);
  for (const r of s3) {
    if (!r.enabled) continue;
    const plan: VersionRulePlan = { id: r.id, filter: r.filter };
    if (r.noncurrentExpiration?.days !== undefined) {
      plan.noncurrentDays = r.noncurrentExpiration.days;
      if (r.noncurrentExpiration.newerVersions !== undefined) plan.newerVersions = r.noncurrentExpiration.newerVersions;
    }
    if (r.expiration?.expiredObjectDeleteMarker) plan.markerDays = 0;
    // A marker has no tags and no size: a Days rule filtering on them never matches one.
    else if (r.expiration?.days !== undefined && !filterNeedsEntry(r.filter)) plan.markerDays = r.expiration.days;
    if (plan.noncurrentDays !== undefined || plan.markerDays !== undefined) out.push(plan);
  }
  const made = new Set(s3.map((r) => r.kodo).filter((k) => k !== undefined));
  for (const k of settings.lifecycleRules ?? []) {
    if (made.has(k.name) || !k.historyDeleteAfterDays || k.historyDeleteAfterDays <= 0) continue;
    out.push({ id: k.name, filter: { form: 'filter', prefix: k.prefix }, noncurrentDays: k.historyDeleteAfterDays });
  }
  return out;
}
