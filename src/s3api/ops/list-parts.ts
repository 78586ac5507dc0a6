/**
 * ListParts (`GET /<bucket>/<key>?uploadId=<id>`): the upload's parts after `part-number-marker`, at most
 * `max-parts` (default and cap 1000), docs/development/kodo-protocol.md §18.8. Each part: PartNumber,
 * LastModified, ETag (its MD5), Size, its checksum (`<ChecksumCRC32>`…, when recorded); the upload's
 * ChecksumAlgorithm and ChecksumType when it has one. NoSuchUpload (404) when unknown; InvalidArgument for a
 * malformed number.
 */
import type { Granary } from '../../context.js';
import { bucketName, objectKey, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import type { PartRecord } from '../../ports/meta.js';
import { isChecksumAlgorithm } from '../checksum.js';
import { loadSettings, partChecksum, partEtag, s3Upload, uploadIdOf } from '../multipart.js';
import { algorithmName, checksumElement } from '../object-checksum.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, isoTime, xmlDocument } from '../xml.js';

const CLASS_NAMES = ['STANDARD', 'STANDARD_IA', 'GLACIER', 'DEEP_ARCHIVE', 'GLACIER_IR', 'INTELLIGENT_TIERING'];

/** A non-negative integer query parameter (`fallback` when absent); InvalidArgument otherwise. */
export function intParam(query: URLSearchParams, name: string, fallback: number): number {
  const v = query.get(name);
  if (v === null || v === '') return fallback;
  if (!/^\d{1,10}$/.test(v)) throw S3Errors.InvalidArgument(`Provided ${name} not an integer or within integer range`);
  return Number(v);
}

/** A part's recorded checksum as its `<ChecksumCRC32>`-style element ('' when none). */
function partChecksumXml(p: PartRecord): string {
  const a = p.checksum?.slice(0, p.checksum.indexOf(':'));
  if (a === undefined || !isChecksumAlgorithm(a)) return '';
  return el(checksumElement(a), partChecksum(p, a));
}

export async function listParts(g: Granary, req: S3Request): Promise<S3Response> {
  const accessKey = signedCaller(req);
  const bucket = bucketName(req);
  const key = objectKey(req);
  const uploadId = uploadIdOf(req.query);
  await s3Upload(g, accessKey, bucket, key, uploadId);
  const max = Math.min(intParam(req.query, 'max-parts', 1000), 1000);
  const marker = intParam(req.query, 'part-number-marker', 0);
  const parts = max === 0 ? [] : await g.meta.sessions.listParts(uploadId, marker, max + 1);
  const more = parts.length > max;
  const page = parts.slice(0, max);
  const settings = await loadSettings(g, uploadId);
  const who = `<ID>${accessKey}</ID><DisplayName>${accessKey}</DisplayName>`;
  const inner =
    el('Bucket', bucket) +
    el('Key', key) +
    el('UploadId', uploadId) +
    el('PartNumberMarker', marker) +
    el('NextPartNumberMarker', page.length > 0 ? page[page.length - 1]!.partNumber : marker) +
    el('MaxParts', max) +
    el('IsTruncated', more) +
    page
      .map((p) => `<Part>${el('PartNumber', p.partNumber)}${el('LastModified', isoTime(p.putTime * 1000))}${el('ETag', partEtag(p))}${el('Size', p.size)}${partChecksumXml(p)}</Part>`)
      .join('') +
    `<Initiator>${who}</Initiator><Owner>${who}</Owner>` +
    el('StorageClass', CLASS_NAMES[settings.fileType] ?? 'STANDARD') +
    (settings.checksum ? el('ChecksumAlgorithm', algorithmName(settings.checksum.algorithm)) + el('ChecksumType', settings.checksum.type) : '');
  return xmlResponse(xmlDocument('ListPartsResult', inner));
}
