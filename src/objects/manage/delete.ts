/**
 * delete (protocol.md §8.1): removes an entry; its blob is freed when no other entry shares it. 612 when missing.
 * The bucket's `delete` event notifications are written with the deletion.
 */
import type { Granary } from '../../context.js';
import { eventsFor, type EventActor } from '../../events/outbox.js';
import { Errors } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import { releaseBlobs } from '../blobs.js';
import type { EntryRef } from './ref.js';

export async function deleteEntry(g: Granary, ref: EntryRef, actor?: EventActor): Promise<void> {
  const events = await eventsFor(g, { event: 'delete', at: ref, actor });
  const out = await g.meta.deleteObject(ref.bucket, ref.key, nowSeconds(g.clock), events);
  await releaseBlobs(g, out.freedBlobs);
  if (out.result === 'missing') throw Errors.noSuchEntry();
}
