/**
 * `callbackFetchKey: 1` (docs/development/kodo-protocol.md §3.1): the application's callback answer `{"key": "<final key>",
 * "payload": <json>}` names the key the upload is finally stored under, and only `payload` goes back to the
 * uploader. The entry committed under the provisional key is renamed atomically (no bytes move).
 * Errors: 579 when the answer has no string `key`; 400/403 when the key breaks the scope; 614 when the key is
 * taken under insert semantics.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import type { PutPolicy } from '../policy/put-policy.js';
import { checkKeyAllowed, insertSemantics } from '../policy/scope.js';
import { nowSeconds } from '../ports/clock.js';
import { releaseBlobs } from './blobs.js';
import type { PutResult } from './put-object.js';

/** Applies the application's answer; returns the JSON value to relay to the uploader. */
export async function applyFetchKey(g: Granary, policy: PutPolicy, result: PutResult, answer: unknown): Promise<unknown> {
  const key = (answer as { key?: unknown } | null)?.key;
  if (typeof key !== 'string') throw Errors.callbackFailed('callbackFetchKey: the callback answer has no "key"');
  checkKeyAllowed(policy, key);
  const { bucket } = result.record;
  const moved = await g.meta.moveObject(
    { bucket, key: result.record.key },
    { bucket, key },
    { force: !insertSemantics(policy), nowSec: nowSeconds(g.clock) },
  );
  await releaseBlobs(g, moved.freedBlobs);
  if (moved.result === 'exists') throw Errors.fileExists();
  if (moved.result !== 'moved') throw Errors.internal(`callbackFetchKey: ${moved.result}`);
  result.record = { ...result.record, key };
  const payload = (answer as { payload?: unknown }).payload;
  return payload === undefined ? { key, hash: result.record.hash } : payload;
}
