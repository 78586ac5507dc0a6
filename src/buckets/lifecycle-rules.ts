/**
 * Bucket lifecycle rules (docs/development/kodo-protocol.md §8.6 `rules/*`, §13.2): their pure evaluation against entries.
 *
 * - Matching (Kodo, Java SDK `BucketLifeCycleRule` and the Kodo portal: "rules match by the longest prefix, prefix
 *   rules before the global one, each object matches at most one rule"): the rule governing a key is the one whose
 *   prefix is the longest prefix of the key ('' = every key). A rule without any action still governs its keys, so
 *   it exempts them from a shorter-prefix rule.
 * - Dates count from each object's upload (`putTime`, 100-ns units) and round like `deleteAfterDays`
 *   (policy/expiry.ts: the first CST midnight strictly after upload + N days); a negative transition day count
 *   means "at upload" (Kodo's SDKs: "< 0: uploaded files use that class at once"). 0 = no such action.
 * - Precedence with the entry's own lifecycle (deleteAfterDays, lifecycle, put policy deleteAfterDays): each date —
 *   expiration and every transition — is the earliest of the entry's own and its rule's. Granary's choice (Kodo
 *   documents no precedence): whichever comes first happens, as with overlapping lifecycle rules elsewhere.
 * Units: Unix seconds for dates, 100-ns units for putTime.
 */
import { expiryFromDays } from '../policy/expiry.js';
import type { LifecycleRule, ObjectRecord, Transitions } from '../ports/meta.js';

const DAY_MS = 86_400_000;
const CST_OFFSET_MS = 8 * 3_600_000;

/** The rule governing `key`: the one with the longest prefix of `key`, or undefined (prefixes are unique). */
export function matchRule(rules: readonly LifecycleRule[] | undefined, key: string): LifecycleRule | undefined {
  let best: LifecycleRule | undefined;
  for (const r of rules ?? []) {
    if (key.startsWith(r.prefix) && (best === undefined || r.prefix.length > best.prefix.length)) best = r;
  }
  return best;
}

/**
 * When an action `days` after upload falls due for an object put at `putTime` (100-ns units), Unix seconds:
 * undefined for 0 (no action), the upload second for a negative count (at once), else the first CST midnight
 * strictly after upload + `days` × 24 h.
 */
export function dueAt(putTime: bigint, days: number): number | undefined {
  if (days === 0) return undefined;
  const putMs = Number(putTime / 10_000n);
  return days < 0 ? Math.floor(putMs / 1000) : expiryFromDays(putMs, days);
}

/** The dates a rule gives an object put at `putTime`: its expiration and transitions (Unix seconds; absent = none). */
export function ruleDates(rule: LifecycleRule, putTime: bigint): { expireAt?: number; transitions: Transitions } {
  const transitions: Transitions = {};
  const set = (name: keyof Transitions, days: number): void => {
    const at = dueAt(putTime, days);
    if (at !== undefined) transitions[name] = at;
  };
  set('toIA', rule.toIAAfterDays);
  set('toIntelligentTiering', rule.toIntelligentTieringAfterDays ?? 0);
  set('toArchiveIR', rule.toArchiveIRAfterDays);
  set('toArchive', rule.toArchiveAfterDays);
  set('toDeepArchive', rule.toDeepArchiveAfterDays);
  const expireAt = rule.deleteAfterDays > 0 ? dueAt(putTime, rule.deleteAfterDays) : undefined;
  return expireAt === undefined ? { transitions } : { expireAt, transitions };
}

/** The earlier of two optional dates. */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/**
 * The entry as its bucket's rules make it: `expireAt` and each transition are the earliest of the entry's own and
 * those of the rule governing its key. The record itself when no rule governs it or the rule sets no date.
 */
export function applyRules(rec: ObjectRecord, rules: readonly LifecycleRule[] | undefined): ObjectRecord {
  const rule = matchRule(rules, rec.key);
  if (!rule) return rec;
  const dates = ruleDates(rule, rec.putTime);
  const names = Object.keys(dates.transitions) as Array<keyof Transitions>;
  if (dates.expireAt === undefined && names.length === 0) return rec;
  const out: ObjectRecord = { ...rec };
  const expireAt = earliest(rec.expireAt, dates.expireAt);
  if (expireAt !== undefined) out.expireAt = expireAt;
  if (names.length > 0) {
    const t: Transitions = { ...rec.transitions };
    for (const name of names) t[name] = earliest(t[name], dates.transitions[name]);
    out.transitions = t;
  }
  return out;
}

/** Whether the rule governing `key` deletes an object put at `putTime` (100-ns units) by `nowSec` (Unix seconds). */
export function expiredByRules(rules: readonly LifecycleRule[] | undefined, key: string, putTime: bigint, nowSec: number): boolean {
  const rule = matchRule(rules, key);
  if (!rule || rule.deleteAfterDays <= 0) return false;
  const at = dueAt(putTime, rule.deleteAfterDays);
  return at !== undefined && at <= nowSec;
}

/**
 * The put-time cutoff of a deletion `days` (> 0) after upload at `nowSec`: an object is due exactly when its
 * putTime (100-ns units) is below it. Deletion dates are CST midnights, so it moves once a day: objects put before
 * the last CST midnight ≤ now minus `days` × 24 h (an upload at that very instant is due only a day later).
 */
export function putTimeCutoff(days: number, nowSec: number): bigint {
  const lastMidnightMs = Math.floor((nowSec * 1000 + CST_OFFSET_MS) / DAY_MS) * DAY_MS - CST_OFFSET_MS;
  return BigInt(lastMidnightMs - days * DAY_MS) * 10_000n;
}

/**
 * Prefixes of the rules that take keys away from `rule` (longer prefixes starting with its prefix: their keys are
 * governed by them). The sweeper walks `rule.prefix` without them.
 */
export function shadowingPrefixes(rules: readonly LifecycleRule[], rule: LifecycleRule): string[] {
  return rules.filter((r) => r.prefix.length > rule.prefix.length && r.prefix.startsWith(rule.prefix)).map((r) => r.prefix);
}
