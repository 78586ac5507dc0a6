/**
 * ListObjectVersions (`GET /<bucket>?versions`): Granary keeps one version per key (no versioning), so each live
 * entry is answered as its only version: VersionId `null`, IsLatest true. key-marker resumes after a key or common
 * prefix; a version-id-marker is accepted and ignored (every version is `null`).
 */
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import { accessBucket } from '../access.js';
import { encodeName, entryFields, lastName, listPage, listParams, ownerXml, positionAfter, prefixesXml } from '../listing.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';

export async function listObjectVersions(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req);
  const p = listParams(req);
  const marker = req.query.get('key-marker') ?? '';
  const page = await listPage(g, bucket, p, marker === '' ? undefined : positionAfter(marker, p));
  const nowSec = nowSeconds(g.clock);
  const owner = ownerXml(bucket);
  const versions = page.entries
    .map((e) => {
      if (e.kind !== 'item') return '';
      const f = entryFields(e.item, p, nowSec, owner);
      // VersionId and IsLatest follow Key in S3's order.
      const keyEnd = f.indexOf('</Key>') + '</Key>'.length;
      return `<Version>${f.slice(0, keyEnd)}${el('VersionId', 'null')}${el('IsLatest', true)}${f.slice(keyEnd)}</Version>`;
    })
    .join('');
  const next = page.more ? lastName(page) : undefined;
  const inner =
    el('Name', bucket.name) +
    el('Prefix', encodeName(p.prefix, p)) +
    el('KeyMarker', encodeName(marker, p)) +
    el('VersionIdMarker', req.query.get('version-id-marker') ?? '') +
    (next !== undefined ? el('NextKeyMarker', encodeName(next, p)) + el('NextVersionIdMarker', 'null') : '') +
    el('MaxKeys', p.maxKeys) +
    (p.delimiter !== '' ? el('Delimiter', encodeName(p.delimiter, p)) : '') +
    el('IsTruncated', page.more) +
    (p.encodeUrl ? el('EncodingType', 'url') : '') +
    versions +
    prefixesXml(page, p);
  return xmlResponse(xmlDocument('ListVersionsResult', inner));
}
