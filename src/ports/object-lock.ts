/**
 * Object lock (WORM) shared by the MetaStore port and its callers (docs/reference/versioning.md, "Object lock";
 * AWS: *Locking objects with Object Lock*, PutObjectLockConfiguration, PutObjectRetention, PutObjectLegalHold).
 *
 * - A bucket's lock configuration (`BucketSettings.objectLock`): set once when the bucket is created with
 *   `x-amz-bucket-object-lock-enabled: true` (its versioning is Enabled then and can never be Suspended), with an
 *   optional default retention (mode and Days or Years) applied to every new version written without one.
 * - A version's lock (`ObjectRecord.lock`): its retention (mode, retain-until as Unix milliseconds) and its legal
 *   hold. Kept on the version record (the current one in `objects`, noncurrent ones in `object_versions`).
 * - The rule (`lockRefusal`): a version under a legal hold, or under COMPLIANCE retention until a future date, cannot
 *   be destroyed by anyone; under GOVERNANCE retention, only by a caller allowed `s3:BypassGovernanceRetention` who
 *   asks for it (`x-amz-bypass-governance-retention: true`).
 */

/** A retention mode (AWS's names). */
export type LockMode = 'GOVERNANCE' | 'COMPLIANCE';

/** Whether `text` is a retention mode. */
export function isLockMode(text: string): text is LockMode {
  return text === 'GOVERNANCE' || text === 'COMPLIANCE';
}

/** A version's lock: retention (`mode` with `retainUntil`, Unix ms) and legal hold. Absent fields = none. */
export interface ObjectLock {
  mode?: LockMode;
  /** Unix milliseconds: the version is protected until then (exclusive). */
  retainUntil?: number;
  legalHold?: boolean;
}

/** A bucket's default retention: `mode` for `days` or `years` (exactly one of them, ≥ 1). */
export interface DefaultRetention {
  mode: LockMode;
  days?: number;
  years?: number;
}

/** A bucket's object lock configuration (`BucketSettings.objectLock`). */
export interface ObjectLockConfig {
  enabled: true;
  rule?: DefaultRetention;
}

const DAY_MS = 86_400_000;

/**
 * The retain-until (Unix ms) of a new version written at `nowMs` under the default retention `rule`: `days` × 24 h,
 * or `years` × 365 days (AWS counts a retention year as 365 days).
 */
export function defaultRetainUntil(rule: DefaultRetention, nowMs: number): number {
  return nowMs + (rule.days ?? (rule.years ?? 0) * 365) * DAY_MS;
}

/**
 * The lock a new version gets in a bucket with `config`: the one asked for (`asked`, from the request's lock
 * headers) — a retention asked for wins over the default, whose mode and period otherwise apply — or undefined.
 */
export function lockOfNewVersion(config: ObjectLockConfig | undefined, asked: ObjectLock | undefined, nowMs: number): ObjectLock | undefined {
  if (!config) return undefined;
  const lock: ObjectLock = { ...asked };
  if (lock.mode === undefined && config.rule) {
    lock.mode = config.rule.mode;
    lock.retainUntil = defaultRetainUntil(config.rule, nowMs);
  }
  if (lock.mode === undefined) delete lock.retainUntil;
  if (!lock.legalHold) delete lock.legalHold;
  return Object.keys(lock).length ? lock : undefined;
}

/** Why a version cannot be destroyed (or its retention lessened). */
export type LockRefusal = { reason: 'legal-hold' } | { reason: 'retention'; mode: LockMode; until: number };

/**
 * Whether a version with `lock` may be destroyed at `nowMs`: undefined when it may; else why not. A legal hold
 * always refuses; retention refuses until `retainUntil` — GOVERNANCE not when `bypassGovernance` (the caller asked
 * for the bypass and is allowed it), COMPLIANCE always.
 */
export function lockRefusal(lock: ObjectLock | undefined, nowMs: number, bypassGovernance: boolean): LockRefusal | undefined {
  if (!lock) return undefined;
  if (lock.legalHold) return { reason: 'legal-hold' };
  if (lock.mode && lock.retainUntil !== undefined && lock.retainUntil > nowMs) {
    if (lock.mode === 'GOVERNANCE' && bypassGovernance) return undefined;
    return { reason: 'retention', mode: lock.mode, until: lock.retainUntil };
  }
  return undefined;
}

/**
 * Whether replacing a version's retention `cur` by `next` at `nowMs` changes it other than by extending it (a
 * shorter date, a removal, or another mode while it is in force): refused like a destruction (`lockRefusal`'s rule
 * on the current retention, the legal hold aside) — COMPLIANCE always, GOVERNANCE without the bypass (GOVERNANCE →
 * COMPLIANCE included, as radosgw and Ceph's s3-tests `test_object_lock_changing_mode_from_governance_*` have it).
 * Extending it in the same mode is always allowed.
 */
export function retentionChangeRefusal(cur: ObjectLock | undefined, next: ObjectLock, nowMs: number, bypassGovernance: boolean): LockRefusal | undefined {
  if (!cur?.mode || cur.retainUntil === undefined || cur.retainUntil <= nowMs) return undefined;
  const lessened = next.mode === undefined || next.retainUntil === undefined || next.retainUntil < cur.retainUntil || next.mode !== cur.mode;
  if (!lessened) return undefined;
  return lockRefusal({ mode: cur.mode, retainUntil: cur.retainUntil }, nowMs, bypassGovernance);
}

/** The retain-until date of a refusal as AWS writes it (ISO 8601, UTC). */
export function refusalText(r: LockRefusal): string {
  return r.reason === 'legal-hold'
    ? 'the object version is under a legal hold'
    : `the object version is protected by ${r.mode} retention until ${new Date(r.until).toISOString()}`;
}
