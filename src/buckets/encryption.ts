/**
 * A bucket's default encryption (S3 PutBucketEncryption, s3api/ops/bucket-encryption.ts; docs/reference/encryption.md):
 * `settings.encryption` = 'AES256' makes every new object of the bucket an SSE-S3 object — through the S3 API and
 * the Kodo API alike (objects/put-object.ts `withDefaultEncryption`) — unless the upload asks for SSE-C. Objects
 * are encrypted at rest whenever GRANARY_MASTER_KEY_FILE is set; the default decides what they are recorded and
 * answered as (`x-amz-server-side-encryption: AES256`), and is refused without a master key.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketSettings } from '../ports/meta.js';

/** The entry's reserved metadata naming its encryption: 'AES256' (SSE-S3) or `C:<salt>:<hmac>` (SSE-C, s3api/sse.ts). */
export const SSE_META = '@s3-sse';

/** `meta` with the bucket's default encryption added when the upload chose none (a new object, not copied). */
export function withDefaultEncryption(settings: BucketSettings, meta: Record<string, string>): Record<string, string> {
  if (!settings.encryption || meta[SSE_META] !== undefined) return meta;
  return { ...meta, [SSE_META]: settings.encryption };
}

/** Sets (or with undefined removes) the bucket's default encryption. Errors: 631 noSuchBucket. */
export async function setBucketEncryption(g: Granary, bucket: string, algorithm: 'AES256' | undefined): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (algorithm) next.encryption = algorithm;
    else delete next.encryption;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}
