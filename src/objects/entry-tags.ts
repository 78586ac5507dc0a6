/**
 * An entry's S3 object tags as stored (docs/development/kodo-protocol.md §18.10): the reserved metadata
 * `@s3-tagging`, a URL-encoded query string (`k1=v1&k2=v2`, the form of the `x-amz-tagging` header). The S3 door
 * (s3api/tagging.ts) writes and checks them; the lifecycle sweeper (s3-lifecycle-sweep.ts) reads them.
 */

/** Reserved metadata name of an entry's tags. */
export const TAGGING_META = '@s3-tagging';

/** The tags kept in an entry's metadata, as [key, value] pairs in their stored order. */
export function tagsOfMeta(meta: Record<string, string>): Array<[key: string, value: string]> {
  const v = meta[TAGGING_META];
  return v ? [...new URLSearchParams(v)] : [];
}
