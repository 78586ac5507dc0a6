/**
 * What an entry change writes into the event outbox (ports/events.ts). Before the change, `eventsFor` matches the
 * bucket's rules (read as the change starts) against the event and key(s); when one fires, it returns the builder
 * the MetaStore calls inside the change's transaction with the entry as committed, so the notification carries
 * the committed attributes and is written atomically with the change. No rule fires → undefined: the store writes
 * nothing and the change costs one bucket read more. The bucket's replication rules (ports/replication.ts) matching
 * the key(s) add `replicate` marks to the builder: the replication outbox rows, written in the same transaction.
 *
 * One outbox event per (change, fired rule): its payload holds everything delivery needs — the callback URLs,
 * the AccessKey whose pair signs it (the rule's, else the bucket owner's), the Host header and the body text —
 * so retries send the same bytes and a rule changed or deleted later does not change what was promised.
 */
import { randomBytes } from 'node:crypto';
import type { Granary } from '../context.js';
import type { NewOutboxEvent, OutboxRows } from '../ports/events.js';
import type { BucketRecord, EventRule, ObjectRecord } from '../ports/meta.js';
import type { ReplicationMark } from '../ports/replication.js';
import { replicationRulesFor } from '../replication/rules-match.js';
import { eventBody } from './body.js';
import { matchingRules } from './match.js';
import type { EventName } from './names.js';

/** Who asked for a change: the request's AccessKey and X-Reqid (Kodo's `access_key`, `reqid`). */
export interface EventActor {
  accessKey: string;
  reqId?: string;
}

/** One entry of a change: its bucket (name, or the record when the caller has it already) and key. */
export interface EntrySide {
  bucket: string | BucketRecord;
  key: string;
}

/** A change of entries: put, delete, chstatus… on `at`; copy and move from `at` to `dest`. */
export interface EntryChange {
  event: EventName;
  at: EntrySide;
  dest?: EntrySide;
  actor?: EventActor;
  /** No event rule fires (a change Kodo sends no notification for, e.g. chgm): replication marks only. */
  silent?: boolean;
}

/** The outbox payload of one notification (JSON text in the store). */
export interface EventPayload {
  bucket: string;
  rule: string;
  /** Callback URLs, tried in order until one answers 2xx. */
  urls: string[];
  /** AccessKey whose pair signs the request. */
  accessKey: string;
  host?: string;
  /** The POST body (Kodo's envelope, body.ts). */
  body: string;
}

/** A fresh event id (URL-safe, 16 characters). */
export function newEventId(): string {
  return randomBytes(12).toString('base64url');
}

async function bucketOf(g: Granary, side: EntrySide): Promise<BucketRecord | undefined> {
  return typeof side.bucket === 'string' ? g.meta.getBucket(side.bucket) : side.bucket;
}

/**
 * The outbox builder of `change`, or undefined when no rule of the bucket(s) fires. A copy or move fires the
 * source bucket's rules matching the source key and the target bucket's rules matching the target key (once each).
 */
export async function eventsFor(g: Granary, change: EntryChange): Promise<OutboxRows | undefined> {
  const fired: Array<{ bucket: BucketRecord; rule: EventRule }> = [];
  const replicated: Array<{ bucket: string; key: string; rule: string }> = [];
  const sides = change.dest ? [change.at, change.dest] : [change.at];
  for (const side of sides) {
    const bucket = await bucketOf(g, side);
    if (!bucket) continue;
    for (const rule of change.silent ? [] : matchingRules(bucket.settings.eventRules, change.event, side.key)) {
      if (!fired.some((f) => f.bucket.name === bucket.name && f.rule.name === rule.name)) fired.push({ bucket, rule });
    }
    // A copy changes only its target; every other change its key (a move both of its keys).
    if (change.event === 'copy' && side === change.at) continue;
    for (const rule of replicationRulesFor(bucket.settings.replication, side.key)) {
      replicated.push({ bucket: bucket.name, key: side.key, rule: rule.id });
    }
  }
  if (fired.length === 0 && replicated.length === 0) return undefined;
  const atName = typeof change.at.bucket === 'string' ? change.at.bucket : change.at.bucket.name;
  const replicate =
    replicated.length > 0
      ? (entry: ObjectRecord): ReplicationMark[] => {
          const atMs = g.clock.nowMs();
          // The size of what is pending: the entry as committed, except at the source of a move (now gone).
          const gone = change.event === 'delete' || change.event === 'move';
          return replicated.map((r) => ({ ...r, atMs, size: gone && r.key === change.at.key && r.bucket === atName ? 0 : entry.fsize }));
        }
      : undefined;
  if (fired.length === 0) return Object.assign((): NewOutboxEvent[] => [], { replicate });
  const dest = change.dest && {
    bucket: typeof change.dest.bucket === 'string' ? change.dest.bucket : change.dest.bucket.name,
    key: change.dest.key,
  };
  const build = (entry: ObjectRecord): NewOutboxEvent[] => {
    const timeMs = g.clock.nowMs();
    return fired.map(({ bucket, rule }) => {
      const id = newEventId();
      const payload: EventPayload = {
        bucket: bucket.name,
        rule: rule.name,
        urls: rule.callbackUrls,
        accessKey: rule.accessKey ?? (bucket.owner || g.keys.accessKey),
        ...(rule.host ? { host: rule.host } : {}),
        body: eventBody({
          id,
          event: change.event,
          timeMs,
          rule: rule.name,
          bucket: atName,
          key: change.at.key,
          entry,
          ...(dest ? { dest } : {}),
          ...(change.actor ? { actor: change.actor } : {}),
        }),
      };
      return { id, payload: JSON.stringify(payload), createdMs: timeMs };
    });
  };
  return replicate ? Object.assign(build, { replicate }) : build;
}
