/**
 * S3 Block Public Access of a bucket, the pure part (AWS API_PublicAccessBlockConfiguration and "Blocking public
 * access to your Amazon S3 storage", "The meaning of public"): the four settings, their XML, and the rules the
 * ACL and policy code applies. No I/O. Kept in the bucket's settings (`publicAccessBlock`, ports/meta.ts).
 *
 * - BlockPublicAcls: PutBucketAcl / PutObjectAcl with a public ACL, and uploads (PutObject, CopyObject,
 *   CreateMultipartUpload, POST) whose `x-amz-acl` / `x-amz-grant-*` / `acl` field is public → AccessDenied (403),
 *   before any byte is stored. Existing ACLs are kept.
 * - IgnorePublicAcls: public grants of the bucket's and its objects' ACLs (and the Kodo public flag, which is the
 *   bucket's AllUsers READ) give nothing on the S3 door; they are kept and still listed by Get…Acl.
 * - BlockPublicPolicy: PutBucketPolicy with a public policy (bucket-policy-doc.ts `policyIsPublic`) → AccessDenied.
 * - RestrictPublicBuckets: while the bucket's policy is public, its Allows grant only principals of the bucket
 *   owner's account (its keys and sub-users): anonymous callers and other accounts get nothing from it.
 *
 * "Public ACL" (AWS): a grant of any permission to the AllUsers or AuthenticatedUsers group.
 */
import type { PublicAccessBlockSettings, S3Grant } from '../ports/meta.js';
import { ALL_USERS_URI, AUTHENTICATED_USERS_URI, type Acl } from './acl.js';
import { S3Errors } from './errors.js';
import { el, parseXml, textOf, xmlDocument, type XmlNode } from './xml.js';

/** The four settings (absent in a PutPublicAccessBlock body = false). */
export type PublicAccessBlock = PublicAccessBlockSettings;

/** XML element name of each setting. */
const ELEMENTS: ReadonlyArray<readonly [keyof PublicAccessBlock, string]> = [
  ['blockPublicAcls', 'BlockPublicAcls'],
  ['ignorePublicAcls', 'IgnorePublicAcls'],
  ['blockPublicPolicy', 'BlockPublicPolicy'],
  ['restrictPublicBuckets', 'RestrictPublicBuckets'],
];

/**
 * Parses a `<PublicAccessBlockConfiguration>` body (S3's namespace or none). Absent elements are false; a value
 * other than true/false (any case, surrounding blanks ignored), another root or unknown children → MalformedXML.
 */
export function parsePublicAccessBlock(text: string): PublicAccessBlock {
  const doc = parseXml(text);
  const root = doc.PublicAccessBlockConfiguration;
  if (root === undefined || Array.isArray(root)) throw S3Errors.MalformedXML();
  const node: Record<string, XmlNode | XmlNode[] | undefined> = typeof root === 'string' ? {} : root;
  const known = new Set(ELEMENTS.map(([, name]) => name));
  if (Object.keys(node).some((k) => !known.has(k) && !k.startsWith('@') && k !== '#text')) throw S3Errors.MalformedXML();
  const out: PublicAccessBlock = { blockPublicAcls: false, ignorePublicAcls: false, blockPublicPolicy: false, restrictPublicBuckets: false };
  for (const [field, name] of ELEMENTS) {
    if (node[name] === undefined) continue;
    const v = textOf(node[name])?.trim().toLowerCase();
    if (v !== 'true' && v !== 'false') throw S3Errors.MalformedXML();
    out[field] = v === 'true';
  }
  return out;
}

/** The GetPublicAccessBlock answer: every setting, true or false. */
export function publicAccessBlockXml(p: PublicAccessBlock): string {
  return xmlDocument('PublicAccessBlockConfiguration', ELEMENTS.map(([field, name]) => el(name, p[field])).join(''));
}

/** Whether a grant is public: to the AllUsers or AuthenticatedUsers group. */
export function isPublicGrant(g: S3Grant): boolean {
  return g.grantee.type === 'Group' && (g.grantee.uri === ALL_USERS_URI || g.grantee.uri === AUTHENTICATED_USERS_URI);
}

/** AccessDenied when the bucket blocks public ACLs and `grants` hold a public one (BlockPublicAcls). */
export function refusePublicAcl(pab: PublicAccessBlock | undefined, grants: readonly S3Grant[]): void {
  if (pab?.blockPublicAcls && grants.some(isPublicGrant)) {
    throw S3Errors.AccessDenied('the bucket blocks public ACLs (BlockPublicAcls of its public access block)');
  }
}

/** AccessDenied when the bucket blocks public policies and the policy is public (BlockPublicPolicy). */
export function refusePublicPolicy(pab: PublicAccessBlock | undefined, isPublic: boolean): void {
  if (pab?.blockPublicPolicy && isPublic) {
    throw S3Errors.AccessDenied('the bucket blocks public policies (BlockPublicPolicy of its public access block)');
  }
}

/** The ACL as it decides access: without its public grants when the bucket ignores them (IgnorePublicAcls). */
export function effectiveAcl(pab: PublicAccessBlock | undefined, acl: Acl): Acl {
  return pab?.ignorePublicAcls ? { owner: acl.owner, grants: acl.grants.filter((g) => !isPublicGrant(g)) } : acl;
}
