/**
 * Identifiers of IAM objects: record ids (24 hex characters, the shape of Kodo IAM's `id`), sub-user uids (Kodo
 * `iuid`) and the account uid (Kodo `root_uid`, and the `<uid>` of a `qrn:` resource).
 *
 * Granary accounts have no numeric uid of their own: an account's uid is derived from its AccessKey (the first 6
 * bytes of its SHA-256, plus 1: stable, > 0, below 2^48 so exact in JSON numbers). Sub-user uids are random in
 * [2^48, 2^53), so they never equal an account uid.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';

/** A new record id: 24 lower-case hex characters. */
export function newRecordId(): string {
  return randomBytes(12).toString('hex');
}

/** The uid of the account whose AccessKey is `accessKey` (1 … 2^48). */
export function accountUid(accessKey: string): number {
  return createHash('sha256').update(accessKey).digest().readUIntBE(0, 6) + 1;
}

/** A new sub-user uid in [2^48, 2^53). */
export function newIuid(): number {
  const high = randomInt(2 ** 5 - 1); // 0 … 30: bits 48–52
  return (high + 1) * 2 ** 48 + randomInt(2 ** 48 - 1);
}
