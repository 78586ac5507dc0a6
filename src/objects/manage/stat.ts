/**
 * stat (docs/development/kodo-protocol.md §8.1–8.2): the entry's attributes; 612 when missing or expired. In a
 * bucket with replication rules it adds Granary's `replicationStatus` (`PENDING`, `COMPLETED`, `FAILED`, as S3's
 * `x-amz-replication-status`; absent when the entry has not been marked: docs/guides/replication.md).
 */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { nowSeconds } from '../../ports/clock.js';
import { statJson } from '../entry-json.js';
import { replicationStatus } from '../../ports/replication.js';
import { isLive } from '../read.js';
import type { EntryRef } from './ref.js';

/** The stat answer of a live entry (putTime a bigint: serialise with toJson). 612 when missing. */
export async function statEntry(g: Granary, ref: EntryRef, needParts = false): Promise<Record<string, unknown>> {
  const found = await g.meta.getBucketAndObject(ref.bucket, ref.key);
  const rec = found.object;
  if (!isLive(g, rec)) throw Errors.noSuchEntry();
  const out = statJson(rec, nowSeconds(g.clock), needParts);
  if (found.bucket?.settings.replication?.length) {
    const status = replicationStatus(await g.meta.replication.statusOf(ref.bucket, ref.key));
    if (status) out.replicationStatus = status;
  }
  return out;
}
