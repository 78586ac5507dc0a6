/**
 * Managing a bucket's lifecycle rules (docs/development/kodo-protocol.md §8.6 `rules/add|update|delete|get`; uc routes in
 * roles/uc/lifecycle-rules.ts, CLI `bucket rule …`). Each change is one MetaStore transaction on the bucket's
 * settings. What the rules do to objects is in lifecycle-rules.ts.
 *
 * Checks (errors name Kodo's form fields):
 * - `name`: 1–49 of `A-Z a-z 0-9 _`, unique in the bucket (Kodo's SDKs: "unique, shorter than 50, letters, digits,
 *   underscore"); a taken name on add → 400 `rule name exists` (Kodo's answer the Java and Go SDKs' tests read), an
 *   unknown one on update → 400, on delete → 612.
 * - `prefix`: at most 750 bytes (the key limit); two rules of a bucket never share a prefix (Kodo: "prefixes may
 *   not repeat in a bucket") → 400.
 * - days: integers; `delete_after_days` and the `history_*` days ≥ 0; a transition < 0 means "at upload". The
 *   transitions set (≠ 0) must come in the order IA < Archive IR < Archive < Deep Archive, and a deletion after all
 *   of them (Kodo's order for object lifecycles, qshell `chlifecycle`; a transition at upload counts as day 0) → 400.
 * - at most `MAX_RULES` rules per bucket (Granary's limit; Kodo publishes none) → 400.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { MAX_KEY_BYTES } from '../policy/scope.js';
import type { BucketRecord, LifecycleRule } from '../ports/meta.js';

/** Most lifecycle rules one bucket may have. */
export const MAX_RULES = 100;
const RULE_NAME = /^[A-Za-z0-9_]{1,49}$/;
/** Days as text: an optional minus sign and at most 7 digits (≈ 27,000 years keeps every date finite). */
const DAYS = /^-?\d{1,7}$/;

/** A rule as rules/add and rules/update give it: every day count an integer (0 = not set). */
export type RuleInput = Omit<LifecycleRule, 'ctime' | 'historyDeleteAfterDays' | 'historyToIAAfterDays' | 'toIntelligentTieringAfterDays'> & {
  historyDeleteAfterDays: number;
  historyToIAAfterDays: number;
  toIntelligentTieringAfterDays: number;
};

/**
 * The day fields of a rule, in Kodo's order (IA < Intelligent Tiering < Archive IR < Archive < Deep Archive <
 * delete, Kodo's lifecycle guide), with their form names (docs/development/kodo-protocol.md §8.6).
 * `to_intelligent_tiering_after_days` is Granary's name, following Kodo's object lifecycle op
 * (`/toIntelligentTieringAfterDays/<n>`): no SDK or public page shows the rule's own form name.
 */
export const DAY_FIELDS = [
  ['toIAAfterDays', 'to_line_after_days'],
  ['toIntelligentTieringAfterDays', 'to_intelligent_tiering_after_days'],
  ['toArchiveIRAfterDays', 'to_archive_ir_after_days'],
  ['toArchiveAfterDays', 'to_archive_after_days'],
  ['toDeepArchiveAfterDays', 'to_deep_archive_after_days'],
  ['deleteAfterDays', 'delete_after_days'],
  ['historyDeleteAfterDays', 'history_delete_after_days'],
  ['historyToIAAfterDays', 'history_to_line_after_days'],
] as const;

export type DayField = (typeof DAY_FIELDS)[number][0];

/** A day count given as text ('' or absent = 0); 400 naming `field` unless it is an integer. */
export function parseDays(text: string | null | undefined, field: string): number {
  if (text === null || text === undefined || text === '') return 0;
  if (!DAYS.test(text)) throw Errors.badLifecycleRule(`${field} must be an integer, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** Checks a rule's name, prefix and days (400 naming the field; see the module comment). */
export function checkRule(rule: RuleInput): void {
  if (!RULE_NAME.test(rule.name)) {
    throw Errors.badLifecycleRule(`name must be 1-49 of A-Z a-z 0-9 _, got ${JSON.stringify(rule.name)}`);
  }
  if (Buffer.byteLength(rule.prefix, 'utf8') > MAX_KEY_BYTES) throw Errors.badLifecycleRule(`prefix is longer than ${MAX_KEY_BYTES} bytes`);
  for (const [key, field] of DAY_FIELDS) {
    const n = rule[key];
    if (!Number.isSafeInteger(n)) throw Errors.badLifecycleRule(`${field} must be an integer`);
    if (n < 0 && (key === 'deleteAfterDays' || key.startsWith('history'))) {
      throw Errors.badLifecycleRule(`${field} must be 0 (none) or a positive number of days, got ${n}`);
    }
  }
  // Transitions set, in order; one at upload (< 0) counts as day 0.
  let prev: { field: string; day: number; n: number } | undefined;
  for (const [key, field] of DAY_FIELDS.slice(0, 6)) {
    const n = rule[key];
    if (n === 0) continue;
    const day = Math.max(n, 0);
    if (prev && day <= prev.day) {
      throw Errors.badLifecycleRule(`${field} (${n}) must be greater than ${prev.field} (${prev.n}): IA < Intelligent Tiering < Archive IR < Archive < Deep Archive < delete`);
    }
    prev = { field, day, n };
  }
}

/** The rules of a bucket, in the order they were added. */
export function rulesOf(b: BucketRecord): LifecycleRule[] {
  return b.settings.lifecycleRules ?? [];
}

/** The stored form of an input: history days only when set. */
function toRule(input: RuleInput, ctime: number): LifecycleRule {
  const { historyDeleteAfterDays, historyToIAAfterDays, toIntelligentTieringAfterDays, ...rest } = input;
  const rule: LifecycleRule = { ...rest, ctime };
  if (toIntelligentTieringAfterDays) rule.toIntelligentTieringAfterDays = toIntelligentTieringAfterDays;
  if (historyDeleteAfterDays) rule.historyDeleteAfterDays = historyDeleteAfterDays;
  if (historyToIAAfterDays) rule.historyToIAAfterDays = historyToIAAfterDays;
  return rule;
}

/** 400 when another rule (not named `self`) has `prefix`. */
function checkPrefixFree(rules: LifecycleRule[], prefix: string, self: string): void {
  const other = rules.find((r) => r.prefix === prefix && r.name !== self);
  if (other) throw Errors.lifecyclePrefixTaken(`${JSON.stringify(prefix)} (rule ${other.name})`);
}

/** Applies `mutate` to the bucket's rules in one transaction; 631 when the bucket is missing. */
async function changeRules(g: Granary, bucket: string, mutate: (rules: LifecycleRule[]) => LifecycleRule[]): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    const rules = mutate(cur.lifecycleRules ?? []);
    if (rules.length > 0) next.lifecycleRules = rules;
    else delete next.lifecycleRules;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** rules/add: adds a rule (ctime now). 400 bad rule, taken name or prefix, or too many rules; 631. */
export async function addRule(g: Granary, bucket: string, input: RuleInput): Promise<void> {
  checkRule(input);
  const ctime = Math.floor(g.clock.nowMs() / 1000);
  await changeRules(g, bucket, (rules) => {
    if (rules.some((r) => r.name === input.name)) throw Errors.lifecycleRuleExists(input.name);
    checkPrefixFree(rules, input.prefix, input.name);
    if (rules.length >= MAX_RULES) throw Errors.tooManyLifecycleRules(`a bucket has at most ${MAX_RULES}`);
    return [...rules, toRule(input, ctime)];
  });
}

/**
 * rules/update: replaces the prefix and every day count of the rule `input.name` (fields the form leaves out are 0,
 * as in rules/add); its ctime stays. 400 bad rule, taken prefix or unknown name (Kodo's status for an update); 631.
 */
export async function updateRule(g: Granary, bucket: string, input: RuleInput): Promise<void> {
  checkRule(input);
  await changeRules(g, bucket, (rules) => {
    const i = rules.findIndex((r) => r.name === input.name);
    const current = rules[i];
    if (!current) throw Errors.noLifecycleRuleToUpdate(input.name);
    checkPrefixFree(rules, input.prefix, input.name);
    const next = [...rules];
    next[i] = toRule(input, current.ctime);
    return next;
  });
}

/** rules/delete: removes the rule `name`. 612 unknown name; 631. */
export async function deleteRule(g: Granary, bucket: string, name: string): Promise<void> {
  await changeRules(g, bucket, (rules) => {
    if (!rules.some((r) => r.name === name)) throw Errors.noSuchLifecycleRule(name);
    return rules.filter((r) => r.name !== name);
  });
}
