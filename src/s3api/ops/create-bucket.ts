/**
 * CreateBucket (`PUT /<bucket>`), through the Kodo bucket function (buckets/buckets.ts): the same name rules, owner
 * (the caller's AccessKey) and region. An optional `<CreateBucketConfiguration><LocationConstraint>` must name this
 * server's region (region.ts; InvalidLocationConstraint otherwise); an existing bucket → BucketAlreadyOwnedByYou (the
 * caller's) or BucketAlreadyExists (409); a bad name → InvalidBucketName (400). The bucket is private (S3's default:
 * objects need a signature; Kodo's private bucket) unless `x-amz-acl` is `public-read` or `public-read-write`
 * (Kodo's public bucket: anyone may read its objects).
 */
import { createBucket as createKodoBucket, setBucketPrivate } from '../../buckets/buckets.js';
import type { Granary } from '../../context.js';
import { bucketName, signedCaller } from '../access.js';
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

export async function createBucket(g: Granary, req: S3Request): Promise<S3Response> {
  const ak = signedCaller(req);
  const name = bucketName(req);
  const location = await locationOf(req);
  if (!acceptsLocation(g.config.region, location)) {
    throw S3Errors.InvalidLocationConstraint(`The specified location-constraint is not valid: this server's region is ${s3RegionOf(g.config.region)}`);
  }
  await createKodoBucket(g, name, ak);
  const acl = req.headers['x-amz-acl'];
  if (acl !== 'public-read' && acl !== 'public-read-write') await setBucketPrivate(g, name, true);
  return { status: 200, headers: { location: `/${name}` } };
}
