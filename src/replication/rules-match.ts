/**
 * Which replication rules of a bucket a key falls under (ports/replication.ts): the enabled rules whose prefix
 * starts the key. Called on every entry change of a bucket, with the settings already in hand.
 */
import type { ReplicationRule } from '../ports/replication.js';

/** The enabled rules of `rules` (absent: none) whose prefix the key starts with. */
export function replicationRulesFor(rules: readonly ReplicationRule[] | undefined, key: string): ReplicationRule[] {
  if (!rules || rules.length === 0) return [];
  return rules.filter((r) => r.enabled && key.startsWith(r.prefix));
}
