/** stat (docs/development/kodo-protocol.md §8.1–8.2): the entry's attributes; 612 when missing or expired. */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import { statJson } from '../entry-json.js';
import { findLiveObject } from '../read.js';
import type { EntryRef } from './ref.js';

/** The stat answer of a live entry (putTime a bigint: serialise with toJson). 612 when missing. */
export async function statEntry(g: Granary, ref: EntryRef, needParts = false): Promise<Record<string, unknown>> {
  const rec = await findLiveObject(g, ref.bucket, ref.key);
  if (!rec) throw Errors.noSuchEntry();
  return statJson(rec, nowSeconds(g.clock), needParts);
}
