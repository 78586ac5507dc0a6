/**
 * S3 access control lists, the pure part (AWS "Access control list (ACL) overview": grantees, permissions, canned
 * ACLs — https://docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html): what a canned ACL grants, and
 * whether an ACL lets a requester do something. No I/O: the caller passes the ACL and the requester.
 *
 * - Grantees: a canonical user (its ID: an account's AccessKey, Granary's canonical id), the AllUsers group
 *   (anyone, signed or not) or the AuthenticatedUsers group (any signed request).
 * - Permissions: READ, WRITE, READ_ACP, WRITE_ACP; FULL_CONTROL is all four. The resource's owner may always do
 *   everything (S3: the owner keeps READ_ACP/WRITE_ACP whatever the ACL says; Granary extends it to every
 *   permission, as the Kodo door lets an owner do anything to its buckets).
 * - Canned ACLs: private (owner FULL_CONTROL), public-read (+ AllUsers READ), public-read-write (+ AllUsers READ
 *   and WRITE), authenticated-read (+ AuthenticatedUsers READ), bucket-owner-read (object: + the bucket owner
 *   READ), bucket-owner-full-control (object: + the bucket owner FULL_CONTROL); on a bucket the last two are
 *   private. (aws-exec-read and log-delivery-write name AWS services Granary has none of: refused by the caller.)
 */
import type { S3Grant, S3Permission } from '../ports/meta.js';

/** The canned ACLs (the `x-amz-acl` values) this server applies. */
export const CANNED_ACLS = ['private', 'public-read', 'public-read-write', 'authenticated-read', 'bucket-owner-read', 'bucket-owner-full-control'] as const;
export type CannedAcl = (typeof CANNED_ACLS)[number];

/** Group URIs of S3's predefined groups. */
export const ALL_USERS_URI = 'http://acs.amazonaws.com/groups/global/AllUsers';
export const AUTHENTICATED_USERS_URI = 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers';

/** An ACL: its resource's owner (canonical id) and grants. */
export interface Acl {
  owner: string;
  grants: S3Grant[];
}

/** Who asks: an unsigned request, or a signed one by the account with canonical id `id`. */
export type Requester = { kind: 'anonymous' } | { kind: 'user'; id: string };

/** A permission asked for (FULL_CONTROL is never asked: it is the four). */
export type AskedPermission = Exclude<S3Permission, 'FULL_CONTROL'>;

/** Whether `s` is a canned ACL name this server applies. */
export function isCannedAcl(s: string): s is CannedAcl {
  return (CANNED_ACLS as readonly string[]).includes(s);
}

const user = (id: string, permission: S3Permission): S3Grant => ({ grantee: { type: 'CanonicalUser', id }, permission });
const group = (uri: string, permission: S3Permission): S3Grant => ({ grantee: { type: 'Group', uri }, permission });

/**
 * The grants of a canned ACL on a resource owned by `owner`; `bucketOwner` for an object's bucket-owner-* ACLs
 * (undefined on a bucket: they grant nothing more there).
 */
export function cannedGrants(canned: CannedAcl, owner: string, bucketOwner?: string): S3Grant[] {
  const out = [user(owner, 'FULL_CONTROL')];
  switch (canned) {
    case 'public-read':
      out.push(group(ALL_USERS_URI, 'READ'));
      break;
    case 'public-read-write':
      out.push(group(ALL_USERS_URI, 'READ'), group(ALL_USERS_URI, 'WRITE'));
      break;
    case 'authenticated-read':
      out.push(group(AUTHENTICATED_USERS_URI, 'READ'));
      break;
    case 'bucket-owner-read':
      if (bucketOwner !== undefined && bucketOwner !== owner) out.push(user(bucketOwner, 'READ'));
      break;
    case 'bucket-owner-full-control':
      if (bucketOwner !== undefined && bucketOwner !== owner) out.push(user(bucketOwner, 'FULL_CONTROL'));
      break;
    case 'private':
      break;
  }
  return out;
}

/** Whether a grant's grantee covers the requester. */
function covers(g: S3Grant, who: Requester): boolean {
  if (g.grantee.type === 'Group') {
    if (g.grantee.uri === ALL_USERS_URI) return true;
    return g.grantee.uri === AUTHENTICATED_USERS_URI && who.kind === 'user';
  }
  return who.kind === 'user' && g.grantee.id === who.id;
}

/** Whether the ACL lets the requester have `need` (the owner always may). */
export function aclAllows(acl: Acl, who: Requester, need: AskedPermission): boolean {
  if (who.kind === 'user' && who.id === acl.owner) return true;
  return acl.grants.some((g) => (g.permission === need || g.permission === 'FULL_CONTROL') && covers(g, who));
}

/** Whether the grants give anyone (AllUsers) READ: a Kodo public bucket. */
export function publicRead(grants: readonly S3Grant[]): boolean {
  return grants.some((g) => g.grantee.type === 'Group' && g.grantee.uri === ALL_USERS_URI && (g.permission === 'READ' || g.permission === 'FULL_CONTROL'));
}

/**
 * A bucket's grants kept in step with Kodo's private flag (the Kodo API may have switched it since): AllUsers READ
 * added when the bucket is public and the grants lack it; when the bucket is private but the grants say public
 * (the Kodo API closed it), every AllUsers grant is dropped — WRITE too: closing a bucket closes it. `stored`
 * undefined (never set through S3): the canned private or public-read grants.
 */
export function bucketGrants(stored: readonly S3Grant[] | undefined, owner: string, isPrivate: boolean): S3Grant[] {
  const grants = stored ? [...stored] : cannedGrants('private', owner);
  if (isPrivate) return publicRead(grants) ? grants.filter((g) => !(g.grantee.type === 'Group' && g.grantee.uri === ALL_USERS_URI)) : grants;
  return publicRead(grants) ? grants : [...grants, group(ALL_USERS_URI, 'READ')];
}
