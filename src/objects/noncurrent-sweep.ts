/**
 * The versioned-bucket part of the expiry sweeper (expiry.ts): applies the lifecycle rules that act on a key's
 * history (buckets/s3-lifecycle.ts `versionRulePlans`; AWS "Lifecycle configuration elements",
 * `NoncurrentVersionExpiration`, `ExpiredObjectDeleteMarker`; docs/reference/versioning.md):
 * - a noncurrent version or noncurrent delete marker is deleted for good once it has been noncurrent (since its
 *   successor was created, the successor's version id holding that time) for NoncurrentDays, rounded up to UTC
 *   midnight, and — with NewerNoncurrentVersions m — only when m newer noncurrent versions of the key exist;
 * - a delete marker that is its key's only version is removed (ExpiredObjectDeleteMarker, or an Expiration by Days
 *   once the marker is that old).
 * Only buckets whose versioning was ever set are walked. Each rule's prefix is walked once per UTC day (again when
 * the rule changes or the server restarts) through ListObjectVersions pages of 1000 — the due set only changes at
 * UTC midnight. Each removal re-checks in its own transaction that the version is still noncurrent (or the marker
 * still alone), so a key changed since it was listed is left alone; freed blobs are released.
 */
import { dueAfterDays, filterMatches, versionRulePlans, type VersionRulePlan } from '../buckets/s3-lifecycle.js';
import type { Granary } from '../context.js';
import { nowSeconds } from '../ports/clock.js';
import { sortIdSeconds, wireVersionId, type VersionRecord } from '../ports/versions.js';
import { isKodoError } from '../errors.js';
import { dailyWalks } from './daily-walks.js';
import { releaseBlobs } from './blobs.js';
import { versionGuard } from './retention.js';
import { tagsOfMeta } from './entry-tags.js';

/** Versions per listing page. */
const PAGE = 1000;

/** Per server: walk id (bucket, plan) → the UTC day it last completed. */
const completed = new WeakMap<Granary, Map<string, number>>();

/** Whether the noncurrent version `v`, noncurrent since `sinceSec` with `newer` newer noncurrent versions, is due. */
function noncurrentDue(plan: VersionRulePlan, v: VersionRecord, sinceSec: number, newer: number, nowSec: number): boolean {
  if (plan.noncurrentDays === undefined) return false;
  if (dueAfterDays(sinceSec, plan.noncurrentDays) > nowSec) return false;
  if (plan.newerVersions !== undefined && newer < plan.newerVersions) return false;
  const r = v.record;
  return filterMatches(plan.filter, { key: r.key, size: v.deleteMarker ? 0 : r.fsize, tags: v.deleteMarker ? [] : tagsOfMeta(r.meta) });
}

/** Permanently deletes one noncurrent version (still noncurrent, checked in its transaction); true when deleted. */
async function expireNoncurrent(g: Granary, bucket: string, v: VersionRecord): Promise<boolean> {
  let out: { deleted: boolean; freedBlobs: string[] };
  try {
    out = await g.meta.expireNoncurrentVersion(bucket, v.record.key, v.sortId, versionGuard(g));
  } catch (err) {
    // Under retention or a legal hold (objects/retention.ts): kept, as AWS's lifecycle keeps locked versions.
    if (isKodoError(err, 'objectLocked')) return false;
    throw err;
  }
  await releaseBlobs(g, out.freedBlobs);
  return out.deleted;
}

/** Removes a key's sole delete marker when the plan covers it at `nowSec` (still sole, checked in its transaction). */
async function removeSoleMarker(g: Granary, bucket: string, plan: VersionRulePlan, marker: VersionRecord, nowSec: number): Promise<boolean> {
  if (plan.markerDays === undefined) return false;
  if (plan.markerDays > 0 && dueAfterDays(sortIdSeconds(marker.sortId), plan.markerDays) > nowSec) return false;
  if (!filterMatches(plan.filter, { key: marker.record.key, size: 0, tags: [] })) return false;
  return g.meta.removeExpiredDeleteMarker(bucket, marker.record.key, marker.sortId);
}

/** Walks the plan's prefix through ListObjectVersions and applies it; returns how many versions were removed. */
async function sweepPlan(g: Granary, bucket: string, plan: VersionRulePlan, nowSec: number): Promise<number> {
  const prefix = plan.filter.prefix ?? '';
  let removed = 0;
  // The key being walked: its newer neighbour's sort id, how many noncurrent versions were seen, the last version
  // kept (where the next page resumes), and its current delete marker while it is the only version seen.
  let key: string | undefined;
  let successor: string | undefined;
  let newer = 0;
  let kept: VersionRecord | undefined;
  let soleMarker: VersionRecord | undefined;
  const endKey = async (): Promise<void> => {
    if (soleMarker && (await removeSoleMarker(g, bucket, plan, soleMarker, nowSec))) removed++;
    soleMarker = undefined;
  };
  for (;;) {
    const after = kept ? { key: kept.record.key, versionId: wireVersionId(kept.record) } : undefined;
    const page = await g.meta.listVersions({ bucket, prefix, delimiter: '', ...(after ? { after } : {}), limit: PAGE });
    for (const e of page.entries) {
      if (e.kind !== 'version') continue;
      const v = e.version;
      if (v.record.key !== key) {
        await endKey();
        key = v.record.key;
        successor = undefined;
        newer = 0;
      }
      if (v.isLatest || successor === undefined) {
        successor = v.sortId;
        kept = v;
        soleMarker = v.isLatest && v.deleteMarker ? v : undefined;
        continue;
      }
      soleMarker = undefined;
      const since = sortIdSeconds(successor);
      successor = v.sortId;
      if (noncurrentDue(plan, v, since, newer++, nowSec) && (await expireNoncurrent(g, bucket, v))) removed++;
      else kept = v;
    }
    if (!page.more) {
      await endKey();
      return removed;
    }
  }
}

/**
 * Applies every versioned bucket's history rules now (see the module comment): each walked once per UTC day.
 * Returns how many versions and markers were removed.
 */
export async function sweepVersionRules(g: Granary): Promise<number> {
  const nowSec = nowSeconds(g.clock);
  const walks = dailyWalks(completed, g, nowSec);
  let total = 0;
  for (const bucket of await g.meta.listBuckets()) {
    if (!bucket.settings.versioning) continue;
    for (const plan of versionRulePlans(bucket.settings)) total += await walks.run([bucket.name, plan], () => sweepPlan(g, bucket.name, plan, nowSec));
  }
  walks.end();
  return total;
}
