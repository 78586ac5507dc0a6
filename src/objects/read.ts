/**
 * Reading an entry for download (docs/development/kodo-protocol.md §11): expired entries are absent (404), disabled ones and frozen
 * archives are refused (403), corrupt ones answer 599; private buckets need a valid download token (checked by
 * the route before this).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketRecord, ObjectRecord } from '../ports/meta.js';
import { effectiveType } from './entry-json.js';
import { checkNotCorrupt } from './verified-read.js';

/** The live entry `<bucket>:<key>`, or undefined when missing or expired. */
export async function findLiveObject(g: Granary, bucket: string, key: string): Promise<ObjectRecord | undefined> {
  const rec = await g.meta.getObject(bucket, key);
  return isLive(g, rec) ? rec : undefined;
}

/** Whether an entry is live (present and not past its deleteAfterDays expiry). */
export function isLive(g: Granary, rec: ObjectRecord | undefined): rec is ObjectRecord {
  return rec !== undefined && (rec.expireAt === undefined || rec.expireAt > nowSeconds(g.clock));
}

/**
 * The bucket and the (possibly absent) entry a download addresses, in one read; 404 when the bucket is missing.
 * The caller checks access to the bucket first, then `checkDownloadable` on the entry.
 */
export async function lookupForDownload(
  g: Granary,
  bucket: string,
  key: string,
): Promise<{ bucket: BucketRecord; object: ObjectRecord | undefined }> {
  const found = await g.meta.getBucketAndObject(bucket, key);
  if (!found.bucket) throw Errors.notFound();
  return { bucket: found.bucket, object: found.object };
}

/**
 * Whether an archived entry (Archive 2, Deep Archive 3) may be read at `nowSec`: restored by restoreAr and not
 * yet frozen again (`restoreUntil`; a restore recorded before that field existed counts as lasting).
 */
export function isRestored(rec: ObjectRecord, nowSec: number): boolean {
  return rec.restoreStatus === 2 && (rec.restoreUntil === undefined || rec.restoreUntil > nowSec);
}

/**
 * Refuses an entry that is missing or expired (404), disabled (403), in Archive or Deep Archive storage and not
 * restored (403, as Kodo: restoreAr first), or found corrupt (599). Downloads and fops on it call this.
 */
export function checkDownloadable(g: Granary, rec: ObjectRecord | undefined): ObjectRecord {
  if (!isLive(g, rec)) throw Errors.notFound();
  if (rec.status === 1) throw Errors.objectDisabled();
  const nowSec = nowSeconds(g.clock);
  const type = effectiveType(rec, nowSec);
  if ((type === 2 || type === 3) && !isRestored(rec, nowSec)) throw Errors.objectArchived();
  checkNotCorrupt(rec);
  return rec;
}

/** The characters of a header name (an HTTP token, RFC 9110 §5.6.2). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * A metadata value as header content: printable ASCII as it is; anything else (non-ASCII text, CR, LF and other
 * controls) as one RFC 2047 encoded-word `=?UTF-8?B?<base64>?=`, as S3 does (Node refuses such header content).
 */
function headerValue(value: string): string {
  return /^[\x20-\x7e\t]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/**
 * Response headers that metadata sets: `x-qn-meta-<name>` → `X-Qn-Meta-<Name>`, and `!<Header>` metadata
 * (set by `changeHeaders`) overriding that response header (e.g. `!Content-Type`). Metadata is stored as given
 * (stat shows it unchanged); values that cannot be header content are encoded (see headerValue), and names that
 * cannot be header names are left out of the headers.
 */
export function metaHeaders(meta: Record<string, string>): { overrides: Record<string, string>; meta: Record<string, string> } {
  const overrides: Record<string, string> = {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(meta)) {
    const header = name.startsWith('!') ? name.slice(1) : `x-qn-meta-${name}`;
    if (!HEADER_NAME.test(header)) continue;
    if (name.startsWith('!')) overrides[header.toLowerCase()] = headerValue(value);
    else out[header.toLowerCase()] = headerValue(value);
  }
  return { overrides, meta: out };
}
