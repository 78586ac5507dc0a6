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
import { checkCond, type Cond } from './cond.js';
import type { EntryRef } from './ref.js';

/** Deletes `ref`; with `cond`, only when the entry matches it (608 otherwise, checked in the deleting transaction). */
export async function deleteEntry(g: Granary, ref: EntryRef, actor?: EventActor, cond?: Cond): Promise<void> {
  const events = await eventsFor(g, { event: 'delete', at: ref, actor });
  const check = cond ? (rec: ObjectRecord): void => checkCond(cond, rec) : undefined;
  const out = await g.meta.deleteObject(ref.bucket, ref.key, nowSeconds(g.clock), events, check);
  await releaseBlobs(g, out.freedBlobs);
  if (out.result === 'missing') throw Errors.noSuchEntry();
}
