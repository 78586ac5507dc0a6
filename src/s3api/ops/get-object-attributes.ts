/**
 * GetObjectAttributes (`GET /<bucket>/<key>?attributes`, AWS API_GetObjectAttributes): what
 * `x-amz-object-attributes` (comma-separated: ETag, Checksum, ObjectParts, StorageClass, ObjectSize) asks for, in
 * one `<GetObjectAttributesResponse>`, with `Last-Modified`, docs/development/kodo-protocol.md §18.5.
 *
 * - ETag unquoted (object-headers.ts `etagOf`); Checksum the stored one (object-checksum.ts) with its ChecksumType;
 *   StorageClass; ObjectSize in bytes.
 * - ObjectParts only for an entry uploaded in parts (its recorded part sizes): PartsCount, the page of parts after
 *   `x-amz-part-number-marker` (at most `x-amz-max-parts`, default and cap 1000) with PartNumber, Size and the
 *   part's checksum when kept (object-checksum.ts), PartNumberMarker, NextPartNumberMarker, MaxParts,
 *   IsTruncated.
 * Errors: NoSuchKey, NoSuchBucket, AccessDenied, InvalidArgument (no or an unknown attribute, a malformed number).
 */
import type { Granary } from '../../context.js';
import { findLiveObject } from '../../objects/read.js';
import { accessBucket, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { headerOf } from '../headers.js';
import { checksumElement, checksumOfEntry, partChecksumsOfEntry } from '../object-checksum.js';
import { etagOf, httpDate, modifiedMs, storageClassOf } from '../object-headers.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, xmlDocument } from '../xml.js';

const ATTRIBUTES = new Set(['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize']);

/** A non-negative integer header (`fallback` when absent); InvalidArgument otherwise. */
function intHeader(req: S3Request, name: string, fallback: number): number {
  const v = headerOf(req, name)?.trim();
  if (v === undefined || v === '') return fallback;
  if (!/^\d{1,10}$/.test(v)) throw S3Errors.InvalidArgument(`Provided ${name} not an integer or within integer range`);
  return Number(v);
}

export async function getObjectAttributes(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const wanted = new Set(
    (headerOf(req, 'x-amz-object-attributes') ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== ''),
  );
  if (wanted.size === 0) throw S3Errors.InvalidArgument('The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty');
  for (const a of wanted) if (!ATTRIBUTES.has(a)) throw S3Errors.InvalidArgument(`Invalid attribute name specified: ${a}`);
  const rec = await findLiveObject(g, bucket.name, objectKey(req));
  if (!rec) throw S3Errors.NoSuchKey();
  const nowSec = Math.floor(g.clock.nowMs() / 1000);
  const sum = checksumOfEntry(rec);
  let inner = '';
  if (wanted.has('ETag')) inner += el('ETag', etagOf(rec).replace(/^"|"$/g, ''));
  if (wanted.has('Checksum') && sum) inner += `<Checksum>${el(checksumElement(sum.algorithm), sum.value)}${el('ChecksumType', sum.type)}</Checksum>`;
  if (wanted.has('ObjectParts') && rec.parts && rec.parts.length > 0) {
    const max = Math.min(intHeader(req, 'x-amz-max-parts', 1000), 1000);
    const marker = intHeader(req, 'x-amz-part-number-marker', 0);
    const partSums = sum ? partChecksumsOfEntry(rec) : undefined;
    const numbers = rec.parts.map((_, i) => i + 1).filter((n) => n > marker);
    const page = numbers.slice(0, max);
    const more = numbers.length > page.length;
    inner +=
      '<ObjectParts>' +
      el('PartsCount', rec.parts.length) +
      el('PartNumberMarker', marker) +
      el('NextPartNumberMarker', page.length > 0 ? page[page.length - 1]! : marker) +
      el('MaxParts', max) +
      el('IsTruncated', more) +
      page
        .map((n) => {
          const partSum = partSums?.[n - 1];
          return `<Part>${partSum && sum ? el(checksumElement(sum.algorithm), partSum) : ''}${el('PartNumber', n)}${el('Size', rec.parts![n - 1]!)}</Part>`;
        })
        .join('') +
      '</ObjectParts>';
  }
  if (wanted.has('StorageClass')) inner += el('StorageClass', storageClassOf(rec, nowSec));
  if (wanted.has('ObjectSize')) inner += el('ObjectSize', rec.fsize);
  return xmlResponse(xmlDocument('GetObjectAttributesResponse', inner), 200, { 'last-modified': httpDate(modifiedMs(rec)) });
}
