/**
 * ListObjectVersions (`GET /<bucket>?versions`; AWS API reference ListObjectVersions, docs/reference/versioning.md):
 * every version and delete marker of the bucket in key order, each key's newest first (MetaStore.listVersions,
 * streamed from the primary keys: a page never loads more than it answers). `prefix`, `delimiter` (common prefixes),
 * `max-keys` (versions, markers and prefixes together, ≤ 1000), `encoding-type=url`; `key-marker` resumes after a key
 * (all its versions) or a common prefix, with `version-id-marker` after that version of the key. A bucket never
 * versioned lists each entry as its one `null` version.
 * Errors: InvalidArgument for a version-id-marker without key-marker, or a malformed one.
 */
import type { Granary } from '../../context.js';
import { wireVersionId, type VersionPage } from '../../ports/versions.js';
import { accessBucket } from '../access.js';
import { S3Errors } from '../errors.js';
import { encodeName, entryFields, listParams, ownerXml, positionAfter } from '../listing.js';
import { modifiedMs } from '../object-headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { checkedVersionId } from '../versions.js';
import { el, isoTime, xmlDocument } from '../xml.js';

export async function listObjectVersions(g: Granary, req: S3Request): Promise<S3Response> {
  const bucket = await accessBucket(g, req);
  const p = listParams(req);
  const marker = req.query.get('key-marker') ?? '';
  const sentVersionMarker = req.query.get('version-id-marker') ?? '';
  if (sentVersionMarker !== '' && marker === '') throw S3Errors.InvalidArgument('A version-id marker cannot be specified without a key marker.');
  const versionMarker = checkedVersionId(sentVersionMarker === '' ? undefined : sentVersionMarker);
  let after: { key: string; isPrefix: boolean; versionId?: string } | undefined;
  if (marker !== '') after = versionMarker !== undefined ? { key: marker, isPrefix: false, versionId: versionMarker } : positionAfter(marker, p);
  const page: VersionPage =
    p.maxKeys === 0
      ? { entries: [], more: false }
      : await g.meta.listVersions({ bucket: bucket.name, prefix: p.prefix, delimiter: p.delimiter, ...(after ? { after } : {}), limit: p.maxKeys });
  const nowSec = Math.floor(g.clock.nowMs() / 1000);
  const owner = ownerXml(bucket);
  let body = '';
  for (const e of page.entries) {
    if (e.kind === 'prefix') continue;
    const v = e.version;
    const id = el('VersionId', wireVersionId(v.record));
    if (v.deleteMarker) {
      body += `<DeleteMarker>${el('Key', encodeName(v.record.key, p))}${id}${el('IsLatest', v.isLatest)}${el('LastModified', isoTime(modifiedMs(v.record)))}${owner}</DeleteMarker>`;
      continue;
    }
    const f = entryFields(v.record, p, nowSec, owner);
    // VersionId and IsLatest follow Key in S3's order.
    const keyEnd = f.indexOf('</Key>') + '</Key>'.length;
    body += `<Version>${f.slice(0, keyEnd)}${id}${el('IsLatest', v.isLatest)}${f.slice(keyEnd)}</Version>`;
  }
  const prefixes = page.entries
    .filter((e): e is { kind: 'prefix'; prefix: string } => e.kind === 'prefix')
    .map((e) => `<CommonPrefixes>${el('Prefix', encodeName(e.prefix, p))}</CommonPrefixes>`)
    .join('');
  let next = '';
  const last = page.entries[page.entries.length - 1];
  if (page.more && last) {
    next =
      last.kind === 'prefix'
        ? el('NextKeyMarker', encodeName(last.prefix, p))
        : el('NextKeyMarker', encodeName(last.version.record.key, p)) + el('NextVersionIdMarker', wireVersionId(last.version.record));
  }
  const inner =
    el('Name', bucket.name) +
    el('Prefix', encodeName(p.prefix, p)) +
    el('KeyMarker', encodeName(marker, p)) +
    el('VersionIdMarker', sentVersionMarker) +
    next +
    el('MaxKeys', p.maxKeys) +
    (p.delimiter !== '' ? el('Delimiter', encodeName(p.delimiter, p)) : '') +
    el('IsTruncated', page.more) +
    (p.encodeUrl ? el('EncodingType', 'url') : '') +
    body +
    prefixes;
  return xmlResponse(xmlDocument('ListVersionsResult', inner));
}
