/**
 * Bucket lifecycle rules, the pure parts: matching by the longest prefix (buckets/lifecycle-rules.ts), dates from
 * putTime, the earliest-wins merge with an entry's own lifecycle, the put-time cutoff the sweeper walks with (checked
 * against the per-object rule it must agree with) and the input checks (buckets/lifecycle-rule-admin.ts).
 */
import { describe, expect, it } from 'vitest';
import { checkRule, parseDays, type RuleInput } from '../../src/buckets/lifecycle-rule-admin.js';
import {
  applyRules,
  dueAt,
  expiredByRules,
  matchRule,
  putTimeCutoff,
  ruleDates,
  shadowingPrefixes,
} from '../../src/buckets/lifecycle-rules.js';
import { isKodoError } from '../../src/errors.js';
import { expiryFromDays } from '../../src/policy/expiry.js';
import type { LifecycleRule, ObjectRecord } from '../../src/ports/meta.js';

const rule = (name: string, prefix: string, days: Partial<LifecycleRule> = {}): LifecycleRule => ({
  name,
  prefix,
  deleteAfterDays: 0,
  toIAAfterDays: 0,
  toArchiveIRAfterDays: 0,
  toArchiveAfterDays: 0,
  toDeepArchiveAfterDays: 0,
  ctime: 0,
  ...days,
});

/** 2015-01-01 10:00 CST (Qiniu's deleteAfterDays example) in 100-ns units. */
const PUT_MS = Date.UTC(2015, 0, 1, 2, 0, 0);
const PUT = BigInt(PUT_MS) * 10_000n;
/** Unix seconds of <day> January 2015, 00:00 CST. */
const cstMidnight = (day: number): number => Date.UTC(2015, 0, day, -8) / 1000;

const entry = (key: string, extra: Partial<ObjectRecord> = {}): ObjectRecord => ({
  bucket: 'b',
  key,
  blobId: 'x',
  fsize: 1,
  hash: 'h',
  md5: '',
  mimeType: 'text/plain',
  putTime: PUT,
  type: 0,
  status: 0,
  meta: {},
  ...extra,
});

describe('matchRule', () => {
  const rules = [rule('all', ''), rule('logs', 'logs/'), rule('keep', 'logs/keep/'), rule('img', 'img')];
  it('picks the rule with the longest prefix of the key; the empty prefix governs the rest', () => {
    expect(matchRule(rules, 'logs/a')?.name).toBe('logs');
    expect(matchRule(rules, 'logs/keep/a')?.name).toBe('keep');
    expect(matchRule(rules, 'logs/kee')?.name).toBe('logs');
    expect(matchRule(rules, 'imgs/x')?.name).toBe('img');
    expect(matchRule(rules, 'images/x')?.name).toBe('all');
    expect(matchRule(rules, 'other')?.name).toBe('all');
    expect(matchRule(rules, '')?.name).toBe('all');
  });
  it('finds none without a matching prefix or without rules', () => {
    expect(matchRule([rule('logs', 'logs/')], 'log')).toBeUndefined();
    expect(matchRule(undefined, 'x')).toBeUndefined();
    expect(matchRule([], 'x')).toBeUndefined();
  });
});

describe('dates from putTime', () => {
  it('round like deleteAfterDays: the first CST midnight strictly after upload + N days', () => {
    // Qiniu's example: uploaded 2015-01-01 10:00 CST, N = 3 → from 2015-01-05 00:00 CST.
    expect(dueAt(PUT, 3)).toBe(cstMidnight(5));
    expect(dueAt(PUT, 3)).toBe(expiryFromDays(PUT_MS, 3));
  });
  it('0 is no action; a negative count is the upload second (at once)', () => {
    expect(dueAt(PUT, 0)).toBeUndefined();
    expect(dueAt(PUT, -1)).toBe(PUT_MS / 1000);
  });
  it('a rule gives its expiration and transitions; a negative deletion gives none', () => {
    const r = rule('r', '', { toIAAfterDays: 1, toArchiveIRAfterDays: 2, toArchiveAfterDays: 3, toDeepArchiveAfterDays: 4, deleteAfterDays: 5 });
    expect(ruleDates(r, PUT)).toEqual({
      expireAt: cstMidnight(7),
      transitions: { toIA: cstMidnight(3), toArchiveIR: cstMidnight(4), toArchive: cstMidnight(5), toDeepArchive: cstMidnight(6) },
    });
    expect(ruleDates(rule('r', '', { toArchiveAfterDays: -1 }), PUT)).toEqual({ transitions: { toArchive: PUT_MS / 1000 } });
  });
});

describe('applyRules', () => {
  const rules = [rule('logs', 'logs/', { deleteAfterDays: 10, toIAAfterDays: 3 }), rule('keep', 'logs/keep/')];
  it('adds the rule dates to an entry without its own lifecycle', () => {
    const out = applyRules(entry('logs/a'), rules);
    expect(out.expireAt).toBe(cstMidnight(12));
    expect(out.transitions).toEqual({ toIA: cstMidnight(5) });
  });
  it('keeps the earliest of each date: own or rule', () => {
    const own = entry('logs/a', { expireAt: cstMidnight(3), transitions: { toIA: cstMidnight(9), toArchive: cstMidnight(20) } });
    const out = applyRules(own, rules);
    expect(out.expireAt).toBe(cstMidnight(3));
    expect(out.transitions).toEqual({ toIA: cstMidnight(5), toArchive: cstMidnight(20) });
    expect(own.transitions).toEqual({ toIA: cstMidnight(9), toArchive: cstMidnight(20) }); // not mutated
  });
  it('returns the record itself when no rule governs the key or the rule sets nothing', () => {
    const a = entry('other');
    expect(applyRules(a, rules)).toBe(a);
    const b = entry('logs/keep/x', { expireAt: 5 });
    expect(applyRules(b, rules)).toBe(b); // the longer, empty rule exempts it from logs/
  });
});

describe('expiredByRules and putTimeCutoff', () => {
  const rules = [rule('logs', 'logs/', { deleteAfterDays: 3 }), rule('keep', 'logs/keep/')];
  it('a rule deletes from its date on, only the keys it governs', () => {
    expect(expiredByRules(rules, 'logs/a', PUT, cstMidnight(5) - 1)).toBe(false);
    expect(expiredByRules(rules, 'logs/a', PUT, cstMidnight(5))).toBe(true);
    expect(expiredByRules(rules, 'logs/keep/a', PUT, cstMidnight(30))).toBe(false);
    expect(expiredByRules(rules, 'other', PUT, cstMidnight(30))).toBe(false);
    expect(expiredByRules(undefined, 'logs/a', PUT, cstMidnight(30))).toBe(false);
  });
  it('the cutoff agrees with the per-object date for every put time around it', () => {
    const nows = [cstMidnight(5), cstMidnight(5) - 1, cstMidnight(5) + 1, cstMidnight(9) + 12345, 1_700_000_000];
    for (const days of [1, 3, 30]) {
      for (const now of nows) {
        const cutoff = putTimeCutoff(days, now);
        for (const delta of [-10_001n, -10_000n, -1n, 0n, 1n, 9_999n, 10_000n, 864_000_000_000n, -864_000_000_000n]) {
          const put = cutoff + delta;
          const due = (dueAt(put, days) as number) <= now;
          expect(put < cutoff, `days ${days}, now ${now}, put ${put}`).toBe(due);
        }
      }
    }
  });
  it('moves once a day, at CST midnight', () => {
    expect(putTimeCutoff(3, cstMidnight(5))).toBe(putTimeCutoff(3, cstMidnight(6) - 1));
    expect(putTimeCutoff(3, cstMidnight(6))).toBe(putTimeCutoff(3, cstMidnight(5)) + 864_000_000_000n);
  });
});

describe('shadowingPrefixes', () => {
  it('lists the longer rule prefixes under a rule', () => {
    const rules = [rule('all', ''), rule('logs', 'logs/'), rule('keep', 'logs/keep/'), rule('img', 'img/')];
    expect(shadowingPrefixes(rules, rules[1] as LifecycleRule)).toEqual(['logs/keep/']);
    expect(shadowingPrefixes(rules, rules[0] as LifecycleRule).sort()).toEqual(['img/', 'logs/', 'logs/keep/']);
    expect(shadowingPrefixes(rules, rules[2] as LifecycleRule)).toEqual([]);
  });
});

describe('rule input checks', () => {
  const input = (days: Partial<RuleInput> = {}): RuleInput => ({
    name: 'r_1',
    prefix: 'logs/',
    deleteAfterDays: 0,
    toIAAfterDays: 0,
    toIntelligentTieringAfterDays: 0,
    toArchiveIRAfterDays: 0,
    toArchiveAfterDays: 0,
    toDeepArchiveAfterDays: 0,
    historyDeleteAfterDays: 0,
    historyToIAAfterDays: 0,
    ...days,
  });
  const refusal = (days: Partial<RuleInput>): string => {
    try {
      checkRule(input(days));
    } catch (err) {
      expect(isKodoError(err, 'badLifecycleRule')).toBe(true);
      return (err as Error).message;
    }
    throw new Error('accepted');
  };

  it('accepts transitions in Kodo order and a deletion after them (gaps allowed, 0 = none)', () => {
    expect(() => checkRule(input({ toIAAfterDays: 30, toArchiveIRAfterDays: 35, toArchiveAfterDays: 40, toDeepArchiveAfterDays: 50, deleteAfterDays: 65 }))).not.toThrow();
    expect(() => checkRule(input({ toIAAfterDays: 30, toDeepArchiveAfterDays: 31 }))).not.toThrow();
    expect(() => checkRule(input({ toArchiveAfterDays: -1, deleteAfterDays: 1 }))).not.toThrow();
    expect(() => checkRule(input())).not.toThrow();
  });
  it('refuses a transition not after the one before it, naming both fields', () => {
    expect(refusal({ toIAAfterDays: 30, toArchiveAfterDays: 30 })).toMatch(/to_archive_after_days \(30\) must be greater than to_line_after_days \(30\)/);
    expect(refusal({ toArchiveAfterDays: 40, toDeepArchiveAfterDays: 20 })).toMatch(/to_deep_archive_after_days .* to_archive_after_days/);
    expect(refusal({ toIAAfterDays: 10, deleteAfterDays: 5 })).toMatch(/delete_after_days \(5\) must be greater than to_line_after_days/);
    expect(refusal({ toIAAfterDays: -1, toArchiveAfterDays: -1 })).toMatch(/to_archive_after_days/);
  });
  it('refuses negative deletions and history days, bad names and long prefixes', () => {
    expect(refusal({ deleteAfterDays: -1 })).toMatch(/delete_after_days/);
    expect(refusal({ historyDeleteAfterDays: -2 })).toMatch(/history_delete_after_days/);
    expect(refusal({ name: 'bad-name' })).toMatch(/name/);
    expect(refusal({ name: 'x'.repeat(50) })).toMatch(/name/);
    expect(refusal({ name: '' })).toMatch(/name/);
    expect(refusal({ prefix: 'é'.repeat(376) })).toMatch(/prefix/);
    expect(() => checkRule(input({ name: 'x'.repeat(49), prefix: 'a'.repeat(750) }))).not.toThrow();
  });
  it('parses day counts, naming the field of a malformed one', () => {
    expect(parseDays('12', 'f')).toBe(12);
    expect(parseDays('-1', 'f')).toBe(-1);
    expect(parseDays('', 'f')).toBe(0);
    expect(parseDays(null, 'f')).toBe(0);
    for (const bad of ['1.5', 'ten', '1e3', ' 1', '12345678']) expect(() => parseDays(bad, 'delete_after_days')).toThrow(/delete_after_days must be an integer/);
  });
});
