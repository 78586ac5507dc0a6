/**
 * The body of an event notification (pure), in Kodo's shape (developer.qiniu.com/kodo/8610/dev-event-notification,
 * "回调消息格式"): a JSON envelope `{"Message": "<JSON text>", "Subject": "Qiniu KODO Notification", "Timestamp":
 * "<Beijing time>"}` whose `Message` is itself JSON text with Kodo's fields — `event`, `time` (nanoseconds),
 * `reqid`, `access_key`, `bucket`, `key`, `fsize`, `hash`, `ftype`, `mimetype`, `restore_expiration` (restore),
 * `dest_bucket`/`dest_key` (copy, move) — plus Granary's `putTime` (100-ns units, as in stat), `rule` (the rule's
 * name) and `id` (the event's id: the same on every delivery attempt, to drop duplicates). Kodo's `source_ip` and
 * `user_id` are not known here and left out; `reqid`/`access_key` are present when the change came from a request.
 */
import { effectiveType } from '../objects/entry-json.js';
import { toJson } from '../bigint-json.js';
import type { ObjectRecord } from '../ports/meta.js';
import type { EventName } from './names.js';

/** The `Subject` of every notification (Kodo's). */
export const EVENT_SUBJECT = 'Qiniu KODO Notification';

/** Everything one notification says. */
export interface EventFacts {
  id: string;
  event: EventName;
  /** When the change happened, Unix milliseconds. */
  timeMs: number;
  /** Name of the rule that fired. */
  rule: string;
  /** The entry the event is about: for copy and move the source (the target is `dest`). */
  bucket: string;
  key: string;
  /** The entry's attributes: the new entry of a put, the deleted one, the copy/moved entry, the updated one. */
  entry: ObjectRecord;
  dest?: { bucket: string; key: string };
  /** Who asked for the change (absent for offline CLI commands). */
  actor?: { accessKey: string; reqId?: string };
}

const BEIJING_OFFSET_MS = 8 * 3600 * 1000;

/** `ms` in Beijing time to the second, ISO 8601 with its offset (`2019-01-20T19:20:07+08:00`, Kodo's style). */
export function beijingTime(ms: number): string {
  return `${new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, 19)}+08:00`;
}

/** The inner message (Kodo's field names and order, then Granary's), with bigint times. */
export function eventMessage(f: EventFacts): Record<string, unknown> {
  const nowSec = Math.floor(f.timeMs / 1000);
  const m: Record<string, unknown> = { event: f.event, time: BigInt(f.timeMs) * 1_000_000n };
  if (f.actor?.reqId) m.reqid = f.actor.reqId;
  if (f.actor) m.access_key = f.actor.accessKey;
  m.bucket = f.bucket;
  m.key = f.key;
  m.fsize = f.entry.fsize;
  m.hash = f.entry.hash;
  m.ftype = effectiveType(f.entry, nowSec);
  m.mimetype = f.entry.mimeType;
  if (f.event === 'restore:completed' && f.entry.restoreUntil !== undefined) {
    m.restore_expiration = beijingTime(f.entry.restoreUntil * 1000);
  }
  if (f.dest) {
    m.dest_bucket = f.dest.bucket;
    m.dest_key = f.dest.key;
  }
  m.putTime = f.entry.putTime;
  m.rule = f.rule;
  m.id = f.id;
  return m;
}

/** The POST body: Kodo's envelope around the message, JSON text. */
export function eventBody(f: EventFacts): string {
  return JSON.stringify({ Message: toJson(eventMessage(f)), Subject: EVENT_SUBJECT, Timestamp: beijingTime(f.timeMs) });
}
