/**
 * Original protection (docs/development/kodo-protocol.md §8.6 `POST /accessMode/<bucket>/mode/<0|1>`, SDK `putBucketAccessStyleMode`;
 * bucketInfo `protected`). With mode 1 an unsigned download may only ask for a style of the bucket:
 * - served: `<key><sep><style>` and `?style/<name>` (exactly one style, nothing after it);
 * - refused (403 `originalProtected`): the original itself, raw fops (`?imageView2/…`, `?imageInfo`), and a style
 *   followed by further fops (`<key>-thumb?imageInfo`, `?style/thumb|imageMogr2/…`), whose output could recover
 *   what the style hides;
 * - signed requests see everything, raw fops included (as Aliyun OSS and JD Cloud document for their "原图保护"; Kodo
 *   does not say): a valid private download URL (`e`/`token` by a key with access to the bucket) or a sync saveas
 *   signed by such a key. On a private bucket every download is signed, so protection changes nothing there.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord } from '../ports/meta.js';

/** Switches original protection. 631 when the bucket is missing. */
export async function setProtected(g: Granary, bucket: string, on: boolean): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (on) next.protected = true;
    else delete next.protected;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** Whether a download-URL pipeline is exactly one `style/<name>` stage. */
export function isStyleOnly(pipeline: string | undefined): boolean {
  return pipeline !== undefined && /^style\/[^|]+$/.test(pipeline);
}

/**
 * Refuses (403) what original protection hides. `signed`: the request carries a verified signature of a key with
 * access to the bucket; `styleOnly`: it asks for exactly one style and nothing more.
 */
export function checkOriginalAccess(bucket: Pick<BucketRecord, 'settings'>, req: { signed: boolean; styleOnly: boolean }): void {
  if (bucket.settings.protected === true && !req.signed && !req.styleOnly) throw Errors.originalProtected();
}
