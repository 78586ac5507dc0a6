/**
 * Resources named by fop parameters (watermark images, protocol.md §10.5): not yet supported; the watermark
 * work fills this in (an http(s) URL through the outbound guard, or an entry of the source's bucket).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { BucketRecord } from '../store/meta.js';

export async function fetchResource(_g: Granary, _bucket: BucketRecord, url: string, _maxBytes: number, _signal: AbortSignal): Promise<Buffer> {
  throw Errors.badRequest(`fop: cannot fetch ${url}: resources are not supported yet`);
}
