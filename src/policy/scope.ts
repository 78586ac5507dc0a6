/**
 * Which key an upload lands on and whether the policy allows it (docs/development/kodo-protocol.md §3.1 `scope`, `isPrefixalScope`,
 * `insertOnly`, `saveKey`, `forceSaveKey`, `keylimit`, "Key resolution order"; §14 items 8, 17, 19).
 */
import { Errors } from '../errors.js';
import type { PutPolicy } from './put-policy.js';
import { renderSaveKey, type SaveKeyVars } from './template.js';

/** Maximum key length in bytes of UTF-8 (docs/development/kodo-protocol.md §3.1). */
export const MAX_KEY_BYTES = 750;

/**
 * Resolves the key of an upload (docs/development/kodo-protocol.md §3.1 "Key resolution order"):
 * 1. `forceSaveKey` → rendered `saveKey`, whatever the client sent;
 * 2. otherwise the client key when present — `""` is a real key (form upload may send it, §14 item 8); callers pass
 *    `undefined` for "no key" (absent form field, v1 mkfile without key, v2 `~`);
 * 3. otherwise the rendered `saveKey`;
 * 4. otherwise `undefined`: the caller uses the content etag (`hash`) as the key.
 * A `saveKey` that renders to `""` counts as no saveKey (falls through to the etag).
 *
 * With an exact `bucket:key` scope and nothing resolved, Qiniu is said to use the scope key, but docs/development/kodo-protocol.md
 * follows the Python SDK test (scope `bucket:k` + no key → 403), so this throws `Errors.scopeMismatch` (403) at once
 * rather than letting the etag fail the scope check later.
 *
 * The result is NOT checked against the scope: call `checkKeyAllowed` on the final key (including an etag key).
 */
export function resolveKey(policy: PutPolicy, clientKey: string | undefined, vars: SaveKeyVars): string | undefined {
  let key: string | undefined;
  if (policy.forceSaveKey && policy.saveKey !== undefined) {
    key = renderSaveKey(policy.saveKey, vars) || undefined;
  } else if (clientKey !== undefined) {
    key = clientKey;
  } else if (policy.saveKey !== undefined) {
    key = renderSaveKey(policy.saveKey, vars) || undefined;
  }
  if (key === undefined && policy.scopeKey !== undefined && !policy.isPrefixalScope) {
    throw Errors.scopeMismatch();
  }
  return key;
}

/**
 * Checks the final key against the policy (docs/development/kodo-protocol.md §3.1), in this order:
 * - longer than 750 bytes of UTF-8 → `Errors.keyTooLong` (400);
 * - exact scope `bucket:key` and `key` differs, or prefixal scope and `key` does not start with the prefix →
 *   `Errors.scopeMismatch` (403, "key doesn't match with scope"); a bucket-only scope allows any key;
 * - `keylimit` set and `key` not in it → `Errors.keyNotAllowed` (403).
 */
export function checkKeyAllowed(policy: PutPolicy, key: string): void {
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw Errors.keyTooLong();
  const scopeKey = policy.scopeKey;
  if (scopeKey !== undefined) {
    const ok = policy.isPrefixalScope ? key.startsWith(scopeKey) : key === scopeKey;
    if (!ok) throw Errors.scopeMismatch();
  }
  if (policy.keylimit !== undefined && !policy.keylimit.includes(key)) throw Errors.keyNotAllowed();
}

/**
 * Whether the upload has **insert semantics** (docs/development/kodo-protocol.md §3.1, §14 item 19): an existing object with different content
 * → 614, identical content → success. True when `insertOnly` is set, for a bucket-only scope and for a prefixal
 * scope; false (overwrite allowed) for an exact `bucket:key` scope without `insertOnly`.
 *
 * Not modelled here: Qiniu's resumable-v1 quirk where a bucket-only scope overwrites unless `insertOnly:1`
 * (docs/development/kodo-protocol.md §3.1, from a Go SDK comment); a v1 caller that wants it must apply it itself.
 */
export function insertSemantics(policy: PutPolicy): boolean {
  return policy.insertOnly || policy.scopeKey === undefined || policy.isPrefixalScope;
}
