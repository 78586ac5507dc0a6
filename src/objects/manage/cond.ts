/**
 * The `cond` guard of chgm and lifecycle (docs/development/kodo-protocol.md §8.1): `hash=<h>&mime=<m>&fsize=<n>&putTime=<t>` (any
 * subset); the operation applies only when every given field matches the entry, else 608 (613 for chgm).
 */
import { Errors, type KodoError } from '../../errors.js';
import type { ObjectRecord } from '../../ports/meta.js';

/** Parsed condition: only the fields present are checked. `putTime` in 100-ns units. */
export interface Cond {
  hash?: string;
  mime?: string;
  fsize?: number;
  putTime?: bigint;
}

/** Parses the decoded cond text; 400 on unknown fields or bad numbers. */
export function parseCond(text: string): Cond {
  const cond: Cond = {};
  for (const [name, value] of new URLSearchParams(text)) {
    if (name === 'hash') cond.hash = value;
    else if (name === 'mime') cond.mime = value;
    else if (name === 'fsize' && /^\d+$/.test(value)) cond.fsize = Number(value);
    else if (name === 'putTime' && /^\d+$/.test(value)) cond.putTime = BigInt(value);
    else throw Errors.badRequest(`bad cond field ${name}`);
  }
  return cond;
}

/**
 * Throws unless `rec` matches every field of `cond`: 608 `resource content changed` by default; chgm passes
 * `Errors.chgmConditionFailed` (613, Kodo's answer there).
 */
export function checkCond(cond: Cond | undefined, rec: ObjectRecord, fail: () => KodoError = Errors.conditionFailed): void {
  if (!cond) return;
  if (
    (cond.hash !== undefined && cond.hash !== rec.hash) ||
    (cond.mime !== undefined && cond.mime !== rec.mimeType) ||
    (cond.fsize !== undefined && cond.fsize !== rec.fsize) ||
    (cond.putTime !== undefined && cond.putTime !== rec.putTime)
  ) {
    throw fail();
  }
}
