/**
 * The additional checksum an S3 object keeps (AWS S3 User Guide "Checking object integrity": one algorithm per
 * object; `FULL_OBJECT` — the checksum of the whole content — or `COMPOSITE` — the checksum of the parts'
 * checksums, written `<base64>-<part count>`), docs/development/kodo-protocol.md §18.4.
 *
 * Stored in the entry's reserved metadata `@s3-checksum` as `<algorithm>:<type>:<value>` (e.g.
 * `crc32:FULL_OBJECT:NhCmhg==`), in both metadata stores as any metadata is, so no schema change: entries of earlier
 * versions simply have none. Reserved (`@`) names are never answered as `x-amz-meta-*` (objects/read.ts
 * metaHeaders) and survive a metadata-replacing CopyObject.
 *
 * Answered on GetObject/HeadObject with `x-amz-checksum-mode: ENABLED` for the whole object (not a Range), a part's
 * on a read by part number, and by GetObjectAttributes.
 */
import type { ObjectRecord } from '../ports/meta.js';
import { isChecksumAlgorithm, type ChecksumAlgorithm } from './checksum.js';

/** Reserved metadata name of an entry's checksum. */
export const CHECKSUM_META = '@s3-checksum';

/**
 * Reserved metadata name of the parts' checksums of a multipart object with a checksum (base64 values joined by
 * `,`, in part order): GetObjectAttributes lists them, a read by part number answers one. Kept for at most
 * `MAX_PART_CHECKSUMS` parts, so an entry's metadata stays small (44 bytes a part for SHA-256).
 */
export const PART_CHECKSUMS_META = '@s3-part-checksums';

/** Most parts whose checksums an entry keeps (see PART_CHECKSUMS_META). */
export const MAX_PART_CHECKSUMS = 1000;

/** The parts' checksums an entry keeps (see PART_CHECKSUMS_META), or undefined. */
export function partChecksumsOfEntry(rec: Pick<ObjectRecord, 'meta'>): string[] | undefined {
  return rec.meta[PART_CHECKSUMS_META]?.split(',');
}

/** How the value covers the object. */
export type ChecksumType = 'FULL_OBJECT' | 'COMPOSITE';

/** An object's checksum. `value`: base64, with `-<parts>` for COMPOSITE. */
export interface ObjectChecksum {
  algorithm: ChecksumAlgorithm;
  type: ChecksumType;
  value: string;
}

/** The metadata value of a checksum. */
export function encodeChecksum(c: ObjectChecksum): string {
  return `${c.algorithm}:${c.type}:${c.value}`;
}

/** The checksum an entry keeps, or undefined (none, or unreadable). */
export function checksumOfEntry(rec: Pick<ObjectRecord, 'meta'>): ObjectChecksum | undefined {
  const text = rec.meta[CHECKSUM_META];
  if (text === undefined) return undefined;
  const [algorithm, type, value] = text.split(':');
  if (algorithm === undefined || !isChecksumAlgorithm(algorithm) || (type !== 'FULL_OBJECT' && type !== 'COMPOSITE') || !value) return undefined;
  return { algorithm, type, value };
}

/** The S3 name of an algorithm (`CRC64NVME`) as XML elements and `x-amz-checksum-algorithm` write it. */
export function algorithmName(a: ChecksumAlgorithm): string {
  return a.toUpperCase();
}

/** The XML element naming a checksum of `a` (`ChecksumCRC32`, `ChecksumCRC64NVME`, …). */
export function checksumElement(a: ChecksumAlgorithm): string {
  return `Checksum${a.toUpperCase()}`;
}

/** The response headers of a checksum: `x-amz-checksum-<algorithm>` and `x-amz-checksum-type`. */
export function checksumHeaders(c: ObjectChecksum): Record<string, string> {
  return { [`x-amz-checksum-${c.algorithm}`]: c.value, 'x-amz-checksum-type': c.type };
}

/** The algorithm named by an `x-amz-checksum-algorithm` / `x-amz-sdk-checksum-algorithm` value, if known. */
export function algorithmOfName(name: string | undefined): ChecksumAlgorithm | undefined {
  const a = name?.trim().toLowerCase();
  return a !== undefined && isChecksumAlgorithm(a) ? a : undefined;
}
