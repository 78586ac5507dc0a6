/**
 * GetBucketVersioning and PutBucketVersioning (`GET|PUT /<bucket>?versioning`, docs/reference/versioning.md;
 * AWS API reference PutBucketVersioning / GetBucketVersioning).
 *
 * - Get: `<VersioningConfiguration/>` for a bucket never versioned, else `<Status>Enabled|Suspended</Status>`.
 * - Put: `<VersioningConfiguration><Status>Enabled|Suspended</Status>[<MfaDelete>Disabled</MfaDelete>]`: a bucket
 *   never returns to unversioned. A body that is not such a document, or another Status, is MalformedXML; a
 *   document without Status changes nothing. `MfaDelete` Enabled is refused (NotImplemented: no MFA devices here).
 *   Both metadata stores keep versions (SQLite, PostgreSQL); a store that kept none would answer NotImplemented.
 *   Suspended on a bucket with object lock is InvalidBucketState (409), as AWS answers.
 */
import { setBucketVersioning } from '../../buckets/versioning.js';
import type { Granary } from '../../context.js';
import type { VersioningState } from '../../ports/versions.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlDocument, type XmlNode } from '../xml.js';

export async function getBucketVersioning(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const state = bucket.settings.versioning;
  return xmlResponse(xmlDocument('VersioningConfiguration', state ? el('Status', state) : ''));
}

/** The Status and MfaDelete of a VersioningConfiguration document; MalformedXML when it is not one. */
export function parseVersioning(text: string): { status?: VersioningState; mfaDelete?: string } {
  const root = parseXml(text).VersioningConfiguration;
  if (root === undefined || Array.isArray(root)) throw S3Errors.MalformedXML();
  if (typeof root === 'string') {
    if (root.trim() !== '') throw S3Errors.MalformedXML();
    return {};
  }
  const doc = root as Record<string, XmlNode | XmlNode[]>;
  const status = doc.Status === undefined ? undefined : textOf(doc.Status as XmlNode)?.trim();
  if (status !== undefined && status !== 'Enabled' && status !== 'Suspended') throw S3Errors.MalformedXML();
  const mfa = doc.MfaDelete === undefined ? undefined : textOf(doc.MfaDelete as XmlNode)?.trim();
  if (doc.MfaDelete !== undefined && mfa !== 'Enabled' && mfa !== 'Disabled') throw S3Errors.MalformedXML();
  return { ...(status ? { status } : {}), ...(mfa ? { mfaDelete: mfa } : {}) };
}

export async function putBucketVersioning(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const { status, mfaDelete } = parseVersioning(await readXmlBody(req.body()));
  if (mfaDelete === 'Enabled') throw S3Errors.NotImplemented('MFA Delete is not supported.');
  if (status === undefined) return { status: 200 };
  const out = await setBucketVersioning(g, bucket.name, status);
  if (out === 'unsupported') throw S3Errors.NotImplemented('Bucket versioning is not kept by this metadata store.');
  if (out === 'no-bucket') throw S3Errors.NoSuchBucket();
  if (out === 'object-lock') throw S3Errors.InvalidBucketState('An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.');
  return { status: 200 };
}
