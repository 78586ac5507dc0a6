/**
 * S3 lifecycle rules kept as S3 rules, the pure part (buckets/s3-lifecycle.ts): filters matching every condition,
 * due dates at UTC midnights (Days, Date, upload aborts), which rules still hold next to Kodo's, and the Kodo view.
 */
import { describe, expect, it } from 'vitest';
import { dueAfterDays, filterMatches, s3OnlyConditions, s3RulesOf, sweepExpiry, uploadAbortDue } from '../../src/buckets/s3-lifecycle.js';
import type { S3LifecycleRule } from '../../src/ports/meta.js';

const DAY = 86_400;

describe('filterMatches', () => {
  const f: S3LifecycleRule['filter'] = { form: 'and', prefix: 'logs/', tags: [['a', '1'], ['b', '']], sizeGreaterThan: 10, sizeLessThan: 100 };
  it('needs the prefix, every tag with its value and both size bounds (strict)', () => {
    const ok = { key: 'logs/x', size: 50, tags: [['b', ''], ['a', '1'], ['c', '3']] as Array<[string, string]> };
    expect(filterMatches(f, ok)).toBe(true);
    expect(filterMatches(f, { ...ok, key: 'other/x' })).toBe(false);
    expect(filterMatches(f, { ...ok, tags: [['a', '1']] })).toBe(false);
    expect(filterMatches(f, { ...ok, tags: [['a', '2'], ['b', '']] })).toBe(false);
    expect(filterMatches(f, { ...ok, size: 10 })).toBe(false);
    expect(filterMatches(f, { ...ok, size: 100 })).toBe(false);
    expect(filterMatches({ form: 'none' }, { key: 'any', size: 0, tags: [] })).toBe(true);
  });
});

describe('due dates', () => {
  it('round up to the next UTC midnight (AWS)', () => {
    const put = 10 * DAY + 3600;
    expect(dueAfterDays(put, 1)).toBe(12 * DAY);
    expect(dueAfterDays(10 * DAY, 1)).toBe(11 * DAY);
    expect(uploadAbortDue(put, 1, 12 * DAY - 1)).toBe(false);
    expect(uploadAbortDue(put, 1, 12 * DAY)).toBe(true);
  });

  it('sweepExpiry: Days gives the last upload time due now; a Date expires everything once passed; disabled or Kodo rules none', () => {
    const days: S3LifecycleRule = { id: 'd', enabled: true, filter: { form: 'none' }, expiration: { days: 2 } };
    const at = sweepExpiry(days, 12 * DAY + 5);
    expect(at).toEqual({ putAtMostSec: 10 * DAY });
    // Agrees with the per-object rule: put at the cutoff is due, a second later is not.
    expect(dueAfterDays(10 * DAY, 2) <= 12 * DAY + 5).toBe(true);
    expect(dueAfterDays(10 * DAY + 1, 2) <= 12 * DAY + 5).toBe(false);
    const date: S3LifecycleRule = { id: 'x', enabled: true, filter: { form: 'none' }, expiration: { date: new Date(20 * DAY * 1000).toISOString() } };
    expect(sweepExpiry(date, 20 * DAY - 1)).toBeUndefined();
    expect(sweepExpiry(date, 20 * DAY)).toEqual({ all: true });
    expect(sweepExpiry({ ...days, enabled: false }, 99 * DAY)).toBeUndefined();
    expect(sweepExpiry({ ...days, kodo: 'd' }, 99 * DAY)).toBeUndefined();
  });
});

describe('rules next to Kodo’s', () => {
  it('a rule kept as a Kodo rule holds while that rule exists; the Kodo view describes the rest', () => {
    const kept: S3LifecycleRule = { id: 'k', enabled: true, filter: { form: 'filter', prefix: 'p/' }, expiration: { days: 1 }, kodo: 'k' };
    const own: S3LifecycleRule = { id: 't', enabled: false, filter: { form: 'filter', tags: [['k', 'v']] }, expiration: { days: 3 } };
    expect(s3RulesOf({ lifecycleS3: [kept, own] }).map((r) => r.id)).toEqual(['t']);
    const kodoRule = { name: 'k', prefix: 'p/', deleteAfterDays: 1, toIAAfterDays: 0, toArchiveIRAfterDays: 0, toArchiveAfterDays: 0, toDeepArchiveAfterDays: 0, ctime: 0 };
    expect(s3RulesOf({ lifecycleS3: [kept, own], lifecycleRules: [kodoRule] }).map((r) => r.id)).toEqual(['k', 't']);
    expect(s3OnlyConditions(own)).toBe('disabled, tag k=v');
  });
});
