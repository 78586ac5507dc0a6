/**
 * DeleteObjects (`POST /<bucket>?delete`): `<Delete><Quiet>?</Quiet><Object><Key>…</Key></Object>…</Delete>`, at
 * most 1,000 keys (MalformedXML beyond, or for a body that is not such a document). Each key is deleted as
 * DeleteObject does (a missing key counts as deleted; a `<VersionId>` deletes that version; in a versioned bucket a
 * key without one gets a delete marker, answered as `<DeleteMarker>` and `<DeleteMarkerVersionId>`); `Content-MD5` or an `x-amz-checksum-*` header, when sent,
 * is checked against the body. The answer lists `<Deleted>` (unless quiet) and `<Error>` entries, in order.
 */
import { createHash } from 'node:crypto';
import type { Granary } from '../../context.js';
import { accessBucket, signedCaller } from '../access.js';
import { authorizeItem } from '../auth-step.js';
import { S3Errors, toS3Error } from '../errors.js';
import { contentMd5Of } from '../headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlDocument, type XmlNode } from '../xml.js';
import { checkedVersionId } from '../versions.js';
import { deleteKey } from './delete-object.js';

/** Most keys of one request. */
export const MAX_DELETE_KEYS = 1000;

/**
 * The keys (each with its VersionId when given) and the quiet flag of a Delete document; MalformedXML when it is not
 * one, InvalidArgument for a malformed version id.
 */
export function parseDelete(text: string): { keys: string[]; versions: Array<string | undefined>; quiet: boolean } {
  const root = parseXml(text).Delete;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const doc = root as Record<string, XmlNode | XmlNode[]>;
  const objects = doc.Object === undefined ? [] : Array.isArray(doc.Object) ? doc.Object : [doc.Object];
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw S3Errors.MalformedXML();
  const versions: Array<string | undefined> = [];
  const keys = objects.map((o) => {
    if (typeof o !== 'object' || Array.isArray(o)) throw S3Errors.MalformedXML();
    const key = textOf((o as Record<string, XmlNode>).Key);
    if (key === undefined || key === '') throw S3Errors.MalformedXML();
    const version = (o as Record<string, XmlNode>).VersionId;
    versions.push(version === undefined ? undefined : (textOf(version) ?? '').trim());
    return key;
  });
  const quiet = (textOf(doc.Quiet as XmlNode | undefined) ?? 'false').trim().toLowerCase() === 'true';
  return { keys, versions, quiet };
}

export async function deleteObjects(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = await accessBucket(g, req);
  const md5 = contentMd5Of(req);
  const text = await readXmlBody(req.body());
  if (md5 !== undefined && createHash('md5').update(text, 'utf8').digest('hex') !== md5) throw S3Errors.BadDigest();
  const { keys, versions, quiet } = parseDelete(text);
  const out: string[] = [];
  for (const [i, key] of keys.entries()) {
    const sent = versions[i];
    const version = sent === undefined ? '' : el('VersionId', sent);
    try {
      // Each key is an item the route table's step could not see (auth-step.ts authorizeItem).
      if (!authorizeItem(g, req, 's3:DeleteObject', key)) throw S3Errors.AccessDenied();
      const done = await deleteKey(g, bucket.name, key, accessKey, req.reqId, checkedVersionId(sent), req.bypassGovernance === true);
      // A version deleted by id echoes it; a delete marker made names the marker (AWS DeleteObjects answer).
      let fields = el('Key', key) + version;
      if (done.deleteMarker) fields += el('DeleteMarker', true);
      if (done.deleteMarker && sent === undefined && done.versionId !== undefined) fields += el('DeleteMarkerVersionId', done.versionId);
      else if (done.deleteMarker && sent !== undefined) fields += el('DeleteMarkerVersionId', sent);
      if (!quiet) out.push(`<Deleted>${fields}</Deleted>`);
    } catch (err) {
      const { error } = toS3Error(err);
      out.push(`<Error>${el('Key', key)}${version}${el('Code', error.code)}${el('Message', error.message)}</Error>`);
    }
  }
  return xmlResponse(xmlDocument('DeleteResult', out.join('')));
}
