/**
 * The object lock rules (src/ports/object-lock.ts) and the lock configuration document (s3api/ops/object-lock.ts
 * `parseLockConfiguration`): who may destroy a version, what lessens a retention, the lock a new version gets.
 */
import { describe, expect, it } from 'vitest';
import { defaultRetainUntil, lockOfNewVersion, lockRefusal, retentionChangeRefusal } from '../../src/ports/object-lock.js';
import { parseLockConfiguration } from '../../src/s3api/ops/object-lock.js';

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;

describe('lockRefusal', () => {
  it('COMPLIANCE refuses until its date, bypass or not; GOVERNANCE yields to the bypass; a legal hold always refuses', () => {
    expect(lockRefusal(undefined, NOW, false)).toBeUndefined();
    expect(lockRefusal({ mode: 'COMPLIANCE', retainUntil: NOW + 1 }, NOW, true)).toEqual({ reason: 'retention', mode: 'COMPLIANCE', until: NOW + 1 });
    expect(lockRefusal({ mode: 'COMPLIANCE', retainUntil: NOW }, NOW, false)).toBeUndefined();
    expect(lockRefusal({ mode: 'GOVERNANCE', retainUntil: NOW + DAY }, NOW, false)).toMatchObject({ mode: 'GOVERNANCE' });
    expect(lockRefusal({ mode: 'GOVERNANCE', retainUntil: NOW + DAY }, NOW, true)).toBeUndefined();
    expect(lockRefusal({ legalHold: true }, NOW, true)).toEqual({ reason: 'legal-hold' });
    expect(lockRefusal({ legalHold: false, mode: 'GOVERNANCE', retainUntil: NOW - 1 }, NOW, false)).toBeUndefined();
  });
});

describe('retentionChangeRefusal', () => {
  const compliance = { mode: 'COMPLIANCE' as const, retainUntil: NOW + 10 * DAY };
  const governance = { mode: 'GOVERNANCE' as const, retainUntil: NOW + 10 * DAY };
  it('extending is always allowed; shortening, removing or downgrading COMPLIANCE never', () => {
    expect(retentionChangeRefusal(compliance, { mode: 'COMPLIANCE', retainUntil: NOW + 20 * DAY }, NOW, false)).toBeUndefined();
    for (const next of [{ mode: 'COMPLIANCE' as const, retainUntil: NOW + DAY }, {}, { mode: 'GOVERNANCE' as const, retainUntil: NOW + 30 * DAY }]) {
      expect(retentionChangeRefusal(compliance, next, NOW, true)).toMatchObject({ reason: 'retention' });
    }
  });
  it('GOVERNANCE: changed (mode included) only with the bypass, extended freely; an expired retention changes freely', () => {
    expect(retentionChangeRefusal(governance, {}, NOW, false)).toMatchObject({ mode: 'GOVERNANCE' });
    expect(retentionChangeRefusal(governance, {}, NOW, true)).toBeUndefined();
    expect(retentionChangeRefusal(governance, { mode: 'GOVERNANCE', retainUntil: NOW + 11 * DAY }, NOW, false)).toBeUndefined();
    expect(retentionChangeRefusal(governance, { mode: 'COMPLIANCE', retainUntil: NOW + 10 * DAY }, NOW, false)).toMatchObject({ mode: 'GOVERNANCE' });
    expect(retentionChangeRefusal(governance, { mode: 'COMPLIANCE', retainUntil: NOW + 10 * DAY }, NOW, true)).toBeUndefined();
    expect(retentionChangeRefusal({ mode: 'COMPLIANCE', retainUntil: NOW - 1 }, {}, NOW, false)).toBeUndefined();
  });
});

describe('lockOfNewVersion', () => {
  it('the asked lock wins; else the default retention; none without object lock', () => {
    const config = { enabled: true as const, rule: { mode: 'GOVERNANCE' as const, days: 3 } };
    expect(lockOfNewVersion(undefined, { mode: 'COMPLIANCE', retainUntil: NOW + DAY }, NOW)).toBeUndefined();
    expect(lockOfNewVersion(config, undefined, NOW)).toEqual({ mode: 'GOVERNANCE', retainUntil: NOW + 3 * DAY });
    expect(lockOfNewVersion(config, { mode: 'COMPLIANCE', retainUntil: NOW + DAY }, NOW)).toEqual({ mode: 'COMPLIANCE', retainUntil: NOW + DAY });
    expect(lockOfNewVersion(config, { legalHold: true }, NOW)).toEqual({ legalHold: true, mode: 'GOVERNANCE', retainUntil: NOW + 3 * DAY });
    expect(lockOfNewVersion({ enabled: true }, undefined, NOW)).toBeUndefined();
    expect(defaultRetainUntil({ mode: 'COMPLIANCE', years: 1 }, NOW)).toBe(NOW + 365 * DAY);
  });
});

describe('parseLockConfiguration', () => {
  const doc = (rule: string, enabled = 'Enabled'): string =>
    `<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>${enabled}</ObjectLockEnabled>${rule}</ObjectLockConfiguration>`;
  const rule = (inner: string): string => `<Rule><DefaultRetention>${inner}</DefaultRetention></Rule>`;
  it('reads the default retention (Days or Years) or none', () => {
    expect(parseLockConfiguration(doc(''))).toBeUndefined();
    expect(parseLockConfiguration(doc(rule('<Mode>GOVERNANCE</Mode><Days>30</Days>')))).toEqual({ mode: 'GOVERNANCE', days: 30 });
    expect(parseLockConfiguration(doc(rule('<Mode>COMPLIANCE</Mode><Years>7</Years>')))).toEqual({ mode: 'COMPLIANCE', years: 7 });
  });
  it('MalformedXML for Days and Years both or neither, an unknown mode, another ObjectLockEnabled; InvalidRetentionPeriod for a period ≤ 0', () => {
    for (const bad of [doc(rule('<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>')), doc(rule('<Mode>GOVERNANCE</Mode>')), doc(rule('<Mode>LOCKED</Mode><Days>1</Days>')), doc('', 'Disabled'), '<Other/>']) {
      expect(() => parseLockConfiguration(bad), bad).toThrow(expect.objectContaining({ code: 'MalformedXML' }));
    }
    expect(() => parseLockConfiguration(doc(rule('<Mode>GOVERNANCE</Mode><Days>0</Days>')))).toThrow(expect.objectContaining({ code: 'InvalidRetentionPeriod' }));
  });
});
