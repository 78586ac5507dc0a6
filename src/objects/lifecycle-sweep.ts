/**
 * The lifecycle-rule part of the expiry sweeper: deletes for real the entries a bucket's lifecycle rule has
 * deleted (reads already treat them as absent, so this reclaims space), and frees their blobs.
 *
 * Cost: a rule's deletions are "keys under its prefix (minus longer rule prefixes) put before a cutoff", and the
 * cutoff (`putTimeCutoff`) only moves at CST midnight, because rule dates are CST midnights. So each rule's key
 * range is walked once per cutoff — once a day, and again only when the rule changes or the server restarts —
 * through the (bucket, key) index in steps of at most `SCAN` keys, one short transaction each (writers go on between
 * steps). Sweeps in between cost one look at each bucket's rules. A million-object prefix is read once a day, never
 * once a minute. An entry moved into a rule's prefix with an old putTime between two walks is absent to reads at
 * once and deleted by the next day's walk (or when an operation touches it).
 */
import { putTimeCutoff, shadowingPrefixes } from '../buckets/lifecycle-rules.js';
import type { Granary } from '../context.js';
import { nowSeconds } from '../ports/clock.js';
import { releaseBlobs } from './blobs.js';

/** Keys examined per step (one transaction). */
const SCAN = 1000;

/** Per server: walk id (bucket, prefix, excluded prefixes) → the cutoff it last completed with. */
const completed = new WeakMap<Granary, Map<string, bigint>>();

/**
 * Deletes every entry the buckets' lifecycle rules have deleted by now, walking only the rule ranges whose cutoff
 * moved (or that are new) since their last complete walk; returns how many entries were deleted.
 */
export async function sweepRuleDeletions(g: Granary): Promise<number> {
  const nowSec = nowSeconds(g.clock);
  const done = completed.get(g) ?? new Map<string, bigint>();
  completed.set(g, done);
  const current = new Set<string>();
  let total = 0;
  for (const bucket of await g.meta.listBuckets()) {
    const rules = bucket.settings.lifecycleRules ?? [];
    for (const rule of rules) {
      if (rule.deleteAfterDays <= 0) continue;
      const exclude = shadowingPrefixes(rules, rule);
      const putTimeBefore = putTimeCutoff(rule.deleteAfterDays, nowSec);
      const id = JSON.stringify([bucket.name, rule.prefix, exclude]);
      current.add(id);
      if (done.get(id) === putTimeBefore) continue;
      let after: string | undefined;
      for (;;) {
        const step = await g.meta.deleteUnderPrefix(bucket.name, { prefix: rule.prefix, exclude, putTimeBefore }, after, SCAN);
        await releaseBlobs(g, step.freedBlobs);
        total += step.deleted;
        if (step.next === undefined) break;
        after = step.next;
      }
      done.set(id, putTimeBefore);
    }
  }
  // Walks of rules since changed or removed are forgotten.
  for (const id of done.keys()) if (!current.has(id)) done.delete(id);
  return total;
}
