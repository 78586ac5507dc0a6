/**
 * ListObjectsV2 (`GET /<bucket>?list-type=2`): prefix, delimiter, max-keys (≤ 1000), start-after,
 * continuation-token (opaque: URL-safe base64 of the key or common prefix the previous page ended with; a token
 * that does not decode → InvalidArgument), fetch-owner, encoding-type=url. `KeyCount` counts items and common
 * prefixes, as S3 does.
 */
import type { Granary } from '../../context.js';
import { nowSeconds } from '../../ports/clock.js';
import { accessBucket } from '../access.js';
import { S3Errors } from '../errors.js';
import { encodeName, entryFields, lastName, listPage, listParams, ownerXml, positionAfter, prefixesXml } from '../listing.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';

const TOKEN_PREFIX = 'g1:';

/** The continuation token resuming after `name`. */
export function encodeToken(name: string): string {
  return Buffer.from(TOKEN_PREFIX + name, 'utf8').toString('base64url');
}

/** The name a continuation token resumes after; InvalidArgument when it is not one of ours. */
export function decodeToken(token: string): string {
  const text = /^[A-Za-z0-9_-]*$/.test(token) ? Buffer.from(token, 'base64url').toString('utf8') : '';
  if (!text.startsWith(TOKEN_PREFIX)) throw S3Errors.InvalidArgument('The continuation token provided is incorrect');
  return text.slice(TOKEN_PREFIX.length);
}

export async function listObjectsV2(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req, 'READ');
  const p = listParams(req);
  const token = req.query.get('continuation-token');
  const startAfter = req.query.get('start-after') ?? '';
  const resume = token !== null && token !== '' ? decodeToken(token) : startAfter;
  const page = await listPage(g, bucket, p, resume === '' ? undefined : positionAfter(resume, p));
  const nowSec = nowSeconds(g.clock);
  const owner = req.query.get('fetch-owner') === 'true' ? ownerXml(bucket) : undefined;
  const contents = page.entries
    .map((e) => (e.kind === 'item' ? `<Contents>${entryFields(e.item, p, nowSec, owner)}</Contents>` : ''))
    .join('');
  const next = page.more ? lastName(page) : undefined;
  const inner =
    el('Name', bucket.name) +
    el('Prefix', encodeName(p.prefix, p)) +
    (p.delimiter !== '' ? el('Delimiter', encodeName(p.delimiter, p)) : '') +
    el('MaxKeys', p.maxKeys) +
    el('KeyCount', page.entries.length) +
    el('IsTruncated', page.more) +
    (p.encodeUrl ? el('EncodingType', 'url') : '') +
    (token !== null ? el('ContinuationToken', token) : '') +
    (next !== undefined ? el('NextContinuationToken', encodeToken(next)) : '') +
    (startAfter !== '' ? el('StartAfter', encodeName(startAfter, p)) : '') +
    contents +
    prefixesXml(page, p);
  return xmlResponse(xmlDocument('ListBucketResult', inner));
}
