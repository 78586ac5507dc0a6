/**
 * HTTP Range and conditional-request rules for downloads (RFC 9110; docs/development/kodo-protocol.md §11).
 */
import type { ByteRange } from '../ports/blob.js';

/**
 * Parses a `Range` header against an object of `size` bytes.
 * Returns undefined to serve the whole object (no header, not `bytes=`, several ranges), 'unsatisfiable' for 416,
 * or one inclusive byte range.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/.exec(header.trim());
  if (!m) return undefined;
  const [, a = '', b = ''] = m;
  if (a === '' && b === '') return undefined;
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (start >= size || (b !== '' && Number(b) < start)) return 'unsatisfiable';
  return { start, end };
}

/** Whether `If-None-Match` / `If-Modified-Since` let us answer 304 for this ETag and modification time (ms). */
export function notModified(headers: Record<string, string | string[] | undefined>, etag: string, mtimeMs: number): boolean {
  const inm = headers['if-none-match'];
  if (typeof inm === 'string') {
    return inm
      .split(',')
      .map((t) => t.trim().replace(/^W\//, ''))
      .some((t) => t === '*' || t === etag || t === `"${etag}"`);
  }
  const ims = headers['if-modified-since'];
  if (typeof ims === 'string') {
    const since = Date.parse(ims);
    return !Number.isNaN(since) && Math.floor(mtimeMs / 1000) <= Math.floor(since / 1000);
  }
  return false;
}

/** Whether an `If-Range` header still matches (else the whole object is served). */
export function ifRangeMatches(header: string | undefined, etag: string, mtimeMs: number): boolean {
  if (!header) return true;
  if (header.startsWith('"') || header.startsWith('W/')) return header === `"${etag}"`;
  const t = Date.parse(header);
  return !Number.isNaN(t) && Math.floor(mtimeMs / 1000) <= Math.floor(t / 1000);
}
