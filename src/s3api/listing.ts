/**
 * What ListObjects, ListObjectsV2 and ListObjectVersions share (docs/development/kodo-protocol.md §18.6): the
 * query parameters, one page of the bucket through the MetaStore's listing (the Kodo `/list` order: byte-wise
 * UTF-8 keys, expired entries skipped, common prefixes rolled up at the delimiter, items and prefixes counted
 * together against `max-keys`), the resume position of a marker, and the XML of one entry.
 */
import type { Granary } from '../context.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketRecord, ListPage, ObjectRecord } from '../ports/meta.js';
import { awsUriEncode } from './auth/sigv4.js';
import { S3Errors } from './errors.js';
import { etagOf, modifiedMs, storageClassOf } from './object-headers.js';
import type { S3Request } from './types.js';
import { el, isoTime } from './xml.js';

/** Largest page, and the default `max-keys`. */
export const MAX_KEYS = 1000;

/** Where a listing resumes: after `key`, or after every key under the common prefix `key` (`isPrefix`). */
export interface ListPosition {
  key: string;
  isPrefix: boolean;
}

/** The parameters common to every listing. */
export interface ListParams {
  prefix: string;
  delimiter: string;
  maxKeys: number;
  /** `encoding-type=url`: keys and prefixes URL-encoded in the answer. */
  encodeUrl: boolean;
}

/** Parses prefix, delimiter, max-keys (0…, above 1000 → 1000; InvalidArgument when not an integer) and encoding-type. */
export function listParams(req: S3Request): ListParams {
  const raw = req.query.get('max-keys');
  let maxKeys = MAX_KEYS;
  if (raw !== null && raw !== '') {
    if (!/^\d{1,10}$/.test(raw)) throw S3Errors.InvalidArgument('Provided max-keys not an integer or within integer range');
    maxKeys = Math.min(Number(raw), MAX_KEYS);
  }
  const encoding = req.query.get('encoding-type');
  if (encoding !== null && encoding !== '' && encoding !== 'url') throw S3Errors.InvalidArgument('Invalid Encoding Method specified in Request');
  return {
    prefix: req.query.get('prefix') ?? '',
    delimiter: req.query.get('delimiter') ?? '',
    maxKeys,
    encodeUrl: encoding === 'url',
  };
}

/**
 * The position after `marker` (a key or a common prefix a previous page ended with): a marker that is itself a
 * common prefix of this listing skips every key under it; any other resumes after that key.
 */
export function positionAfter(marker: string, p: Pick<ListParams, 'prefix' | 'delimiter'>): ListPosition {
  if (p.delimiter !== '' && marker.startsWith(p.prefix)) {
    const rest = marker.slice(p.prefix.length);
    const at = rest.indexOf(p.delimiter);
    if (at >= 0 && p.prefix + rest.slice(0, at + p.delimiter.length) === marker) return { key: marker, isPrefix: true };
  }
  return { key: marker, isPrefix: false };
}

/** One page of `bucket` after `after` (max-keys 0 → an empty, complete page). */
export async function listPage(g: Granary, bucket: BucketRecord, p: ListParams, after: ListPosition | undefined): Promise<ListPage> {
  if (p.maxKeys === 0) return { entries: [], more: false };
  return g.meta.listObjects({
    bucket: bucket.name,
    prefix: p.prefix,
    delimiter: p.delimiter,
    ...(after ? { after } : {}),
    limit: p.maxKeys,
    nowSec: nowSeconds(g.clock),
  });
}

/** A key or prefix as the answer writes it (URL-encoded with `encoding-type=url`, `/` kept). */
export function encodeName(text: string, p: Pick<ListParams, 'encodeUrl'>): string {
  return p.encodeUrl ? awsUriEncode(text, true) : text;
}

/** `<Owner>` of a bucket's entries: its owner's AccessKey. */
export function ownerXml(bucket: BucketRecord): string {
  return `<Owner>${el('ID', bucket.owner)}${el('DisplayName', bucket.owner)}</Owner>`;
}

/** The fields of one listed entry (Key … StorageClass, Owner when `owner` is given). */
export function entryFields(rec: ObjectRecord, p: ListParams, nowSec: number, owner: string | undefined): string {
  return (
    el('Key', encodeName(rec.key, p)) +
    el('LastModified', isoTime(modifiedMs(rec))) +
    el('ETag', etagOf(rec)) +
    el('Size', rec.fsize) +
    el('StorageClass', storageClassOf(rec, nowSec)) +
    (owner ?? '')
  );
}

/** The `<CommonPrefixes>` of a page. */
export function prefixesXml(page: ListPage, p: ListParams): string {
  return page.entries
    .filter((e): e is { kind: 'prefix'; prefix: string } => e.kind === 'prefix')
    .map((e) => `<CommonPrefixes>${el('Prefix', encodeName(e.prefix, p))}</CommonPrefixes>`)
    .join('');
}

/** The key or prefix the page ended with (the next page's marker), or undefined for an empty page. */
export function lastName(page: ListPage): string | undefined {
  const last = page.entries[page.entries.length - 1];
  if (!last) return undefined;
  return last.kind === 'item' ? last.item.key : last.prefix;
}
