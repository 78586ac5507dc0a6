/**
 * Bucket tags (Kodo's `bucketTagging` on the uc host; the Go SDK's `SetTagging`/`GetTagging`/`ClearTagging`, the
 * Python and PHP SDKs' bucket tagging calls), kept in the bucket settings (`tags`).
 *
 * Wire body of `PUT` and answer of `GET`: `{"Tags":[{"Key":"k","Value":"v"}, …]}` (`[]` when none). A `PUT`
 * replaces every tag. Rules (the Go SDK's documentation of SetTagging): at most MAX_TAGS tags; `Key` 1–64 bytes,
 * not starting with `kodo`, `Value` 1–128 bytes, both of letters, digits, space and `+ - = . _ : / @`; keys unique
 * (case-sensitive). A body breaking a rule → 400 `invalid bucket tagging: <what>`.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketTag } from '../ports/meta.js';

/** Most tags one bucket holds. */
export const MAX_TAGS = 10;
const MAX_KEY_BYTES = 64;
const MAX_VALUE_BYTES = 128;
const CHARS = /^[A-Za-z0-9 +\-=._:/@]+$/;

function bad(why: string): never {
  throw Errors.badBucketTagging(why);
}

function checkText(text: unknown, at: string, maxBytes: number): string {
  if (typeof text !== 'string' || text === '') bad(`${at} must be a non-empty string`);
  if (Buffer.byteLength(text) > maxBytes) bad(`${at} is longer than ${maxBytes} bytes`);
  if (!CHARS.test(text)) bad(`${at} may hold only letters, digits, space and + - = . _ : / @`);
  return text;
}

/** Parses the JSON text of a `PUT /bucketTagging` body into tags (see the module comment). */
export function parseTagging(text: string): BucketTag[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    bad('the body is not JSON');
  }
  const list = (body as { Tags?: unknown } | null)?.Tags;
  if (!Array.isArray(list)) bad('the body must be {"Tags":[{"Key":…,"Value":…}]}');
  if (list.length > MAX_TAGS) bad(`a bucket has at most ${MAX_TAGS} tags, got ${list.length}`);
  const tags: BucketTag[] = [];
  list.forEach((raw: unknown, i) => {
    const t = (typeof raw === 'object' && raw !== null ? raw : {}) as { Key?: unknown; Value?: unknown };
    const key = checkText(t.Key, `Tags[${i}].Key`, MAX_KEY_BYTES);
    if (key.toLowerCase().startsWith('kodo')) bad(`Tags[${i}].Key must not start with kodo`);
    if (tags.some((x) => x.key === key)) bad(`Tags[${i}].Key ${JSON.stringify(key)} is repeated`);
    tags.push({ key, value: checkText(t.Value, `Tags[${i}].Value`, MAX_VALUE_BYTES) });
  });
  return tags;
}

/** The `GET /bucketTagging` answer of stored tags. */
export function taggingJson(tags: BucketTag[] | undefined): { Tags: { Key: string; Value: string }[] } {
  return { Tags: (tags ?? []).map((t) => ({ Key: t.key, Value: t.value })) };
}

/** Replaces the bucket's tags (`[]` removes them). 631 when the bucket is missing. */
export async function setBucketTags(g: Granary, bucket: string, tags: BucketTag[]): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (tags.length > 0) next.tags = tags;
    else delete next.tags;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}
