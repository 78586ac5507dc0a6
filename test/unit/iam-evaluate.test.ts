/**
 * The IAM policy evaluator (src/iam/evaluate.ts) and policy validation (src/iam/policy.ts): the permission matrix of
 * typical policies — read-only on a bucket, upload-only on a prefix, deny-delete, group-inherited, wildcards — each
 * request allowed or refused with the reason, explicit Deny over Allow, default deny for sub-users, the account
 * owner and root allowed everything; then what validation accepts and refuses (400 naming the field).
 */
import { describe, expect, it } from 'vitest';
import { isKodoError } from '../../src/errors.js';
import { actionMatches, evaluate, globMatch, principalOf, resourceMatches, type AppliedPolicy, type IamRequest, type Principal } from '../../src/iam/evaluate.js';
import { parseStatements, type Statement } from '../../src/iam/policy.js';
import type { IamPolicyRecord } from '../../src/ports/iam.js';

const UID = 4242;

const policy = (alias: string, statements: readonly Statement[], via: AppliedPolicy['via'] = 'user'): AppliedPolicy => ({ alias, via, statements });
const user = (policies: AppliedPolicy[], enabled = true): Principal => ({ kind: 'user', owner: 'acct', ownerUid: UID, alias: 'u', enabled, policies });
const allow = (action: string[], resource: string[]): Statement => ({ action, resource, effect: 'Allow' });
const deny = (action: string[], resource: string[]): Statement => ({ action, resource, effect: 'Deny' });

const READ_ONLY = policy('read-photos', [allow(['kodo/Get', 'kodo/Stat', 'kodo/List'], ['qrn:kodo:::photos/*'])]);
const UPLOAD_INCOMING = policy('upload-incoming', [allow(['kodo/Upload', 'kodo/Mkfile'], ['qrn:kodo:::photos/incoming/*'])]);
const DENY_DELETE = policy('no-delete', [deny(['kodo/Delete', 'kodo/Move'], ['*'])]);
const EVERYTHING = policy('admin', [allow(['kodo/*'], ['qrn:kodo:::*'])]);

/** [principal's policies, request, allowed?, reason pattern] */
type Row = [string, AppliedPolicy[], IamRequest, boolean, RegExp];

const MATRIX: Row[] = [
  // read-only on a bucket
  ['read-only: GET an object', [READ_ONLY], { action: 'kodo/Get', bucket: 'photos', key: 'a/b.jpg' }, true, /allowed by statement 0 of policy "read-photos"/],
  ['read-only: list the bucket', [READ_ONLY], { action: 'kodo/List', bucket: 'photos' }, true, /read-photos/],
  ['read-only: list under a prefix', [READ_ONLY], { action: 'kodo/List', bucket: 'photos', prefix: 'a/' }, true, /read-photos/],
  ['read-only: upload refused', [READ_ONLY], { action: 'kodo/Upload', bucket: 'photos', key: 'x' }, false, /no policy of sub-user "u" allows kodo\/Upload/],
  ['read-only: delete refused', [READ_ONLY], { action: 'kodo/Delete', bucket: 'photos', key: 'x' }, false, /no policy/],
  ['read-only: another bucket refused', [READ_ONLY], { action: 'kodo/Get', bucket: 'photos2', key: 'x' }, false, /no policy/],
  ['read-only: bucket name prefix is not the bucket', [READ_ONLY], { action: 'kodo/List', bucket: 'photosx' }, false, /no policy/],
  // upload-only on a prefix
  ['upload-only: upload under the prefix', [UPLOAD_INCOMING], { action: 'kodo/Upload', bucket: 'photos', key: 'incoming/2026/x.jpg' }, true, /upload-incoming/],
  ['upload-only: resumable under the prefix', [UPLOAD_INCOMING], { action: 'kodo/Mkfile', bucket: 'photos', key: 'incoming/big.bin' }, true, /upload-incoming/],
  ['upload-only: upload outside the prefix', [UPLOAD_INCOMING], { action: 'kodo/Upload', bucket: 'photos', key: 'public/x.jpg' }, false, /no policy/],
  ['upload-only: the prefix itself without slash', [UPLOAD_INCOMING], { action: 'kodo/Upload', bucket: 'photos', key: 'incoming' }, false, /no policy/],
  ['upload-only: download refused', [UPLOAD_INCOMING], { action: 'kodo/Get', bucket: 'photos', key: 'incoming/x.jpg' }, false, /no policy/],
  ['upload-only: listing the whole bucket refused', [UPLOAD_INCOMING], { action: 'kodo/List', bucket: 'photos' }, false, /no policy/],
  // deny-delete over an admin policy: explicit Deny wins
  ['deny-delete: delete refused despite admin', [EVERYTHING, DENY_DELETE], { action: 'kodo/Delete', bucket: 'photos', key: 'x' }, false, /denied by statement 0 of policy "no-delete"/],
  ['deny-delete: move refused', [EVERYTHING, DENY_DELETE], { action: 'kodo/Move', bucket: 'b', key: 'x' }, false, /no-delete/],
  ['deny-delete: upload still allowed', [EVERYTHING, DENY_DELETE], { action: 'kodo/Upload', bucket: 'b', key: 'x' }, true, /policy "admin"/],
  ['deny alone allows nothing', [DENY_DELETE], { action: 'kodo/Get', bucket: 'b', key: 'x' }, false, /no policy/],
  // group-inherited
  ['group: inherited read', [policy('read-photos', READ_ONLY.statements, { group: 'viewers' })], { action: 'kodo/Get', bucket: 'photos', key: 'k' }, true, /via group "viewers"/],
  ['group: inherited deny beats own allow', [EVERYTHING, policy('no-delete', DENY_DELETE.statements, { group: 'careful' })], { action: 'kodo/Delete', bucket: 'b', key: 'k' }, false, /via group "careful"/],
  // wildcards
  ['wildcard: * action and * resource', [policy('all', [allow(['*'], ['*'])])], { action: 'kodo/Drop', bucket: 'b' }, true, /policy "all"/],
  ['wildcard: kodo/* on one bucket', [policy('b-all', [allow(['kodo/*'], ['qrn:kodo:::b/*'])])], { action: 'kodo/Chgm', bucket: 'b', key: 'k' }, true, /b-all/],
  ['wildcard: kodo/* on one bucket, another bucket', [policy('b-all', [allow(['kodo/*'], ['qrn:kodo:::b/*'])])], { action: 'kodo/Chgm', bucket: 'c', key: 'k' }, false, /no policy/],
  ['wildcard: bucket pattern', [policy('logs', [allow(['kodo/Get'], ['qrn:kodo:::logs-*/*'])])], { action: 'kodo/Get', bucket: 'logs-2026', key: 'x' }, true, /logs/],
  ['wildcard: key suffix', [policy('jpg', [allow(['kodo/Get'], ['qrn:kodo:::b/*.jpg'])])], { action: 'kodo/Get', bucket: 'b', key: 'a/b/c.jpg' }, true, /jpg/],
  ['wildcard: key suffix, other type', [policy('jpg', [allow(['kodo/Get'], ['qrn:kodo:::b/*.jpg'])])], { action: 'kodo/Get', bucket: 'b', key: 'a/b/c.png' }, false, /no policy/],
  ['wildcard: regex characters are literal', [policy('dot', [allow(['kodo/Get'], ['qrn:kodo:::b/a.b'])])], { action: 'kodo/Get', bucket: 'b', key: 'aXb' }, false, /no policy/],
  // actions are matched case-insensitively; service-level actions ignore resources
  ['action case', [policy('p', [allow(['KODO/get'], ['*'])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, true, /policy "p"/],
  ['service-level: Mkbucket with no resources', [policy('mk', [allow(['kodo/Mkbucket'], [])])], { action: 'kodo/Mkbucket' }, true, /policy "mk"/],
  ['resource-level with no resources grants nothing', [policy('none', [allow(['kodo/Get'], [])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, false, /no policy/],
  // uids in the QRN
  ['qrn with the account uid', [policy('own', [allow(['kodo/Get'], [`qrn:kodo::${UID}:b/*`])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, true, /own/],
  ['qrn with another uid', [policy('other', [allow(['kodo/Get'], ['qrn:kodo::1:b/*'])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, false, /no policy/],
  ['qrn of another product', [policy('cdn', [allow(['*'], ['qrn:cdn:::b/*'])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, false, /no policy/],
  ['other services grant nothing on kodo', [policy('cdn', [allow(['cdn/DownloadCDNLog'], ['*'])])], { action: 'kodo/Get', bucket: 'b', key: 'k' }, false, /no policy/],
  ['no policies at all: default deny', [], { action: 'kodo/Get', bucket: 'b', key: 'k' }, false, /no policy/],
];

describe('evaluate: the permission matrix', () => {
  it.each(MATRIX)('%s', (_name, policies, req, allowed, reason) => {
    const d = evaluate(user(policies), req);
    expect(d.allowed).toBe(allowed);
    expect(d.reason).toMatch(reason);
  });

  it('the root key and the account owner may do everything; a disabled sub-user nothing', () => {
    const req: IamRequest = { action: 'kodo/Delete', bucket: 'b', key: 'k' };
    expect(evaluate({ kind: 'root' }, req)).toMatchObject({ allowed: true, reason: expect.stringMatching(/root/) });
    expect(evaluate({ kind: 'owner', owner: 'acct' }, req)).toMatchObject({ allowed: true, reason: expect.stringMatching(/owner/) });
    expect(evaluate(user([EVERYTHING], false), req)).toMatchObject({ allowed: false, reason: 'sub-user "u" is disabled' });
  });

  it('the matched statement is reported', () => {
    const d = evaluate(user([READ_ONLY, policy('g', DENY_DELETE.statements, { group: 'ops' })]), { action: 'kodo/Delete', bucket: 'photos', key: 'k' });
    expect(d.matched).toEqual({ policy: 'g', via: { group: 'ops' }, statement: 0, effect: 'Deny' });
  });
});

describe('matching helpers', () => {
  it('globMatch, actionMatches, resourceMatches', () => {
    expect(globMatch('a*c', 'abbbc')).toBe(true);
    expect(globMatch('a*c', 'abbbd')).toBe(false);
    expect(globMatch('a/*', 'a/b/c\nd')).toBe(true);
    expect(globMatch('(a)', '(a)')).toBe(true);
    expect(actionMatches('kodo/*', 'kodo/Get')).toBe(true);
    expect(actionMatches('kodo/*', 'kodox/Get')).toBe(false);
    expect(actionMatches('*', 'anything/At')).toBe(true);
    expect(resourceMatches('qrn:kodo:::b/p*', { action: 'kodo/List', bucket: 'b', prefix: 'px/' }, UID)).toBe(true);
    expect(resourceMatches('qrn:kodo:::b/p*', { action: 'kodo/List', bucket: 'b', prefix: 'q' }, UID)).toBe(false);
    expect(resourceMatches('qrn:kodo:::b/p*', { action: 'kodo/List', bucket: 'b' }, UID)).toBe(false);
    expect(resourceMatches('qrn:kodo:::b', { action: 'kodo/List', bucket: 'b' }, UID)).toBe(true);
    expect(resourceMatches('qrn:kodo:::b', { action: 'kodo/Get', bucket: 'b', key: 'k' }, UID)).toBe(false);
    expect(resourceMatches('qrn:kodo:::b/a:b', { action: 'kodo/Get', bucket: 'b', key: 'a:b' }, UID)).toBe(true);
    expect(resourceMatches('qrn:kodo:::*', { action: 'kodo/Mkbucket' }, UID)).toBe(true);
    expect(resourceMatches('qrn:kodo:::b/*', { action: 'kodo/Mkbucket' }, UID)).toBe(false);
  });

  it('principalOf: own and group policies, disabled policies left out', () => {
    const rec = (alias: string, st: readonly Statement[], enabled = true): IamPolicyRecord => ({
      owner: 'acct', id: alias, alias, description: '', editType: 1, statement: JSON.stringify(st), enabled, createdMs: 0, updatedMs: 0,
    });
    const p = principalOf({ owner: 'acct', alias: 'u', enabled: true }, UID, {
      own: [rec('ro', READ_ONLY.statements), rec('off', EVERYTHING.statements, false)],
      groups: [{ group: 'ops', policies: [rec('nd', DENY_DELETE.statements)] }],
    });
    expect(p.kind === 'user' && p.policies.map((x) => [x.alias, x.via])).toEqual([['ro', 'user'], ['nd', { group: 'ops' }]]);
    expect(evaluate(p, { action: 'kodo/Upload', bucket: 'photos', key: 'k' }).allowed).toBe(false);
  });
});

describe('parseStatements: validation naming the field', () => {
  const refused = (v: unknown, field: RegExp): void => {
    try {
      parseStatements(v, UID);
    } catch (err) {
      expect(isKodoError(err, 'badIamPolicy'), String(err)).toBe(true);
      expect((err as Error).message).toMatch(field);
      return;
    }
    throw new Error(`accepted ${JSON.stringify(v)}`);
  };

  it('accepts the documented forms, leniently', () => {
    expect(
      parseStatements(
        [
          { action: 'kodo/get', resource: 'qrn:kodo:::b/*', effect: 'allow' },
          { action: ['kodo/Mkbucket'], resource: [], effect: 'Allow' },
          { action: ['cdn/DownloadCDNLog', 'kodo/*', '*'], resource: ['qrn:product:::/a/b/c.txt', '*', `qrn:kodo::${UID}:b`], effect: 'DENY' },
        ],
        UID,
      ),
    ).toEqual([
      { action: ['kodo/Get'], resource: ['qrn:kodo:::b/*'], effect: 'Allow' },
      { action: ['kodo/Mkbucket'], resource: [], effect: 'Allow' },
      { action: ['cdn/DownloadCDNLog', 'kodo/*', '*'], resource: ['qrn:product:::/a/b/c.txt', '*', `qrn:kodo::${UID}:b`], effect: 'Deny' },
    ]);
  });

  it.each([
    ['not an array', {}, /^invalid IAM policy: statement: /],
    ['empty', [], /statement: must be a non-empty array/],
    ['statement not an object', [1], /statement\[0\]: must be an object/],
    ['no action', [{ resource: ['*'], effect: 'Allow' }], /statement\[0\]\.action: must be an array/],
    ['empty action list', [{ action: [], resource: ['*'], effect: 'Allow' }], /statement\[0\]\.action: must name at least one/],
    ['unknown kodo action', [{ action: ['kodo/Get', 'kodo/Teleport'], resource: ['*'], effect: 'Allow' }], /statement\[0\]\.action\[1\]: unknown action "kodo\/Teleport"/],
    ['malformed action', [{ action: ['get object'], resource: ['*'], effect: 'Allow' }], /statement\[0\]\.action\[0\]: "get object" is not an action/],
    ['resource not a qrn', [{ action: ['kodo/Get'], resource: ['b/*'], effect: 'Allow' }], /statement\[0\]\.resource\[0\]/],
    ['resource of another account', [{ action: ['kodo/Get'], resource: ['qrn:kodo::7:b/*'], effect: 'Allow' }], /outside the account/],
    ['bad bucket', [{ action: ['kodo/Get'], resource: ['qrn:kodo:::b b/*'], effect: 'Allow' }], /is not a bucket name/],
    ['resource not a string', [{ action: ['kodo/Get'], resource: [3], effect: 'Allow' }], /statement\[0\]\.resource\[0\]: must be a non-empty string/],
    ['bad effect', [{ action: ['kodo/Get'], resource: ['*'], effect: 'Permit' }], /statement\[0\]\.effect/],
    ['too many statements', new Array(101).fill({ action: ['kodo/Get'], resource: ['*'], effect: 'Allow' }), /at most 100 statements/],
  ])('%s', (_name, v, field) => refused(v, field));
});
