/**
 * One Granary entry as S3 sees it (docs/development/kodo-protocol.md §18.5): ETag, Last-Modified, storage class,
 * user metadata and the stored response headers, and the request headers that set them.
 *
 * - ETag: the lower-case hex MD5 of the content, quoted, when the entry has one (every single-request upload: S3
 *   PutObject, Kodo form upload, putb64, copies of those); an entry assembled from pieces (Kodo resumable v1/v2, whose
 *   MD5 cannot be composed) answers its Kodo etag (the `hash`) quoted instead, so an ETag is always stable and
 *   unique to the content. `etagOf` is the one place that decides (S3 multipart's `"<md5 of md5s>-<n>"` hooks in
 *   here).
 * - Metadata: S3 `x-amz-meta-<name>` ≡ Kodo `x-qn-meta-<name>` (the same stored names; S3 names arrive lower-cased);
 *   Cache-Control, Content-Disposition, Content-Encoding, Content-Language and Expires are kept as the entry's
 *   `!<Header>` metadata (Kodo's changeHeaders), so a Kodo download serves them too.
 * - Storage class: STANDARD 0, STANDARD_IA (and Kodo's LINE) 1, GLACIER 2, DEEP_ARCHIVE 3, GLACIER_IR 4,
 *   INTELLIGENT_TIERING 5 (the Kodo file types).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { effectiveType } from '../objects/entry-json.js';
import { metaHeaders } from '../objects/read.js';
import { tagsOfMeta } from './tagging.js';
import type { ObjectRecord } from '../ports/meta.js';
import { S3Errors } from './errors.js';

/**
 * The quoted S3 ETag of an entry (see the module comment): the `"<md5 of md5s>-<n>"` an S3 multipart upload kept
 * in the reserved metadata `@s3-etag` (multipart.ts), else the MD5, else the Kodo etag.
 */
export function etagOf(rec: Pick<ObjectRecord, 'md5' | 'hash'> & { meta?: Record<string, string> }): string {
  const multipart = rec.meta?.['@s3-etag'];
  if (multipart) return `"${multipart}"`;
  return `"${rec.md5 !== '' ? rec.md5 : rec.hash}"`;
}

/** Upload time of an entry in ms. */
export function modifiedMs(rec: Pick<ObjectRecord, 'putTime'>): number {
  return Number(rec.putTime / 10000n);
}

/** An HTTP date (RFC 7231 IMF-fixdate). */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

const CLASS_NAMES: Record<number, string> = {
  0: 'STANDARD',
  1: 'STANDARD_IA',
  2: 'GLACIER',
  3: 'DEEP_ARCHIVE',
  4: 'GLACIER_IR',
  5: 'INTELLIGENT_TIERING',
};

const CLASS_TYPES: Record<string, number> = {
  STANDARD: 0,
  REDUCED_REDUNDANCY: 0,
  STANDARD_IA: 1,
  ONEZONE_IA: 1,
  LINE: 1,
  GLACIER: 2,
  DEEP_ARCHIVE: 3,
  GLACIER_IR: 4,
  INTELLIGENT_TIERING: 5,
};

/** The S3 storage class of an entry at `nowSec` (its lifecycle transitions applied). */
export function storageClassOf(rec: ObjectRecord, nowSec: number): string {
  return CLASS_NAMES[effectiveType(rec, nowSec)] ?? 'STANDARD';
}

/** The Kodo file type of an `x-amz-storage-class` value (absent → 0); InvalidStorageClass when unknown. */
export function typeOfStorageClass(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  const t = CLASS_TYPES[value.toUpperCase()];
  if (t === undefined) throw S3Errors.InvalidStorageClass();
  return t;
}

/** Response headers S3 keeps with an object and answers as they were sent (stored as `!<Header>` metadata). */
export const STORED_HEADERS = ['Cache-Control', 'Content-Disposition', 'Content-Encoding', 'Content-Language', 'Expires'] as const;

/** Most bytes of user metadata (names and values) S3 accepts on one object. */
export const MAX_META_BYTES = 2048;

/**
 * A metadata value as S3 stores it from a header value read by Node (latin1, one character per byte): the bytes
 * as UTF-8 text when they are valid UTF-8 (botocore and the Go SDK send UTF-8), else the characters as read (one
 * byte each, as the AWS SDK for JavaScript sends `é`); an RFC 2047 encoded word (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`,
 * how S3 answers non-ASCII values) is decoded, as S3 decodes it before storing (AWS S3 User Guide, "Working with
 * object metadata").
 */
export function metaValue(raw: string): string {
  const word = /^=\?utf-8\?([bq])\?([^?]*)\?=$/i.exec(raw.trim());
  if (word) {
    const data = word[2]!;
    return word[1]!.toLowerCase() === 'b'
      ? Buffer.from(data, 'base64').toString('utf8')
      : Buffer.from(data.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');
  }
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(raw) || /[^\x00-\xff]/.test(raw)) return raw;
  const bytes = Buffer.from(raw, 'latin1');
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : raw;
}

/**
 * The entry metadata a PutObject or CopyObject (REPLACE) request sets: `x-amz-meta-*` (names without the prefix)
 * and the stored headers as `!<Header>`; `aws-chunked` is dropped from Content-Encoding (it is the transfer's, not
 * the object's). More than 2 KiB of user metadata → InvalidArgument (S3's limit is on the user part only).
 */
export function metaFromHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const meta: Record<string, string> = {};
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith('x-amz-meta-') || value === undefined) continue;
    const short = name.slice('x-amz-meta-'.length);
    const text = metaValue(Array.isArray(value) ? value.join(',') : value);
    bytes += Buffer.byteLength(short) + Buffer.byteLength(text);
    if (short !== '') meta[short] = text;
  }
  if (bytes > MAX_META_BYTES) throw S3Errors.InvalidArgument(`Your metadata headers exceed the maximum allowed metadata size (${MAX_META_BYTES} bytes)`);
  for (const header of STORED_HEADERS) {
    let v = headers[header.toLowerCase()];
    if (Array.isArray(v)) v = v.join(',');
    if (header === 'Content-Encoding' && v !== undefined) {
      // Verbatim (`deflate, gzip` stays so) unless it names aws-chunked, which is left out of the rest.
      const codings = v.split(',').map((s) => s.trim());
      if (codings.some((c) => c.toLowerCase() === 'aws-chunked')) v = codings.filter((c) => c !== '' && c.toLowerCase() !== 'aws-chunked').join(', ');
    }
    if (v !== undefined && v !== '') meta[`!${header}`] = v;
  }
  return meta;
}

/**
 * The headers of a GetObject/HeadObject answer describing the entry: ETag, Last-Modified, Content-Type,
 * x-amz-meta-*, the stored headers, x-amz-storage-class (omitted for STANDARD, as S3 does), x-amz-tagging-count
 * (the number of the object's tags, when it has any).
 */
export function objectHeaders(rec: ObjectRecord, nowSec: number): Record<string, string> {
  const out: Record<string, string> = {
    etag: etagOf(rec),
    'last-modified': httpDate(modifiedMs(rec)),
    'content-type': rec.mimeType || 'application/octet-stream',
    'accept-ranges': 'bytes',
  };
  const { overrides, meta } = metaHeaders(rec.meta);
  for (const [name, value] of Object.entries(meta)) out[`x-amz-meta-${name.slice('x-qn-meta-'.length)}`] = value;
  for (const [name, value] of Object.entries(overrides)) {
    if (name !== 'content-length' && name !== 'etag' && name !== 'last-modified') out[name] = value;
  }
  const cls = storageClassOf(rec, nowSec);
  if (cls !== 'STANDARD') out['x-amz-storage-class'] = cls;
  const tags = tagsOfMeta(rec.meta).length;
  if (tags > 0) out['x-amz-tagging-count'] = String(tags);
  return out;
}
