/**
 * Attribute changes of an entry (docs/development/kodo-protocol.md §8.1): chgm (MIME and x-qn-meta, with cond), chtype, chstatus,
 * deleteAfterDays, lifecycle (with cond) and restoreAr. Each is one MetaStore transaction; 612 when the entry
 * is missing or expired, 608 when `cond` does not match, 400 for bad values. chstatus (`disable`/`enable`) and
 * restoreAr (`restore:completed`) write the bucket's event notifications in that transaction.
 */
import type { Granary } from '../../context.js';
import { Errors } from '../../errors.js';
import { eventsFor, type EventActor } from '../../events/outbox.js';
import type { EventName } from '../../events/names.js';
import { expiryFromDays } from '../../policy/expiry.js';
import { nowSeconds } from '../../ports/clock.js';
import type { ObjectRecord, Transitions } from '../../ports/meta.js';
import { releaseBlobs } from '../blobs.js';
import { effectiveType } from '../entry-json.js';
import { checkCond, type Cond } from './cond.js';
import type { EntryRef } from './ref.js';

/**
 * The stored record `rec` with the lifecycle transitions due at `nowSec` carried out: `type` becomes the class
 * reached by the transitions of `effective` (the same entry with its bucket's lifecycle rules applied) and the
 * entry's own due transitions are dropped, so a later chtype or a cancelled (-1) transition neither undoes nor
 * redoes them. A rule's transitions stay with the rule: one that is due moves a lower class up again on reads.
 */
function settleTransitions(rec: ObjectRecord, effective: ObjectRecord, nowSec: number): ObjectRecord {
  const t = effective.transitions;
  if (!t || !Object.values(t).some((at) => at !== undefined && at <= nowSec)) return rec;
  const pending: Transitions = {};
  for (const [name, at] of Object.entries(rec.transitions ?? {}) as Array<[keyof Transitions, number | undefined]>) {
    if (at !== undefined && at > nowSec) pending[name] = at;
  }
  return { ...rec, type: effectiveType(effective, nowSec), transitions: pending };
}

/** Applies `mutate` to a live entry (its due transitions settled first); 612 when missing. `notify`: its event. */
async function update(
  g: Granary,
  ref: EntryRef,
  mutate: (rec: ObjectRecord) => ObjectRecord,
  notify?: { event: EventName; actor: EventActor | undefined },
): Promise<void> {
  const nowSec = nowSeconds(g.clock);
  // Changes without a notification still replicate (the `silent` change marks replication only).
  const events = await eventsFor(g, notify ? { event: notify.event, at: ref, actor: notify.actor } : { event: 'put', at: ref, silent: true });
  const out = await g.meta.updateObject(
    ref.bucket,
    ref.key,
    nowSec,
    (rec, effective) => mutate(settleTransitions(rec, effective, nowSec)),
    events,
  );
  await releaseBlobs(g, out.freedBlobs);
  if (out.result === 'missing') throw Errors.noSuchEntry();
}

/** Upload time of an entry in ms (lifecycle days count from it). */
function putTimeMs(rec: ObjectRecord): number {
  return Number(rec.putTime / 10000n);
}

/**
 * chgm: sets the MIME type and/or metadata. A metadata value '' deletes that name; names starting with `!`
 * override the response header of that name on download (changeHeaders).
 */
export async function changeMeta(
  g: Granary,
  ref: EntryRef,
  change: { mimeType?: string; meta: Record<string, string>; cond?: Cond },
): Promise<void> {
  await update(g, ref, (rec) => {
    checkCond(change.cond, rec, Errors.chgmConditionFailed);
    const meta = { ...rec.meta };
    for (const [name, value] of Object.entries(change.meta)) {
      if (value === '') delete meta[name];
      else meta[name] = value;
    }
    return { ...rec, mimeType: change.mimeType || rec.mimeType, meta };
  });
}

/** Largest storage class: 0 standard, 1 IA, 2 archive, 3 deep archive, 4 archive-IR, 5 Intelligent Tiering. */
export const MAX_STORAGE_TYPE = 5;

/**
 * chtype: storage class 0 standard, 1 IA, 2 archive, 3 deep archive, 4 archive-IR, 5 Intelligent Tiering (stored
 * and listed; read like standard). 400 outside 0..5; with `cond`, 608 unless the entry matches.
 */
export async function changeType(g: Granary, ref: EntryRef, type: number, cond?: Cond): Promise<void> {
  if (!Number.isInteger(type) || type < 0 || type > MAX_STORAGE_TYPE) throw Errors.badRequest(`type must be 0..${MAX_STORAGE_TYPE}`);
  await update(g, ref, (rec) => {
    checkCond(cond, rec);
    return { ...rec, type };
  });
}

/** chstatus: 0 enabled, 1 disabled (a disabled entry answers 403 on download); with `cond`, 608 unless it matches. */
export async function changeStatus(g: Granary, ref: EntryRef, status: number, actor?: EventActor, cond?: Cond): Promise<void> {
  if (status !== 0 && status !== 1) throw Errors.badRequest('status must be 0 or 1');
  await update(
    g,
    ref,
    (rec) => {
      checkCond(cond, rec);
      return { ...rec, status };
    },
    { event: status === 1 ? 'disable' : 'enable', actor },
  );
}

/**
 * deleteAfterDays: the entry expires `days` after its upload (rounded up to CST midnight); 0 cancels. With `cond`,
 * 608 unless the entry matches.
 */
export async function setDeleteAfterDays(g: Granary, ref: EntryRef, days: number, cond?: Cond): Promise<void> {
  if (!Number.isInteger(days) || days < 0) throw Errors.badRequest('days must be a non-negative integer');
  await update(g, ref, (rec) => {
    checkCond(cond, rec);
    const next = { ...rec };
    if (days === 0) delete next.expireAt;
    else next.expireAt = expiryFromDays(putTimeMs(rec), days);
    return next;
  });
}

/** Days per lifecycle field: 0 leaves it unchanged, -1 cancels it, n > 0 schedules it n days after upload. */
export interface LifecycleDays {
  toIA: number;
  toIntelligentTiering: number;
  toArchiveIR: number;
  toArchive: number;
  toDeepArchive: number;
  deleteAfter: number;
}

/** lifecycle: schedules (or cancels) transitions and expiry; transitions are reported by stat and applied to its `type`. */
export async function setLifecycle(g: Granary, ref: EntryRef, days: LifecycleDays, cond?: Cond): Promise<void> {
  for (const [name, n] of Object.entries(days)) {
    if (!Number.isInteger(n) || n < -1) throw Errors.badRequest(`${name} must be -1, 0 or a positive integer`);
  }
  await update(g, ref, (rec) => {
    checkCond(cond, rec);
    const at = (n: number, current: number | undefined): number | undefined =>
      n === 0 ? current : n === -1 ? undefined : expiryFromDays(putTimeMs(rec), n);
    const t = rec.transitions ?? {};
    const transitions: Transitions = {};
    const set = (name: keyof Transitions, value: number | undefined): void => {
      if (value !== undefined) transitions[name] = value;
    };
    set('toIA', at(days.toIA, t.toIA));
    set('toIntelligentTiering', at(days.toIntelligentTiering, t.toIntelligentTiering));
    set('toArchiveIR', at(days.toArchiveIR, t.toArchiveIR));
    set('toArchive', at(days.toArchive, t.toArchive));
    set('toDeepArchive', at(days.toDeepArchive, t.toDeepArchive));
    const next: ObjectRecord = { ...rec, transitions };
    const expireAt = at(days.deleteAfter, rec.expireAt);
    if (expireAt === undefined) delete next.expireAt;
    else next.expireAt = expireAt;
    return next;
  });
}

/**
 * restoreAr: makes an archived entry readable for `freezeAfterDays` (1..7) days from now (`restoreUntil`, Unix
 * seconds; calling it again extends the restore). On one node archive classes are metadata only, so the restore
 * completes at once (restoreStatus 2); downloads and fops refuse an Archive/Deep Archive entry before it and
 * after it lapses (403). 400 for a non-archive entry.
 */
export async function restoreArchive(g: Granary, ref: EntryRef, freezeAfterDays: number, actor?: EventActor): Promise<void> {
  if (!Number.isInteger(freezeAfterDays) || freezeAfterDays < 1 || freezeAfterDays > 7) {
    throw Errors.badRequest('freezeAfterDays must be 1..7');
  }
  const nowSec = nowSeconds(g.clock);
  await update(g, ref, (rec) => {
    const type = effectiveType(rec, nowSec);
    if (type !== 2 && type !== 3) throw Errors.notArchived();
    return { ...rec, restoreStatus: 2, restoreUntil: nowSec + freezeAfterDays * 86400 };
  }, { event: 'restore:completed', actor });
}
