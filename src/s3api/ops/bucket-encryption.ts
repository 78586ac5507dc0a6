/**
 * PutBucketEncryption, GetBucketEncryption, DeleteBucketEncryption (`PUT|GET|DELETE /<bucket>?encryption`; AWS
 * API_PutBucketEncryption): the bucket's default encryption (buckets/encryption.ts), which new objects get —
 * through the S3 API and the Kodo API — when an upload asks for none. Body:
 * `<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>
 * </ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>` (BucketKeyEnabled accepted,
 * answered false). `aws:kms` / `aws:kms:dsse` → NotImplemented (501, no KMS); another algorithm or a body without
 * exactly one rule → MalformedXML (400); no master key configured → NotImplemented. Get without a default →
 * ServerSideEncryptionConfigurationNotFoundError (404). Delete answers 204.
 */
import type { Granary } from '../../context.js';
import { setBucketEncryption } from '../../buckets/encryption.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { checkEncryptionConfigured } from '../sse.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, type XmlNode, xmlDocument } from '../xml.js';

/** A child element as an object, or MalformedXML. */
function child(node: XmlNode | XmlNode[] | undefined): { [name: string]: XmlNode | XmlNode[] | undefined } {
  if (node === undefined || typeof node === 'string' || Array.isArray(node)) throw S3Errors.MalformedXML();
  return node;
}

export async function putBucketEncryption(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const doc = parseXml(await readXmlBody(req.body()));
  const rules = child(doc.ServerSideEncryptionConfiguration).Rule;
  if (!Array.isArray(rules) || rules.length !== 1) throw S3Errors.MalformedXML();
  const apply = child(child(rules[0]).ApplyServerSideEncryptionByDefault);
  const algorithm = typeof apply.SSEAlgorithm === 'string' ? apply.SSEAlgorithm.trim() : undefined;
  if (algorithm === 'aws:kms' || algorithm === 'aws:kms:dsse') throw S3Errors.NotImplemented('Server-side encryption with KMS keys (SSE-KMS) is not supported: use AES256');
  if (algorithm !== 'AES256') throw S3Errors.MalformedXML();
  checkEncryptionConfigured(g);
  await setBucketEncryption(g, bucket.name, 'AES256');
  return { status: 200 };
}

export async function getBucketEncryption(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  if (!bucket.settings.encryption) throw S3Errors.ServerSideEncryptionConfigurationNotFoundError();
  const rule = `<ApplyServerSideEncryptionByDefault>${el('SSEAlgorithm', bucket.settings.encryption)}</ApplyServerSideEncryptionByDefault>`;
  return xmlResponse(xmlDocument('ServerSideEncryptionConfiguration', `<Rule>${rule}${el('BucketKeyEnabled', false)}</Rule>`));
}

export async function deleteBucketEncryption(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setBucketEncryption(g, bucket.name, undefined);
  return { status: 204 };
}
