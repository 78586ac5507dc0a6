/**
 * ListObjects v1 (`GET /<bucket>`): prefix, delimiter, marker (a key or a common prefix: listing resumes after
 * it), max-keys (≤ 1000), encoding-type=url. `NextMarker` (the last key or common prefix of a truncated page) is
 * answered whenever the page is truncated. Every `<Contents>` carries `<Owner>` (the bucket owner's AccessKey).
 */
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import { accessBucket } from '../access.js';
import { encodeName, entryFields, lastName, listPage, listParams, ownerXml, positionAfter, prefixesXml } from '../listing.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';

export async function listObjects(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req, 'READ');
  const p = listParams(req);
  const marker = req.query.get('marker') ?? '';
  const page = await listPage(g, bucket, p, marker === '' ? undefined : positionAfter(marker, p));
  const nowSec = nowSeconds(g.clock);
  const owner = ownerXml(bucket);
  const contents = page.entries
    .map((e) => (e.kind === 'item' ? `<Contents>${entryFields(e.item, p, nowSec, owner)}</Contents>` : ''))
    .join('');
  const next = page.more ? lastName(page) : undefined;
  const inner =
    el('Name', bucket.name) +
    el('Prefix', encodeName(p.prefix, p)) +
    el('Marker', encodeName(marker, p)) +
    (next !== undefined ? el('NextMarker', encodeName(next, p)) : '') +
    el('MaxKeys', p.maxKeys) +
    (p.delimiter !== '' ? el('Delimiter', encodeName(p.delimiter, p)) : '') +
    el('IsTruncated', page.more) +
    (p.encodeUrl ? el('EncodingType', 'url') : '') +
    contents +
    prefixesXml(page, p);
  return xmlResponse(xmlDocument('ListBucketResult', inner));
}
