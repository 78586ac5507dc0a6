/**
 * Object tags of the S3 listener (docs/development/kodo-protocol.md §18.10): kept in the entry's reserved metadata
 * `@s3-tagging` as a URL-encoded query string (`k1=v1&k2=v2`, the form of the `x-amz-tagging` header), so they
 * travel with the entry's metadata (Kodo copy and move keep them; S3 CopyObject keeps them under either metadata
 * directive). A reserved name (`@…`) is no HTTP header name, so no download serves it as a header.
 *
 * Limits (S3's): at most 10 tags per object, keys 1..128 characters, values 0..256; keys unique. Violations →
 * InvalidTag (400).
 */
import { S3Errors } from './errors.js';
import { textOf, type XmlNode } from './xml.js';

/** Reserved metadata name of an entry's tags, and reading them (the domain's: the lifecycle sweeper reads them too). */
export { TAGGING_META, tagsOfMeta } from '../objects/entry-tags.js';

/** Most tags on one object. */
export const MAX_OBJECT_TAGS = 10;

/** One tag. */
export type Tag = [key: string, value: string];

/** Checks a tag set against S3's limits (`max` tags); InvalidTag otherwise. */
export function checkTags(tags: Tag[], max = MAX_OBJECT_TAGS): Tag[] {
  if (tags.length > max) throw S3Errors.InvalidTag(`Object tags cannot be greater than ${max}`);
  const seen = new Set<string>();
  for (const [k, v] of tags) {
    if ([...k].length < 1 || [...k].length > 128) throw S3Errors.InvalidTag('The TagKey you have provided is invalid');
    if ([...v].length > 256) throw S3Errors.InvalidTag('The TagValue you have provided is invalid');
    if (seen.has(k)) throw S3Errors.InvalidTag('Cannot provide multiple Tags with the same key');
    seen.add(k);
  }
  return tags;
}

/** The tags of an `x-amz-tagging` header (URL-encoded query string). */
export function tagsOfHeader(value: string): Tag[] {
  return checkTags([...new URLSearchParams(value)]);
}

/** The stored form of a tag set ('' for none). */
export function encodeTags(tags: Tag[]): string {
  return new URLSearchParams(tags).toString();
}


/** The tags of a parsed `<Tagging><TagSet><Tag><Key/><Value/></Tag>…</TagSet></Tagging>`; MalformedXML otherwise. */
export function tagsOfXml(doc: Record<string, XmlNode>, max = MAX_OBJECT_TAGS): Tag[] {
  const root = doc.Tagging;
  if (root === undefined || typeof root === 'string' || Array.isArray(root)) throw S3Errors.MalformedXML();
  const set = root.TagSet;
  if (set === undefined) throw S3Errors.MalformedXML();
  if (typeof set === 'string' || Array.isArray(set)) {
    if (set === '' || (typeof set === 'string' && set.trim() === '')) return [];
    throw S3Errors.MalformedXML();
  }
  const list = set.Tag;
  if (list === undefined) return [];
  const tags: Tag[] = [];
  for (const t of Array.isArray(list) ? list : [list]) {
    if (typeof t === 'string' || Array.isArray(t)) throw S3Errors.MalformedXML();
    const key = textOf(t.Key);
    const value = textOf(t.Value) ?? '';
    if (key === undefined) throw S3Errors.MalformedXML();
    tags.push([key, value]);
  }
  return checkTags(tags, max);
}
