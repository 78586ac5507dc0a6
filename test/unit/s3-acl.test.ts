/**
 * S3 ACL decisions, the pure part (s3api/acl.ts): canned ACL grants, who a grant covers (AllUsers,
 * AuthenticatedUsers, a canonical user), FULL_CONTROL as every permission, the owner always allowed, and a bucket's
 * grants kept in step with its Kodo private flag.
 */
import { describe, expect, it } from 'vitest';
import { aclAllows, ALL_USERS_URI, AUTHENTICATED_USERS_URI, bucketGrants, cannedGrants, publicRead, type Acl } from '../../src/s3api/acl.js';

const anonymous = { kind: 'anonymous' } as const;
const user = (id: string) => ({ kind: 'user', id }) as const;

describe('canned ACLs', () => {
  it('grant the owner FULL_CONTROL and what the name says', () => {
    expect(cannedGrants('private', 'o')).toEqual([{ grantee: { type: 'CanonicalUser', id: 'o' }, permission: 'FULL_CONTROL' }]);
    expect(cannedGrants('public-read-write', 'o').slice(1)).toEqual([
      { grantee: { type: 'Group', uri: ALL_USERS_URI }, permission: 'READ' },
      { grantee: { type: 'Group', uri: ALL_USERS_URI }, permission: 'WRITE' },
    ]);
    expect(cannedGrants('authenticated-read', 'o').slice(1)).toEqual([{ grantee: { type: 'Group', uri: AUTHENTICATED_USERS_URI }, permission: 'READ' }]);
    expect(cannedGrants('bucket-owner-full-control', 'writer', 'b').slice(1)).toEqual([{ grantee: { type: 'CanonicalUser', id: 'b' }, permission: 'FULL_CONTROL' }]);
    expect(cannedGrants('bucket-owner-read', 'o')).toEqual(cannedGrants('private', 'o'));
  });
});

describe('aclAllows', () => {
  const acl = (canned: Parameters<typeof cannedGrants>[0]): Acl => ({ owner: 'o', grants: cannedGrants(canned, 'o') });

  it('lets the owner do everything, whatever the grants', () => {
    expect(aclAllows({ owner: 'o', grants: [] }, user('o'), 'WRITE_ACP')).toBe(true);
  });

  it.each([
    ['private', anonymous, 'READ', false],
    ['public-read', anonymous, 'READ', true],
    ['public-read', anonymous, 'WRITE', false],
    ['public-read', user('x'), 'READ', true],
    ['public-read-write', anonymous, 'WRITE', true],
    ['authenticated-read', anonymous, 'READ', false],
    ['authenticated-read', user('x'), 'READ', true],
    ['authenticated-read', user('x'), 'READ_ACP', false],
  ] as const)('%s: %o asking %s → %s', (canned, who, need, want) => {
    expect(aclAllows(acl(canned), who, need)).toBe(want);
  });

  it('a canonical user grant covers that account only; FULL_CONTROL is every permission', () => {
    const a: Acl = { owner: 'o', grants: [{ grantee: { type: 'CanonicalUser', id: 'x' }, permission: 'FULL_CONTROL' }] };
    for (const need of ['READ', 'WRITE', 'READ_ACP', 'WRITE_ACP'] as const) expect(aclAllows(a, user('x'), need)).toBe(true);
    expect(aclAllows(a, user('y'), 'READ')).toBe(false);
    expect(aclAllows(a, anonymous, 'READ')).toBe(false);
  });
});

describe('bucketGrants (in step with the Kodo private flag)', () => {
  it('adds AllUsers READ to a public bucket and drops it from a private one', () => {
    expect(publicRead(bucketGrants(undefined, 'o', false))).toBe(true);
    expect(bucketGrants(undefined, 'o', true)).toEqual(cannedGrants('private', 'o'));
    expect(publicRead(bucketGrants(cannedGrants('public-read', 'o'), 'o', true))).toBe(false);
    const rw = bucketGrants(cannedGrants('public-read-write', 'o'), 'o', false);
    expect(rw).toEqual(cannedGrants('public-read-write', 'o'));
    // Closed through Kodo: public-read-write loses its AllUsers WRITE too; a write-only grant (private flag) stays.
    expect(bucketGrants(cannedGrants('public-read-write', 'o'), 'o', true)).toEqual(cannedGrants('private', 'o'));
    const dropBox = [...cannedGrants('private', 'o'), { grantee: { type: 'Group' as const, uri: ALL_USERS_URI }, permission: 'WRITE' as const }];
    expect(bucketGrants(dropBox, 'o', true)).toEqual(dropBox);
  });
});
