/**
 * delete (docs/development/kodo-protocol.md §8.1): removes an entry (with `cond`, only when it matches: 608); its blob is freed when no other entry shares it. 612 when missing.
 * The bucket's `delete` event notifications are written with the deletion.
 */
import type { Granary } from '../../context.js';
import { eventsFor, type EventActor } from '../../events/outbox.js';
import { Errors } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import type { ObjectRecord } from '../../ports/meta.js';
import { releaseBlobs } from '../blobs.js';
import { versionGuard, type RetentionCaller } from '../retention.js';
import { checkCond, type Cond } from './cond.js';
import type { EntryRef } from './ref.js';

/**
 * Deletes `ref`; with `cond`, only when the entry matches it (608 otherwise, checked in the deleting transaction).
 * In a versioned bucket (docs/reference/versioning.md) nothing is destroyed: the entry becomes a noncurrent version
 * under a new delete marker, whose wire id is answered (`marker`); `markMissing` (S3 DeleteObject) adds the marker
 * even when the key has no entry, instead of 612.
 */
export async function deleteEntry(
  g: Granary,
  ref: EntryRef,
  actor?: EventActor,
  cond?: Cond,
  opts: { markMissing?: boolean } = {},
): Promise<{ marker?: string }> {
  const events = await eventsFor(g, { event: 'delete', at: ref, actor });
  const check = cond ? (rec: ObjectRecord): void => checkCond(cond, rec) : undefined;
  const out = await g.meta.deleteObject(ref.bucket, ref.key, nowSeconds(g.clock), events, check, opts);
  await releaseBlobs(g, out.freedBlobs);
  if (out.result === 'missing') throw Errors.noSuchEntry();
  return out.marker !== undefined ? { marker: out.marker } : {};
}

/**
 * Permanently deletes one version of `ref` (S3 DeleteObject with versionId; docs/reference/versioning.md): its blob
 * is freed when no other entry or version shares it. `deleted` false when there is no such version (S3 answers
 * success then); `deleteMarker` when the version was a delete marker.
 */
export async function deleteVersion(
  g: Granary,
  ref: EntryRef,
  versionId: string,
  actor?: EventActor,
  caller: RetentionCaller = {},
): Promise<{ deleted: boolean; deleteMarker: boolean }> {
  const events = await eventsFor(g, { event: 'delete', at: ref, actor });
  const out = await g.meta.deleteVersion(ref.bucket, ref.key, versionId, events, versionGuard(g, caller));
  await releaseBlobs(g, out.freedBlobs);
  return { deleted: out.result === 'deleted', deleteMarker: out.deleteMarker };
}
