/**
 * copy and move (docs/development/kodo-protocol.md §8.1). Neither moves bytes: a copy adds a reference to the same blob, a move renames
 * the entry. Errors: 612 source missing, 631 target bucket missing, 614 target exists without `force`
 * (including source == target), 400 target key over 750 bytes, 403 the target bucket's quota (a copy, or a move
 * into another bucket, that would pass it; buckets/quota.ts). The `copy`/`move` event notifications of the
 * source's and the target's buckets are written with the change.
 */
import type { ObjectLock } from '../../ports/object-lock.js';
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { eventsFor, type EventActor } from '../../events/outbox.js';
import { MAX_KEY_BYTES } from '../../policy/scope.js';
import { quotaExceeded } from '../../buckets/quota.js';
import { nowSeconds } from '../../ports/clock.js';
import type { QuotaRefusal } from '../../ports/meta.js';
import { releaseBlobs } from '../blobs.js';
import type { EntryRef } from './ref.js';

function checkTargetKey(to: EntryRef): void {
  if (Buffer.byteLength(to.key, 'utf8') > MAX_KEY_BYTES) throw Errors.keyTooLong();
}

function outcome(
  out: { result: 'copied' | 'moved' | 'no-source' | 'no-bucket' | 'exists' | 'over-quota'; refusal?: QuotaRefusal },
  to: EntryRef,
): void {
  if (out.result === 'no-source') throw Errors.noSuchEntry();
  if (out.result === 'no-bucket') throw Errors.noSuchBucket(to.bucket);
  if (out.result === 'exists') throw Errors.fileExists();
  if (out.result === 'over-quota') throw quotaExceeded(to.bucket, out.refusal);
}

/**
 * Copies `from` to `to` (new putTime, same bytes, metadata and MIME). `from.versionId` copies that version (612 when
 * there is no such version or it is a delete marker), even onto its own key: restoring an old version. In a
 * versioned target bucket the replaced entry stays as a noncurrent version and the copy's `versionId` is answered.
 * The copy never carries the source's object lock: it gets `lock` (S3 CopyObject's lock headers) or the target
 * bucket's default retention (ports/object-lock.ts).
 */
export async function copyEntry(
  g: Granary,
  from: EntryRef & { versionId?: string },
  to: EntryRef,
  force: boolean,
  actor?: EventActor,
  lock?: ObjectLock,
): Promise<{ versionId?: string }> {
  checkTargetKey(to);
  const out = await g.meta.copyObject(from, to, {
    force,
    ...(lock ? { lock } : {}),
    nowSec: nowSeconds(g.clock),
    putTime: BigInt(g.clock.nowMs()) * 10000n,
    events: await eventsFor(g, { event: 'copy', at: from, dest: to, actor }),
  });
  await releaseBlobs(g, out.freedBlobs);
  outcome(out, to);
  return out.versionId !== undefined ? { versionId: out.versionId } : {};
}

/**
 * Moves (renames) `from` to `to`; the entry keeps its putTime and attributes. In a versioned source bucket the
 * source stays as a noncurrent version under a delete marker; in a versioned target bucket the moved entry is a
 * new version (the replaced one kept). Answers nothing (the shape of copyEntry's answer, for the batch tables).
 */
export async function moveEntry(g: Granary, from: EntryRef, to: EntryRef, force: boolean, actor?: EventActor): Promise<{ versionId?: string }> {
  checkTargetKey(to);
  const same = from.bucket === to.bucket && from.key === to.key;
  const events = await eventsFor(g, { event: 'move', at: from, dest: to, actor });
  const out = await g.meta.moveObject(from, to, { force, nowSec: nowSeconds(g.clock), events });
  await releaseBlobs(g, out.freedBlobs);
  outcome(same && out.result === 'moved' && !force ? { result: 'exists' } : out, to);
  return {};
}
