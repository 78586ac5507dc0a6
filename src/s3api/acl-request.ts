/**
 * S3 ACLs on the wire (AWS PutBucketAcl / PutObjectAcl / GetBucketAcl API reference): the grants a request asks
 * for — `x-amz-acl` (canned, acl.ts), `x-amz-grant-read|write|read-acp|write-acp|full-control` headers, or an
 * `<AccessControlPolicy>` body — and the `<AccessControlPolicy>` answer; the object ACL kept in an entry's reserved
 * metadata `@s3-acl` (JSON `{owner, grants}`, travelling with the entry like its tags).
 *
 * Errors, as AWS answers them: both `x-amz-acl` and grant headers → InvalidRequest; an unknown canned ACL or a
 * malformed grant header (`id="…"`, `uri="…"`, `emailAddress="…"`, comma-separated) → InvalidArgument; a canonical
 * id no account has → InvalidArgument; a group other than AllUsers/AuthenticatedUsers → InvalidArgument; a grant by
 * `emailAddress` (or an `AmazonCustomerByEmail` grantee) → UnresolvableGrantByEmailAddress (400: Granary has no
 * e-mail addresses, as S3 answers outside the regions that support them); a body not an AccessControlPolicy, a
 * grant without grantee or with an unknown permission → MalformedACLError; a body whose Owner is not the
 * resource's owner → AccessDenied.
 */
import type { S3Grant, S3Permission } from '../ports/meta.js';
import { ALL_USERS_URI, AUTHENTICATED_USERS_URI, cannedGrants, isCannedAcl, type Acl } from './acl.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import type { S3Request } from './types.js';
import { el, parseXml, textOf, xmlDocument, type XmlNode } from './xml.js';

/** Reserved metadata name of an object's ACL. */
export const ACL_META = '@s3-acl';

const GRANT_HEADERS: ReadonlyArray<readonly [string, S3Permission]> = [
  ['x-amz-grant-read', 'READ'],
  ['x-amz-grant-write', 'WRITE'],
  ['x-amz-grant-read-acp', 'READ_ACP'],
  ['x-amz-grant-write-acp', 'WRITE_ACP'],
  ['x-amz-grant-full-control', 'FULL_CONTROL'],
];
const PERMISSIONS: readonly S3Permission[] = ['READ', 'WRITE', 'READ_ACP', 'WRITE_ACP', 'FULL_CONTROL'];
const GROUPS = [ALL_USERS_URI, AUTHENTICATED_USERS_URI];
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

/** Whether a canonical id names an account (the root or an account's AccessKey). */
export type KnownId = (id: string) => boolean;

/** The grants a request's headers ask for, undefined when it has neither `x-amz-acl` nor grant headers. */
export function headerGrants(req: S3Request, owner: string, known: KnownId, bucketOwner?: string): { grants: S3Grant[]; canned?: string } | undefined {
  const canned = headerOf(req, 'x-amz-acl');
  const given = GRANT_HEADERS.filter(([h]) => headerOf(req, h) !== undefined);
  if (canned !== undefined && given.length > 0) throw S3Errors.InvalidRequest('Specifying both Canned ACLs and Header Grants is not allowed');
  if (canned !== undefined) {
    const c = canned.trim();
    if (c === 'aws-exec-read' || c === 'log-delivery-write') throw S3Errors.NotImplemented(`the canned ACL ${c} names an AWS service this server does not have`);
    if (!isCannedAcl(c)) throw S3Errors.InvalidArgument(`unknown canned ACL ${JSON.stringify(c)}`);
    return { grants: cannedGrants(c, owner, bucketOwner), canned: c };
  }
  if (given.length === 0) return undefined;
  const grants: S3Grant[] = [];
  for (const [h, permission] of given) {
    for (const part of (headerOf(req, h) ?? '').split(',')) {
      if (part.trim() === '') continue;
      const m = /^\s*(id|uri|emailAddress)\s*=\s*"?([^"]*)"?\s*$/i.exec(part);
      if (!m) throw S3Errors.InvalidArgument(`malformed ${h} header`);
      grants.push({ grantee: grantee((m[1] as string).toLowerCase(), (m[2] as string).trim(), known), permission });
    }
  }
  return { grants };
}

/** A grantee of a grant header or body. */
function grantee(kind: string, value: string, known: KnownId): S3Grant['grantee'] {
  if (kind === 'emailaddress') throw S3Errors.UnresolvableGrantByEmailAddress();
  if (kind === 'uri') {
    if (!GROUPS.includes(value)) throw S3Errors.InvalidArgument(`unsupported group ${JSON.stringify(value)}: AllUsers and AuthenticatedUsers only`);
    return { type: 'Group', uri: value };
  }
  if (!known(value)) throw S3Errors.InvalidArgument('Invalid id');
  return { type: 'CanonicalUser', id: value };
}

/** The grants of an `<AccessControlPolicy>` body for a resource owned by `owner`. */
export function bodyGrants(text: string, owner: string, known: KnownId): S3Grant[] {
  let doc: Record<string, XmlNode>;
  try {
    doc = parseXml(text);
  } catch {
    throw S3Errors.MalformedACLError();
  }
  const policy = doc.AccessControlPolicy;
  if (policy === undefined || typeof policy === 'string') throw S3Errors.MalformedACLError();
  const ownerNode = policy.Owner;
  if (ownerNode !== undefined && !Array.isArray(ownerNode) && typeof ownerNode !== 'string') {
    const id = textOf(ownerNode.ID);
    if (id !== undefined && id !== owner) throw S3Errors.AccessDenied('the Owner of an ACL cannot be changed');
  }
  const listNode = policy.AccessControlList;
  if (listNode === undefined) throw S3Errors.MalformedACLError();
  if (listNode === '') return [];
  if (typeof listNode === 'string' || Array.isArray(listNode)) throw S3Errors.MalformedACLError();
  const raw = listNode.Grant;
  const nodes = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  return nodes.map((n) => {
    if (typeof n === 'string') throw S3Errors.MalformedACLError();
    const permission = textOf(n.Permission)?.trim() as S3Permission;
    if (!PERMISSIONS.includes(permission)) throw S3Errors.MalformedACLError();
    const g = n.Grantee;
    if (g === undefined || typeof g === 'string' || Array.isArray(g)) throw S3Errors.MalformedACLError();
    if (g.EmailAddress !== undefined) throw S3Errors.UnresolvableGrantByEmailAddress();
    const id = textOf(g.ID);
    const uri = textOf(g.URI);
    if (id !== undefined) return { grantee: grantee('id', id.trim(), known), permission };
    if (uri !== undefined) return { grantee: grantee('uri', uri.trim(), known), permission };
    throw S3Errors.MalformedACLError();
  });
}

/** An ACL as an `<AccessControlPolicy>` document (DisplayName = the canonical id, Granary's accounts have no other). */
export function aclXml(acl: Acl): string {
  const owner = el('ID', acl.owner) + el('DisplayName', acl.owner);
  const grants = acl.grants
    .map((g) =>
      g.grantee.type === 'CanonicalUser'
        ? `<Grant><Grantee xmlns:xsi="${XSI}" xsi:type="CanonicalUser">${el('ID', g.grantee.id)}${el('DisplayName', g.grantee.id)}</Grantee>${el('Permission', g.permission)}</Grant>`
        : `<Grant><Grantee xmlns:xsi="${XSI}" xsi:type="Group">${el('URI', g.grantee.uri)}</Grantee>${el('Permission', g.permission)}</Grant>`,
    )
    .join('');
  return xmlDocument('AccessControlPolicy', `<Owner>${owner}</Owner><AccessControlList>${grants}</AccessControlList>`);
}

/** The object ACL kept in an entry's metadata, or undefined when none was set. */
export function objectAclOf(meta: Record<string, string>): Acl | undefined {
  const v = meta[ACL_META];
  if (!v) return undefined;
  try {
    return JSON.parse(v) as Acl;
  } catch {
    return undefined;
  }
}

/** The stored form of an object ACL. */
export function encodeObjectAcl(acl: Acl): string {
  return JSON.stringify(acl);
}
