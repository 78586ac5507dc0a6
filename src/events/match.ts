/**
 * Which event rules of a bucket an event triggers (pure): a rule fires when it names the event and the key starts
 * with its `prefix` and ends with its `suffix` (either may be empty). Copy and move concern two entries: each
 * bucket's rules are matched against that bucket's key (source or target), and a rule fires at most once.
 */
import type { EventRule } from '../ports/meta.js';
import type { EventName } from './names.js';

/** Whether `rule` wants `event` on `key`. */
export function ruleMatches(rule: EventRule, event: EventName, key: string): boolean {
  return rule.events.includes(event) && key.startsWith(rule.prefix) && key.endsWith(rule.suffix);
}

/** The rules of `rules` that `event` on `key` triggers, in their order. */
export function matchingRules(rules: readonly EventRule[] | undefined, event: EventName, key: string): EventRule[] {
  return (rules ?? []).filter((r) => ruleMatches(r, event, key));
}
