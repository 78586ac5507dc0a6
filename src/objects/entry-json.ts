/**
 * The JSON shapes of an entry: the stat answer (docs/development/kodo-protocol.md §8.2) and a list item (§8.3). `putTime` stays a
 * bigint (100-ns units); serialise with bigint-json.ts `toJson`. Reserved metadata (`@…`) is left out (visibleMeta).
 */
import type { ObjectRecord } from '../ports/meta.js';

/** Storage class after the lifecycle transitions due at `nowSec` (Unix seconds). */
export function effectiveType(rec: ObjectRecord, nowSec: number): number {
  const t = rec.transitions;
  if (!t) return rec.type;
  // Later classes win: deep archive (3) > archive (2) > archive-IR (4) > Intelligent Tiering (5) > IA (1).
  if (t.toDeepArchive !== undefined && t.toDeepArchive <= nowSec) return 3;
  if (t.toArchive !== undefined && t.toArchive <= nowSec) return rec.type === 3 ? 3 : 2;
  if (t.toArchiveIR !== undefined && t.toArchiveIR <= nowSec && (rec.type === 0 || rec.type === 1)) return 4;
  if (t.toIntelligentTiering !== undefined && t.toIntelligentTiering <= nowSec && (rec.type === 0 || rec.type === 1)) return 5;
  if (t.toIA !== undefined && t.toIA <= nowSec && rec.type === 0) return 1;
  return rec.type;
}

/** Fields common to stat answers and list items. */
function common(rec: ObjectRecord, nowSec: number): Record<string, unknown> {
  const out: Record<string, unknown> = {
    fsize: rec.fsize,
    hash: rec.hash,
    mimeType: rec.mimeType,
    putTime: rec.putTime,
    type: effectiveType(rec, nowSec),
  };
  if (rec.md5) out.md5 = rec.md5;
  if (rec.endUser !== undefined) out.endUser = rec.endUser;
  const meta = visibleMeta(rec.meta);
  if (Object.keys(meta).length > 0) out['x-qn-meta'] = meta;
  return out;
}

/**
 * An entry's metadata as the Kodo API shows it: reserved names (`@…`: the S3 door's ETag, tags, checksum and upload
 * id, s3api/) are the server's bookkeeping, not the user's metadata, and are left out (they are never answered as
 * headers either: read.ts `metaHeaders`).
 */
export function visibleMeta(meta: Record<string, string>): Record<string, string> {
  let reserved = false;
  for (const name in meta) if (name.startsWith('@')) reserved = true;
  if (!reserved) return meta;
  return Object.fromEntries(Object.entries(meta).filter(([name]) => !name.startsWith('@')));
}

/**
 * The stat answer: hash, fsize, mimeType, putTime, type always; md5, endUser, x-qn-meta, status (only when 1),
 * expiration and transitionTo* (Unix seconds), restoreStatus (while the restore lasts), `parts` (sizes) with
 * `needparts`, and Granary's `corrupt: true` when the stored bytes were found not to match their checksums.
 */
export function statJson(rec: ObjectRecord, nowSec: number, needParts = false): Record<string, unknown> {
  const out = common(rec, nowSec);
  if (rec.status === 1) out.status = 1;
  if (rec.expireAt !== undefined) out.expiration = rec.expireAt;
  const t = rec.transitions;
  if (t?.toIA !== undefined) out.transitionToIA = t.toIA;
  if (t?.toIntelligentTiering !== undefined) out.transitionToIntelligentTiering = t.toIntelligentTiering;
  if (t?.toArchiveIR !== undefined) out.transitionToArchiveIR = t.toArchiveIR;
  if (t?.toArchive !== undefined) out.transitionToARCHIVE = t.toArchive;
  if (t?.toDeepArchive !== undefined) out.transitionToDeepArchive = t.toDeepArchive;
  // A restore that lapsed is frozen again: no restoreStatus.
  if (rec.restoreStatus !== undefined && (rec.restoreUntil === undefined || rec.restoreUntil > nowSec)) out.restoreStatus = rec.restoreStatus;
  if (rec.corrupt) out.corrupt = true;
  if (needParts) out.parts = rec.parts ?? [rec.fsize];
  return out;
}

/** A list item: key plus the common fields and `status` (always present in listings). */
export function listItemJson(rec: ObjectRecord, nowSec: number, needParts = false): Record<string, unknown> {
  const out: Record<string, unknown> = { key: rec.key, ...common(rec, nowSec), status: rec.status };
  if (needParts) out.parts = rec.parts ?? [rec.fsize];
  return out;
}
