/**
 * Two bucket settings that are stored and reported only (bucketInfo `remark` and `no_index_page`, docs/development/kodo-protocol.md
 * §8.6): the remark (`PUT /buckets/<bucket>?remark`, the Go SDK's `SetRemark`) and the index-page flag
 * (`POST /noIndexPage?bucket=&noIndexPage=<0|1>`, the Java and Go SDKs'). Granary serves no default index page
 * either way.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';

/** Longest remark, characters. */
export const MAX_REMARK_LENGTH = 1000;

/** The remark of a `PUT /buckets/<bucket>?remark` JSON body `{"remark":"…"}`; 400 when it is not that. */
export function parseRemark(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw Errors.badBucketRemark('the body is not JSON');
  }
  const remark = (body as { remark?: unknown } | null)?.remark;
  if (typeof remark !== 'string') throw Errors.badBucketRemark('the body must be {"remark":"…"}');
  if (remark.length > MAX_REMARK_LENGTH) throw Errors.badBucketRemark(`longer than ${MAX_REMARK_LENGTH} characters`);
  return remark;
}

/** Sets the remark ('' removes it). 631 when the bucket is missing. */
export async function setBucketRemark(g: Granary, bucket: string, remark: string): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (remark !== '') next.remark = remark;
    else delete next.remark;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** Sets the index-page flag (true = `noIndexPage=1`). 631 when the bucket is missing. */
export async function setNoIndexPage(g: Granary, bucket: string, noIndexPage: boolean): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (noIndexPage) next.noIndexPage = true;
    else delete next.noIndexPage;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}
