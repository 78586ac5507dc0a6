/**
 * CreateBucket (`PUT /<bucket>`), through the Kodo bucket function (buckets/buckets.ts): the same name rules, owner
 * (the caller's AccessKey) and region. An optional `<CreateBucketConfiguration><LocationConstraint>` must name this
 * server's region (region.ts; InvalidLocationConstraint otherwise); an existing bucket → BucketAlreadyOwnedByYou (the
 * caller's) or BucketAlreadyExists (409); a bad name → InvalidBucketName (400). The bucket's ACL is `x-amz-acl` or
 * the `x-amz-grant-*` headers (bucket-acl.ts; default private, S3's): it is a Kodo public bucket when they give
 * AllUsers READ (public-read, public-read-write), private otherwise. `x-amz-object-ownership` sets its Object
 * Ownership (bucket-ownership.ts; an unknown value → InvalidArgument); BucketOwnerEnforced with an ACL other than
 * private / bucket-owner-full-control → InvalidBucketAclWithObjectOwnership (400). Checked before anything is made.
 * `x-amz-bucket-object-lock-enabled: true` enables S3 Object Lock (buckets/object-lock.ts): versioning Enabled for
 * good; NotImplemented on PostgreSQL.
 */
import { createBucket as createKodoBucket, setBucketPrivate } from '../../buckets/buckets.js';
import { enableObjectLock } from '../../buckets/object-lock.js';
import type { Granary } from '../../context.js';
import { bucketName, signedCaller } from '../access.js';
import { cannedGrants, publicRead } from '../acl.js';
import { headerGrants } from '../acl-request.js';
import { headerOf } from '../headers.js';
import { knownIdOf } from './bucket-acl.js';
import { isOwnership } from './bucket-ownership.js';
import { S3Errors } from '../errors.js';
import { acceptsLocation, s3RegionOf } from '../region.js';
import type { S3Request, S3Response } from '../types.js';
import { parseXml, readXmlBody, textOf, type XmlNode } from '../xml.js';

/** The LocationConstraint of a CreateBucket body ('' when there is no body or no constraint); MalformedXML. */
async function locationOf(req: S3Request): Promise<string> {
  const text = await readXmlBody(req.body());
  if (text.trim() === '') return '';
  const conf = parseXml(text).CreateBucketConfiguration;
  if (conf === undefined || Array.isArray(conf)) throw S3Errors.MalformedXML();
  if (typeof conf === 'string') return '';
  return textOf((conf as Record<string, XmlNode>).LocationConstraint) ?? '';
}

/**
 * Whether the request asks for object lock (`x-amz-bucket-object-lock-enabled: true`; docs/reference/versioning.md):
 * NotImplemented on a metadata store that keeps no versions (PostgreSQL today), before anything is created.
 */
function objectLockAsked(g: Granary, req: S3Request): boolean {
  const asked = headerOf(req, 'x-amz-bucket-object-lock-enabled')?.trim().toLowerCase() === 'true';
  if (asked && !g.meta.keepsVersions) throw S3Errors.NotImplemented('Object Lock needs the embedded (SQLite) metadata store.');
  return asked;
}

export async function createBucket(g: Granary, req: S3Request): Promise<S3Response> {
  const ak = signedCaller(req);
  const name = bucketName(req);
  const location = await locationOf(req);
  if (!acceptsLocation(g.config.region, location)) {
    throw S3Errors.InvalidLocationConstraint(`The specified location-constraint is not valid: this server's region is ${s3RegionOf(g.config.region)}`);
  }
  const asked = headerGrants(req, ak, knownIdOf(g));
  const ownership = headerOf(req, 'x-amz-object-ownership');
  if (ownership !== undefined && !isOwnership(ownership)) throw S3Errors.InvalidArgument(`Invalid x-amz-object-ownership header: ${ownership}`);
  const grants = asked?.grants ?? cannedGrants('private', ak);
  if (ownership === 'BucketOwnerEnforced' && grants.some((gr) => !(gr.grantee.type === 'CanonicalUser' && gr.grantee.id === ak && gr.permission === 'FULL_CONTROL'))) {
    throw S3Errors.InvalidBucketAclWithObjectOwnership();
  }
  const objectLock = objectLockAsked(g, req);
  await createKodoBucket(g, name, ak);
  if (objectLock && (await enableObjectLock(g, name)) === 'no-bucket') throw S3Errors.NoSuchBucket();
  if (asked || ownership !== undefined) {
    await g.meta.updateBucketSettings(name, (cur) => ({ ...cur, ...(asked ? { acl: grants } : {}), ...(ownership !== undefined ? { ownership } : {}) }));
  }
  if (!publicRead(grants)) await setBucketPrivate(g, name, true);
  return { status: 200, headers: { location: `/${name}` } };
}
