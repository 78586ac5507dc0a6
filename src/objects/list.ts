/**
 * Listing a bucket (docs/development/kodo-protocol.md §8.3): limit rules, the opaque marker, authorisation, and the item / common-prefix
 * answers of `/list` (one page) and `/v2/list` (a stream of entries, page by page).
 *
 * The marker is URL-safe base64 (padding kept, as Qiniu's) of `{"c":0,"k":"<last key or prefix>","h":"<mac>"}`,
 * plus `"d":1` when `k` is a common prefix (resume after every key under it). `h` is an HMAC-SHA256 (truncated to
 * 128 bits, URL-safe base64) of the bucket, `d` and `k` under a random secret kept in the MetaStore settings
 * (`list_marker_key`, created on first use): a marker that is not base64 or JSON, was altered, or was issued for
 * another bucket answers 640. An exhausted listing answers the marker `""`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { authorizeBucket } from '../auth/authorize.js';
import { urlsafeB64DecodeText, urlsafeB64Encode } from '../auth/base64.js';
import { serverSecret } from '../auth/secrets.js';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { nowSeconds } from '../ports/clock.js';
import type { ListPage } from '../ports/meta.js';
import { listItemJson } from './entry-json.js';

/** Largest page (items + common prefixes) of `/list`, and the page size `/v2/list` streams with. */
export const MAX_LIST_LIMIT = 1000;
const MARKER_KEY_SETTING = 'list_marker_key';
const MAC_BYTES = 16;

/** Parameters of a listing, as received (query string or form body). */
export interface ListParams {
  bucket: string;
  prefix: string;
  delimiter: string;
  /** '' = from the start. */
  marker: string;
  /** Raw `limit` parameter (null when absent). */
  limit: string | null;
  /** `needparts=true`: items carry `parts` (sizes in bytes). */
  needParts: boolean;
}

/** One `/list` page: items (list item JSON, putTime a bigint), common prefixes, and the marker ('' = done). */
export interface ListResult {
  items: Record<string, unknown>[];
  commonPrefixes: string[];
  marker: string;
}

/** One `/v2/list` line: an item (`dir` '') or a common prefix (`item` null), with the marker resuming after it. */
export interface ListLine {
  item: Record<string, unknown> | null;
  marker: string;
  dir: string;
}

/** Where a listing resumes: after `key`, or after every key under the common prefix `key` (`isPrefix`). */
interface Position {
  key: string;
  isPrefix: boolean;
}

/** A non-negative decimal integer parameter, or null when absent/empty; 400 for anything else. */
function parseCount(raw: string | null, name: string): number | null {
  if (raw === null || raw === '') return null;
  if (!/^\d{1,15}$/.test(raw)) throw Errors.badRequest(`${name} must be a non-negative integer`);
  return Number(raw);
}

/**
 * The page size of `/list` from its raw `limit` parameter: 1..1000 as given; absent, empty or 0 → 1000; above
 * 1000 → 1000 (the Node SDK always sends one, 1000 by default). Not a non-negative integer → 400.
 */
export function pageLimit(raw: string | null): number {
  const n = parseCount(raw, 'limit');
  return n === null || n === 0 ? MAX_LIST_LIMIT : Math.min(n, MAX_LIST_LIMIT);
}

/**
 * The total number of entries `/v2/list` streams from its raw `limit` parameter: absent, empty or 0 → all of
 * them (Infinity); otherwise that many. Not a non-negative integer → 400.
 */
export function streamLimit(raw: string | null): number {
  const n = parseCount(raw, 'limit');
  return n === null || n === 0 ? Infinity : n;
}


function markerMac(secret: Buffer, bucket: string, pos: Position): Buffer {
  return createHmac('sha256', secret)
    .update(`granary-list-marker\n${bucket}\n${pos.isPrefix ? 1 : 0}\n${pos.key}`, 'utf8')
    .digest()
    .subarray(0, MAC_BYTES);
}

/** The marker resuming a listing of `bucket` after `pos` (URL-safe base64 of the signed JSON). */
export function encodeMarker(secret: Buffer, bucket: string, pos: Position): string {
  const doc: Record<string, unknown> = { c: 0, k: pos.key };
  if (pos.isPrefix) doc.d = 1;
  doc.h = markerMac(secret, bucket, pos).toString('base64url');
  return urlsafeB64Encode(JSON.stringify(doc));
}

/** The resume position a marker of `bucket` holds; 640 when it is malformed, altered or from another bucket. */
export function decodeMarker(secret: Buffer, bucket: string, marker: string): Position {
  let doc: unknown;
  try {
    doc = JSON.parse(urlsafeB64DecodeText(marker));
  } catch {
    throw Errors.badMarker();
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw Errors.badMarker();
  const { c, k, d, h, ...rest } = doc as Record<string, unknown>;
  if (c !== 0 || typeof k !== 'string' || (d !== undefined && d !== 1) || typeof h !== 'string') throw Errors.badMarker();
  if (Object.keys(rest).length > 0) throw Errors.badMarker();
  const pos: Position = { key: k, isPrefix: d === 1 };
  const got = Buffer.from(h, 'base64url');
  const want = markerMac(secret, bucket, pos);
  if (got.length !== want.length || !timingSafeEqual(got, want) || got.toString('base64url') !== h) {
    throw Errors.badMarker();
  }
  return pos;
}

/** Where the listing resumes after an entry of a page. */
function positionOf(entry: ListPage['entries'][number]): Position {
  return entry.kind === 'item' ? { key: entry.item.key, isPrefix: false } : { key: entry.prefix, isPrefix: true };
}

/** Checks access (631 missing bucket, 403 another account's) and decodes the marker (640); the listing's start. */
async function open(
  g: Granary,
  accessKey: string,
  p: ListParams,
): Promise<{ secret: Buffer; after: Position | undefined }> {
  await authorizeBucket(g, accessKey, p.bucket, { action: 'kodo/List', prefix: p.prefix });
  const secret = await serverSecret(g.meta, MARKER_KEY_SETTING);
  const after = p.marker === '' ? undefined : decodeMarker(secret, p.bucket, p.marker);
  return { secret, after };
}

function readPage(g: Granary, p: ListParams, after: Position | undefined, limit: number): Promise<ListPage> {
  return g.meta.listObjects({
    bucket: p.bucket,
    prefix: p.prefix,
    delimiter: p.delimiter,
    ...(after ? { after } : {}),
    limit,
    nowSec: nowSeconds(g.clock),
  });
}

/**
 * `/list` (docs/development/kodo-protocol.md §8.3): one page of at most `limit` entries (items and common prefixes together, see
 * `pageLimit`) of `p.bucket` for the caller `accessKey`, in byte-lexicographic key order after `p.marker`.
 * `commonPrefixes` is filled only when a delimiter is given. `marker` resumes after the last entry; '' when the
 * listing is exhausted. Errors: 400 bad limit, 631 no such bucket, 403 another account's bucket, 640 bad marker.
 */
export async function listObjects(g: Granary, accessKey: string, p: ListParams): Promise<ListResult> {
  const limit = pageLimit(p.limit);
  const { secret, after } = await open(g, accessKey, p);
  const page = await readPage(g, p, after, limit);
  const nowSec = nowSeconds(g.clock);
  const items: Record<string, unknown>[] = [];
  const commonPrefixes: string[] = [];
  for (const e of page.entries) {
    if (e.kind === 'item') items.push(listItemJson(e.item, nowSec, p.needParts));
    else commonPrefixes.push(e.prefix);
  }
  const last = page.entries[page.entries.length - 1];
  const marker = page.more && last ? encodeMarker(secret, p.bucket, positionOf(last)) : '';
  return { items, commonPrefixes, marker };
}

/**
 * `/v2/list` (docs/development/kodo-protocol.md §8.3): every entry after `p.marker` (or the first `limit` of them, see `streamLimit`),
 * as pages of lines read one `MAX_LIST_LIMIT` page at a time, so memory stays bounded whatever the bucket size.
 * Each line carries the marker resuming after it ('' on the last line of an exhausted listing).
 * Validation, authorisation (400, 631, 403, 640) and the first page happen before this resolves, so errors are
 * answered before any line is sent; stop iterating to stop reading (a client that went away).
 */
export async function streamObjects(g: Granary, accessKey: string, p: ListParams): Promise<AsyncGenerator<ListLine[]>> {
  const total = streamLimit(p.limit);
  const { secret, after } = await open(g, accessKey, p);
  const first = await readPage(g, p, after, Math.min(total, MAX_LIST_LIMIT));
  async function* pages(): AsyncGenerator<ListLine[]> {
    let page = first;
    let left = total;
    for (;;) {
      const nowSec = nowSeconds(g.clock);
      left -= page.entries.length;
      const lines = page.entries.map((e, i): ListLine => {
        const lastOfAll = i === page.entries.length - 1 && !page.more;
        const marker = lastOfAll ? '' : encodeMarker(secret, p.bucket, positionOf(e));
        return e.kind === 'item'
          ? { item: listItemJson(e.item, nowSec, p.needParts), marker, dir: '' }
          : { item: null, marker, dir: e.prefix };
      });
      if (lines.length > 0) yield lines;
      const last = page.entries[page.entries.length - 1];
      if (!page.more || !last || left <= 0) return;
      page = await readPage(g, p, positionOf(last), Math.min(left, MAX_LIST_LIMIT));
    }
  }
  return pages();
}
