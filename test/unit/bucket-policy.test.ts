/**
 * The S3 bucket policy parser and matcher (src/s3api/bucket-policy-doc.ts, bucket-policy-eval.ts): wildcards,
 * NotAction/NotResource, principals, the condition operators with IfExists and the set prefixes, Deny over Allow,
 * AWS's "public" rule, and the MalformedPolicy refusals.
 */
import { describe, expect, it } from 'vitest';
import { parseBucketPolicy, policyIsPublic } from '../../src/s3api/bucket-policy-doc.js';
import { conditionHolds, evaluateBucketPolicy, wildcardMatch, type PolicyRequest } from '../../src/s3api/bucket-policy-eval.js';
import { S3Error } from '../../src/s3api/errors.js';
import { strongestMatch } from '../../src/iam/evaluate.js';

const B = 'photos';
const doc = (...statements: object[]) => parseBucketPolicy(JSON.stringify({ Version: '2012-10-17', Statement: statements }), B);
const anyone = { kind: 'anonymous' } as const;
const req = (over: Partial<PolicyRequest> = {}): PolicyRequest => ({ action: 's3:GetObject', bucket: B, key: 'a/b.jpg', who: anyone, context: {}, ...over });
const effect = (p: ReturnType<typeof doc>, r: PolicyRequest) => evaluateBucketPolicy(p, r)?.effect;

function malformed(text: string): string {
  try {
    parseBucketPolicy(text, B);
  } catch (err) {
    expect(err).toBeInstanceOf(S3Error);
    expect((err as S3Error).code).toBe('MalformedPolicy');
    return (err as S3Error).message;
  }
  throw new Error(`accepted: ${text}`);
}

describe('wildcards', () => {
  it('matches * and ? and nothing else', () => {
    expect(wildcardMatch('a/*.jpg', 'a/b/c.jpg')).toBe(true);
    expect(wildcardMatch('a/?.jpg', 'a/b.jpg')).toBe(true);
    expect(wildcardMatch('a/?.jpg', 'a/bc.jpg')).toBe(false);
    expect(wildcardMatch('a.(x)+', 'a.(x)+')).toBe(true);
    expect(wildcardMatch('a.(x)+', 'ab(x)')).toBe(false);
    expect(wildcardMatch('S3:Get*', 's3:getobject', true)).toBe(true);
  });

  it('applies action and resource patterns', () => {
    const p = doc({ Effect: 'Allow', Principal: '*', Action: 's3:Get*', Resource: `arn:aws:s3:::${B}/a/*` });
    expect(effect(p, req())).toBe('Allow');
    expect(effect(p, req({ action: 's3:GetObjectTagging' }))).toBe('Allow');
    expect(effect(p, req({ action: 's3:PutObject' }))).toBeUndefined();
    expect(effect(p, req({ key: 'b/c.jpg' }))).toBeUndefined();
    expect(effect(p, req({ key: undefined }))).toBeUndefined();
  });

  it('applies NotAction and NotResource', () => {
    const p = doc(
      { Effect: 'Deny', Principal: '*', NotAction: ['s3:GetObject', 's3:ListBucket'], Resource: [`arn:aws:s3:::${B}`, `arn:aws:s3:::${B}/*`] },
      { Effect: 'Allow', Principal: '*', Action: 's3:*', NotResource: `arn:aws:s3:::${B}/private/*` },
    );
    expect(effect(p, req({ action: 's3:DeleteObject' }))).toBe('Deny');
    expect(effect(p, req())).toBe('Allow');
    expect(effect(p, req({ key: 'private/x' }))).toBeUndefined();
  });
});

describe('principals and precedence', () => {
  it('decides by the IAM evaluator\'s precedence: the first Deny, else the first Allow', () => {
    expect(strongestMatch([{ effect: 'Allow' as const, n: 1 }, { effect: 'Deny' as const, n: 2 }, { effect: 'Deny' as const, n: 3 }])?.n).toBe(2);
    expect(strongestMatch([{ effect: 'Allow' as const, n: 1 }, { effect: 'Allow' as const, n: 2 }])?.n).toBe(1);
    expect(strongestMatch([])).toBeUndefined();
  });

  it('covers accounts, sub-users and anyone; Deny wins', () => {
    const p = doc(
      { Effect: 'Allow', Principal: { AWS: ['AK1', 'arn:aws:iam::AK2:root', 'arn:aws:iam::AK1:user/bob'] }, Action: 's3:*', Resource: `arn:aws:s3:::${B}/*` },
      { Sid: 'NoBob', Effect: 'Deny', Principal: { AWS: 'arn:aws:iam::AK1:user/bob' }, Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${B}/*` },
    );
    expect(effect(p, req({ who: { kind: 'account', account: 'AK1' } }))).toBe('Allow');
    expect(effect(p, req({ who: { kind: 'account', account: 'AK2' } }))).toBe('Allow');
    expect(effect(p, req({ who: { kind: 'account', account: 'AK3' } }))).toBeUndefined();
    expect(effect(p, req({ who: anyone }))).toBeUndefined();
    expect(effect(p, req({ who: { kind: 'user', account: 'AK1', alias: 'bob' } }))).toBe('Allow');
    expect(evaluateBucketPolicy(p, req({ action: 's3:DeleteObject', who: { kind: 'user', account: 'AK1', alias: 'bob' } }))).toEqual({ effect: 'Deny', statement: 1, sid: 'NoBob' });
    expect(effect(p, req({ who: { kind: 'user', account: 'AK2', alias: 'bob' } }))).toBeUndefined();
  });
});

describe('conditions', () => {
  const c = (op: string, values: string[], extra: { ifExists?: boolean; set?: 'ForAnyValue' | 'ForAllValues' } = {}) => ({ op, key: 'k', values, ifExists: extra.ifExists ?? false, set: extra.set });

  it('compares strings, numbers, dates, booleans and addresses', () => {
    expect(conditionHolds(c('StringEquals', ['a', 'b']), ['b'])).toBe(true);
    expect(conditionHolds(c('StringNotEquals', ['a', 'b']), ['b'])).toBe(false);
    expect(conditionHolds(c('StringNotEquals', ['a', 'b']), ['c'])).toBe(true);
    expect(conditionHolds(c('StringLike', ['home/*']), ['home/x'])).toBe(true);
    expect(conditionHolds(c('StringNotLike', ['home/*']), ['home/x'])).toBe(false);
    expect(conditionHolds(c('NumericLessThanEquals', ['100']), ['100'])).toBe(true);
    expect(conditionHolds(c('NumericGreaterThan', ['100']), ['99'])).toBe(false);
    expect(conditionHolds(c('NumericLessThan', ['100']), ['abc'])).toBe(false);
    expect(conditionHolds(c('DateLessThan', ['2030-01-01T00:00:00Z']), ['2026-12-08T00:00:00.000Z'])).toBe(true);
    expect(conditionHolds(c('DateGreaterThan', ['2030-01-01T00:00:00Z']), ['2026-12-08T00:00:00.000Z'])).toBe(false);
    expect(conditionHolds(c('Bool', ['false']), ['false'])).toBe(true);
    expect(conditionHolds(c('IpAddress', ['10.0.0.0/8']), ['10.1.2.3'])).toBe(true);
    expect(conditionHolds(c('IpAddress', ['10.0.0.0/8']), ['11.1.2.3'])).toBe(false);
    expect(conditionHolds(c('NotIpAddress', ['10.0.0.0/8']), ['11.1.2.3'])).toBe(true);
    expect(conditionHolds(c('IpAddress', ['2001:db8::/32']), ['2001:db8::1'])).toBe(true);
    expect(conditionHolds(c('IpAddress', ['192.0.2.7']), ['192.0.2.7'])).toBe(true);
  });

  it('handles absent keys: Null, IfExists, ForAllValues', () => {
    expect(conditionHolds(c('StringEquals', ['a']), undefined)).toBe(false);
    expect(conditionHolds(c('StringEquals', ['a'], { ifExists: true }), undefined)).toBe(true);
    expect(conditionHolds(c('StringEquals', ['a'], { ifExists: true }), ['b'])).toBe(false);
    expect(conditionHolds(c('Null', ['true']), undefined)).toBe(true);
    expect(conditionHolds(c('Null', ['false']), undefined)).toBe(false);
    expect(conditionHolds(c('Null', ['false']), ['x'])).toBe(true);
    expect(conditionHolds(c('StringEquals', ['a', 'b'], { set: 'ForAllValues' }), ['a', 'b'])).toBe(true);
    expect(conditionHolds(c('StringEquals', ['a'], { set: 'ForAllValues' }), ['a', 'b'])).toBe(false);
    expect(conditionHolds(c('StringEquals', ['a'], { set: 'ForAnyValue' }), ['c', 'a'])).toBe(true);
  });

  it('ANDs the conditions of a statement, with keys case-insensitive', () => {
    const p = doc({
      Effect: 'Allow', Principal: '*', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${B}`,
      Condition: { StringLike: { 's3:Prefix': 'home/*' }, NumericLessThanEquals: { 's3:max-keys': 10 } },
    });
    const list = (context: Record<string, string[]>) => req({ action: 's3:ListBucket', key: undefined, context });
    expect(effect(p, list({ 's3:prefix': ['home/a'], 's3:max-keys': ['5'] }))).toBe('Allow');
    expect(effect(p, list({ 's3:prefix': ['home/a'], 's3:max-keys': ['50'] }))).toBeUndefined();
    expect(effect(p, list({ 's3:max-keys': ['5'] }))).toBeUndefined();
  });
});

describe('documents', () => {
  it('takes one statement or a list, and reports public by AWS rule', () => {
    const one = parseBucketPolicy(JSON.stringify({ Statement: { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${B}/*` } }), B);
    expect(one.statements).toHaveLength(1);
    expect(policyIsPublic(one)).toBe(true);
    const narrowed = doc({ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${B}/*`, Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } } });
    expect(policyIsPublic(narrowed)).toBe(false);
    expect(policyIsPublic(doc({ Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: `arn:aws:s3:::${B}/*` }))).toBe(false);
    expect(policyIsPublic(doc({ Effect: 'Allow', Principal: { AWS: 'AK1' }, Action: 's3:*', Resource: `arn:aws:s3:::${B}/*` }))).toBe(false);
  });

  it('refuses malformed ones with AWS messages', () => {
    const st = { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${B}/*` };
    expect(malformed('[1]')).toMatch(/valid JSON/);
    expect(malformed(JSON.stringify({ Statement: [{ ...st, Resource: 'arn:aws:s3:::other/*' }] }))).toBe('Policy has invalid resource');
    expect(malformed(JSON.stringify({ Statement: [{ ...st, Condition: { StringWeird: { 'aws:UserAgent': 'x' } } }] }))).toBe('Invalid Condition type : StringWeird');
    expect(malformed(JSON.stringify({ Statement: [{ ...st, Condition: { 'ForSome:StringEquals': { k: 'x' } } }] }))).toMatch(/Invalid Condition type/);
    expect(malformed(JSON.stringify({ Statement: [{ ...st, Principal: undefined }] }))).toBe('Missing required field Principal');
    expect(malformed(JSON.stringify({ Statement: [{ ...st, NotPrincipal: { AWS: 'x' } }] }))).toMatch(/NotPrincipal/);
    expect(malformed(JSON.stringify({ Statement: [{ ...st, NotAction: 's3:PutObject' }] }))).toMatch(/both Action and NotAction/);
    expect(malformed(JSON.stringify({ Statement: [] }))).toMatch(/Statement/);
    expect(malformed(JSON.stringify({ Version: '2020-01-01', Statement: [st] }))).toMatch(/version/);
    expect(malformed(JSON.stringify({ Statement: [st], Pad: 'x'.repeat(20 * 1024) }))).toMatch(/maximum allowed document size/);
  });
});
