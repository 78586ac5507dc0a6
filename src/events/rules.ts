/**
 * Event notification rules of a bucket (docs/development/kodo-protocol.md §8.6 `events/add|update|delete`, `events/get`; Kodo's rule
 * model from developer.qiniu.com/kodo/8610/dev-event-notification and the Node SDK's `putBucketEvent`): kept in the
 * bucket's settings document (`BucketSettings.eventRules`), changed in one transaction.
 *
 * A rule: `name` (unique in the bucket, 1–49 letters, digits, `_`), `prefix`/`suffix` of the keys it watches ('' =
 * any), `events` (Kodo's names, names.ts), `callbackUrls` (1–10 absolute http(s) URLs, tried in order), optional
 * `accessKey` whose pair signs the notifications (default: the bucket owner's) and `host` (the `Host` header sent).
 * Bad input answers 400 naming the wire field (`name`, `event`, `callbackURL`, `prefix`, `suffix`, `access_key`,
 * `host`); a duplicate name 400; an unknown name (update, delete) 612; a missing bucket 631.
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { MAX_KEY_BYTES } from '../policy/scope.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketRecord, BucketSettings, EventRule } from '../ports/meta.js';
import { isEventName, type EventName } from './names.js';

/** Most rules one bucket may have. */
export const MAX_EVENT_RULES = 100;
/** Most callback URLs one rule may have. */
export const MAX_CALLBACK_URLS = 10;
const MAX_URL_LENGTH = 2048;
const RULE_NAME = /^[A-Za-z0-9_]{1,49}$/;
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** A rule as given by a client: absent fields keep their value on update (add: '' / none). */
export interface EventRuleInput {
  name: string;
  prefix?: string;
  suffix?: string;
  /** Event names as sent (unchecked). */
  events?: string[];
  callbackUrls?: string[];
  /** '' = sign with the bucket owner's pair. */
  accessKey?: string;
  /** '' = the URL's own host. */
  host?: string;
}

function checkName(name: string): void {
  if (!RULE_NAME.test(name)) throw Errors.badRequest(`name must be 1-49 letters, digits or _, got ${JSON.stringify(name)}`);
}

function checkAffix(field: 'prefix' | 'suffix', value: string): string {
  if (Buffer.byteLength(value, 'utf8') > MAX_KEY_BYTES) throw Errors.badRequest(`${field} is longer than ${MAX_KEY_BYTES} bytes`);
  return value;
}

function checkEvents(events: string[]): EventName[] {
  if (events.length === 0) throw Errors.badRequest('event is required (one or more event names)');
  const out: EventName[] = [];
  for (const e of events) {
    if (!isEventName(e)) throw Errors.badRequest(`event: unknown event name ${JSON.stringify(e)}`);
    if (!out.includes(e)) out.push(e);
  }
  return out;
}

function checkUrls(urls: string[]): string[] {
  if (urls.length === 0) throw Errors.badRequest('callbackURL is required (one or more http(s) URLs)');
  if (urls.length > MAX_CALLBACK_URLS) throw Errors.badRequest(`callbackURL: at most ${MAX_CALLBACK_URLS} URLs`);
  for (const url of urls) {
    let u: URL | undefined;
    try {
      u = url.length <= MAX_URL_LENGTH ? new URL(url) : undefined;
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '' || u.username || u.password) {
      throw Errors.badRequest(`callbackURL: not an absolute http(s) URL: ${JSON.stringify(url)}`);
    }
  }
  return urls;
}

/**
 * The signing key of a rule: '' → undefined (the bucket owner's). Else a known AccessKey (400) that the caller may
 * use: its own, or any when the caller is root (403 otherwise: a notification is signed with that pair's secret).
 */
function checkAccessKey(g: Granary, caller: string, accessKey: string): string | undefined {
  if (accessKey === '') return undefined;
  if (!g.keyIndex.pairOf(accessKey)) throw Errors.badRequest(`access_key: unknown AccessKey ${JSON.stringify(accessKey)}`);
  if (accessKey !== caller && !g.keyIndex.isRoot(caller)) throw Errors.forbidden('access_key: not your AccessKey');
  return accessKey;
}

function checkHost(host: string): string | undefined {
  if (host === '') return undefined;
  if (!HOST.test(host)) throw Errors.badRequest(`host: not a host name: ${JSON.stringify(host)}`);
  return host;
}

/** Applies the given fields of `input` to `base` (validated). */
function apply(g: Granary, caller: string, base: EventRule, input: EventRuleInput): EventRule {
  const rule: EventRule = { ...base };
  if (input.prefix !== undefined) rule.prefix = checkAffix('prefix', input.prefix);
  if (input.suffix !== undefined) rule.suffix = checkAffix('suffix', input.suffix);
  if (input.events !== undefined) rule.events = checkEvents(input.events);
  if (input.callbackUrls !== undefined) rule.callbackUrls = checkUrls(input.callbackUrls);
  if (input.accessKey !== undefined) {
    const ak = checkAccessKey(g, caller, input.accessKey);
    if (ak === undefined) delete rule.accessKey;
    else rule.accessKey = ak;
  }
  if (input.host !== undefined) {
    const host = checkHost(input.host);
    if (host === undefined) delete rule.host;
    else rule.host = host;
  }
  return rule;
}

/** `events/add`: a new rule (`event` and `callbackURL` required). `caller` is the AccessKey asking. */
export async function addEventRule(g: Granary, caller: string, bucket: string, input: EventRuleInput): Promise<EventRule> {
  checkName(input.name);
  if (input.events === undefined) throw Errors.badRequest('event is required (one or more event names)');
  if (input.callbackUrls === undefined) throw Errors.badRequest('callbackURL is required (one or more http(s) URLs)');
  const empty: EventRule = { name: input.name, prefix: '', suffix: '', events: [], callbackUrls: [], ctime: nowSeconds(g.clock) };
  const rule = apply(g, caller, empty, input);
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const rules = cur.eventRules ?? [];
    if (rules.some((r) => r.name === rule.name)) throw Errors.eventRuleExists(`name ${rule.name}`);
    if (rules.length >= MAX_EVENT_RULES) throw Errors.badRequest(`a bucket has at most ${MAX_EVENT_RULES} event rules`);
    return { ...cur, eventRules: [...rules, rule] };
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
  return rule;
}

/** `events/update`: changes the fields given of the rule `input.name` (400 when it does not exist, as Kodo). */
export async function updateEventRule(g: Granary, caller: string, bucket: string, input: EventRuleInput): Promise<EventRule> {
  checkName(input.name);
  let changed: EventRule | undefined;
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const rules = cur.eventRules ?? [];
    const i = rules.findIndex((r) => r.name === input.name);
    const old = rules[i];
    if (!old) throw Errors.noEventRuleToUpdate(input.name);
    changed = apply(g, caller, old, input);
    return { ...cur, eventRules: rules.map((r, j) => (j === i ? (changed as EventRule) : r)) };
  });
  if (!updated || !changed) throw Errors.noSuchBucket(bucket);
  return changed;
}

/** `events/delete`: removes the rule `name` (612 when it does not exist). Events already written are still delivered. */
export async function deleteEventRule(g: Granary, bucket: string, name: string): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const rules = cur.eventRules ?? [];
    if (!rules.some((r) => r.name === name)) throw Errors.noSuchEventRule(name);
    const rest = rules.filter((r) => r.name !== name);
    const next: BucketSettings = { ...cur, eventRules: rest };
    if (rest.length === 0) delete next.eventRules;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/** The rules of a bucket. */
export function eventRulesOf(b: BucketRecord): EventRule[] {
  return b.settings.eventRules ?? [];
}

/**
 * `events/get`: the rules in the Node SDK's `BucketEvent` shape — `name`, `prefix`, `suffix`, `events`,
 * `callback_urls`, `access_key` and `host` ('' when not set), `ctime` (ISO 8601).
 */
export function eventRulesJson(b: BucketRecord): Array<Record<string, unknown>> {
  return eventRulesOf(b).map((r) => ({
    name: r.name,
    prefix: r.prefix,
    suffix: r.suffix,
    events: r.events,
    callback_urls: r.callbackUrls,
    access_key: r.accessKey ?? '',
    host: r.host ?? '',
    ctime: new Date(r.ctime * 1000).toISOString(),
  }));
}
