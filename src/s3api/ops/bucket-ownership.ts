/**
 * PutBucketOwnershipControls / GetBucketOwnershipControls / DeleteBucketOwnershipControls
 * (`PUT|GET|DELETE /<bucket>?ownershipControls`, AWS API reference): the bucket's S3 Object Ownership, kept in its
 * settings (`ownership`). `BucketOwnerEnforced` turns ACLs off (bucket-acl.ts `checkAclsEnabled`: any ACL but
 * bucket-owner-full-control → AccessControlListNotSupported; objects' own ACLs are ignored);
 * `BucketOwnerPreferred` and `ObjectWriter` are kept and answered (every object of a bucket is its owner's in
 * Granary, so they change nothing else). Owner only.
 * Body `<OwnershipControls><Rule><ObjectOwnership>…</ObjectOwnership></Rule></OwnershipControls>`: exactly one rule
 * with one of the three values, else MalformedXML (400). Get with none set → OwnershipControlsNotFoundError (404);
 * Delete → 204.
 */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import type { BucketSettings } from '../../ports/meta.js';
import { accessBucket } from '../access.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlDocument } from '../xml.js';

const VALUES = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'] as const;
type Ownership = NonNullable<BucketSettings['ownership']>;

/** Whether `v` is an Object Ownership value. */
export function isOwnership(v: string | undefined): v is Ownership {
  return (VALUES as readonly string[]).includes(v ?? '');
}

async function setOwnership(g: Granary, bucket: string, value: Ownership | undefined): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (value === undefined) delete next.ownership;
    else next.ownership = value;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

export async function getBucketOwnershipControls(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req);
  const v = bucket.settings.ownership;
  if (v === undefined) throw S3Errors.OwnershipControlsNotFoundError();
  return xmlResponse(xmlDocument('OwnershipControls', `<Rule>${el('ObjectOwnership', v)}</Rule>`));
}

export async function putBucketOwnershipControls(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req);
  const doc = parseXml(await readXmlBody(req.body()));
  const root = doc.OwnershipControls;
  if (root === undefined || typeof root === 'string') throw S3Errors.MalformedXML();
  const rules = root.Rule === undefined ? [] : Array.isArray(root.Rule) ? root.Rule : [root.Rule];
  const rule = rules[0];
  if (rules.length !== 1 || rule === undefined || typeof rule === 'string') throw S3Errors.MalformedXML();
  const value = textOf(rule.ObjectOwnership)?.trim();
  if (!isOwnership(value)) throw S3Errors.MalformedXML();
  await setOwnership(g, bucket.name, value);
  return { status: 200 };
}

export async function deleteBucketOwnershipControls(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req);
  await setOwnership(g, bucket.name, undefined);
  return { status: 204 };
}
