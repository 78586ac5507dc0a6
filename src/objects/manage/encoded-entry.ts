/**
 * EncodedEntryURI (docs/development/kodo-protocol.md §0): URL-safe base64 of `<bucket>:<key>`, padded or not. The bucket is the text
 * before the FIRST `:` (keys may contain `:`); `b:` is the empty key.
 */
import { urlsafeB64DecodeText } from '../../auth/base64.js';
import { Errors } from '../../errors.js';
import type { EntryRef } from './ref.js';

/** Decodes an EncodedEntryURI that must name a key; 400 when it does not decode or has no `:`. */
export function decodeEntry(encoded: string | undefined): EntryRef {
  if (!encoded) throw Errors.badEntry('missing');
  let text: string;
  try {
    text = urlsafeB64DecodeText(encoded);
  } catch {
    throw Errors.badEntry(`${encoded} is not URL-safe base64`);
  }
  const colon = text.indexOf(':');
  if (colon <= 0) throw Errors.badEntry(`${JSON.stringify(text)} is not <bucket>:<key>`);
  return { bucket: text.slice(0, colon), key: text.slice(colon + 1) };
}

/**
 * Decodes an EncodedEntryURI that may name only a bucket (`b` → key undefined; `b:` → the empty key).
 * 400 when it does not decode or the bucket is empty.
 */
export function decodeEntryTarget(encoded: string | undefined): { bucket: string; key?: string } {
  const text = decodeParam(encoded, 'EncodedEntryURI');
  const colon = text.indexOf(':');
  if (colon < 0) {
    if (text === '') throw Errors.badEntry('no bucket');
    return { bucket: text };
  }
  if (colon === 0) throw Errors.badEntry('no bucket');
  return { bucket: text.slice(0, colon), key: text.slice(colon + 1) };
}

/** Decodes a URL-safe base64 path parameter to text; 400 naming `what` when it does not decode. */
export function decodeParam(encoded: string | undefined, what: string): string {
  if (encoded === undefined) throw Errors.badRequest(`${what} is missing`);
  try {
    return urlsafeB64DecodeText(encoded);
  } catch {
    throw Errors.badRequest(`${what} is not URL-safe base64`);
  }
}

/**
 * The `/`-separated segments of a raw request path (query dropped), percent-decoded (lenient: some clients send
 * `=` as %3D; base64 never contains `%`). 400 for malformed percent-encoding.
 */
export function pathSegments(rawUrl: string): string[] {
  return rawUrl
    .split('?')[0]!
    .split('/')
    .slice(1)
    .map((seg) => {
      try {
        return decodeURIComponent(seg);
      } catch {
        throw Errors.badRequest(`malformed percent-encoding in ${JSON.stringify(seg)}`);
      }
    });
}
