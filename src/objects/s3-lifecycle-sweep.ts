/**
 * The S3-rule part of the expiry sweeper (expiry.ts): applies the bucket S3 lifecycle rules that are not Kodo
 * rules (buckets/s3-lifecycle.ts) — deletes the entries an enabled rule's Expiration (Days or Date) has expired,
 * exactly those matching its filter (prefix, tags, sizes), and aborts the multipart uploads an
 * AbortIncompleteMultipartUpload rule (Kodo rule or not) has timed out, freeing their parts.
 *
 * Cost: an expiry's due set only changes at UTC midnight (Days and Date both count in UTC days), so each rule's
 * prefix is walked once per UTC day (again when the rule changes or the server restarts), through listing pages of
 * 1000 keys; between walks a sweep costs one look at each bucket's rules. An object newly matching a rule (tagged,
 * uploaded after a Date) is deleted by the next day's walk, as S3's own lifecycle runs about once a day. Uploads are
 * looked at every sweep (they are few and short-lived). Each deletion re-checks the entry in its transaction (same
 * upload time, still matching), so an entry replaced since it was listed is left alone.
 */
import { filterMatches, filterNeedsEntry, s3RulesOf, sweepExpiry, uploadAbortDue } from '../buckets/s3-lifecycle.js';
import type { Granary } from '../context.js';
import { nowSeconds } from '../ports/clock.js';
import type { ObjectRecord, S3LifecycleRule } from '../ports/meta.js';
import { dailyWalks } from './daily-walks.js';
import { releaseBlobs } from './blobs.js';
import { tagsOfMeta } from './entry-tags.js';

/** Keys per listing page. */
const PAGE = 1000;

/** Per server: walk id (bucket, rule) → the UTC day it last completed. */
const completed = new WeakMap<Granary, Map<string, number>>();

/** Thrown inside a deletion's transaction when the entry no longer qualifies: nothing is deleted. */
class Changed extends Error {}

/** Whether the rule's expiry covers the entry at `nowSec`. */
function expires(rule: S3LifecycleRule, rec: ObjectRecord, nowSec: number): boolean {
  const due = sweepExpiry(rule, nowSec);
  if (due === undefined) return false;
  if ('putAtMostSec' in due && rec.putTime > BigInt(due.putAtMostSec) * 10_000_000n) return false;
  return filterMatches(rule.filter, { key: rec.key, size: rec.fsize, tags: tagsOfMeta(rec.meta) });
}

/** Walks the rule's prefix and deletes what its expiry covers; returns how many entries were deleted. */
async function expireByRule(g: Granary, bucket: string, rule: S3LifecycleRule, nowSec: number): Promise<number> {
  const prefix = rule.filter.prefix ?? '';
  let after: string | undefined;
  let deleted = 0;
  for (;;) {
    const page = await g.meta.listObjects({
      bucket,
      prefix,
      delimiter: '',
      ...(after !== undefined ? { after: { key: after, isPrefix: false } } : {}),
      limit: PAGE,
      nowSec,
    });
    for (const e of page.entries) {
      if (e.kind !== 'item') continue;
      after = e.item.key;
      if (!expires(rule, e.item, nowSec)) continue;
      const putTime = e.item.putTime;
      try {
        const r = await g.meta.deleteObject(bucket, e.item.key, nowSec, undefined, (live) => {
          if (live.putTime !== putTime || (filterNeedsEntry(rule.filter) && !expires(rule, live, nowSec))) throw new Changed();
        });
        await releaseBlobs(g, r.freedBlobs);
        if (r.result === 'deleted') deleted++;
      } catch (err) {
        if (!(err instanceof Changed)) throw err;
      }
    }
    if (!page.more || after === undefined) return deleted;
  }
}

/** Aborts the bucket's uploads under the rule's prefix started `days` or more (rounded to UTC midnight) ago. */
async function abortUploads(g: Granary, bucket: string, rule: S3LifecycleRule, days: number, nowSec: number): Promise<void> {
  let after: { key: string; id: string } | undefined;
  for (;;) {
    const uploads = await g.meta.sessions.listUploads(bucket, rule.filter.prefix ?? '', after, PAGE, nowSec);
    for (const u of uploads) {
      if (!uploadAbortDue(u.createdAt, days, nowSec)) continue;
      const { freedBlobs } = await g.meta.sessions.deleteUpload(u.id);
      await releaseBlobs(g, freedBlobs);
    }
    const last = uploads[uploads.length - 1];
    if (uploads.length < PAGE || last === undefined) return;
    after = { key: last.key ?? '', id: last.id };
  }
}

/**
 * Applies every bucket's S3-only lifecycle rules now (see the module comment): deletions walked once per UTC day
 * per rule, upload aborts every sweep. Returns how many entries were deleted.
 */
export async function sweepS3Rules(g: Granary): Promise<number> {
  const nowSec = nowSeconds(g.clock);
  const walks = dailyWalks(completed, g, nowSec);
  let total = 0;
  for (const bucket of await g.meta.listBuckets()) {
    for (const rule of s3RulesOf(bucket.settings)) {
      if (!rule.enabled) continue;
      if (rule.abortIncompleteUploadDays !== undefined) await abortUploads(g, bucket.name, rule, rule.abortIncompleteUploadDays, nowSec);
      if (sweepExpiry(rule, nowSec) === undefined) continue;
      total += await walks.run([bucket.name, rule], () => expireByRule(g, bucket.name, rule, nowSec));
    }
  }
  walks.end();
  return total;
}
