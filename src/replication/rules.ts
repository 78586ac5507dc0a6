/**
 * Managing bucket replication (ports/replication.ts; docs/guides/replication.md): a remote target (endpoint,
 * bucket, region, key pair, bandwidth) gets an ARN and is kept in the metadata; a rule of the source bucket
 * (`BucketSettings.replication`) names it with a key prefix, whether deletes replicate, whether existing objects
 * are copied first (initial sync) and the destination storage class. `addReplication` makes both at once (the
 * CLI's `granary replication add`); S3 PutBucketReplication maps its rules onto existing targets by ARN.
 *
 * Checks (400 with the reason): an http(s) endpoint without credentials, path or query in it; a destination
 * that is this server's own bucket (same bucket name on a loopback address or this server's host and one of its
 * ports: replicating into itself would loop); an IP-literal endpoint the outbound guard refuses (loopback,
 * private, metadata addresses need GRANARY_OUTBOUND_ALLOW; host names are checked at every connection).
 * Secrets never leave through these functions' answers (`maskTarget`).
 */
import { randomBytes } from 'node:crypto';
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { isOutboundError } from '../outbound/client.js';
import { normalizeHost } from '../outbound/guard.js';
import { nowSeconds } from '../ports/clock.js';
import type { BucketSettings } from '../ports/meta.js';
import type { ReplicationRule, ReplicationTarget } from '../ports/replication.js';
import { checkEndpoint } from './client.js';

/** Most replication rules a bucket has (S3 allows 1000). */
export const MAX_REPLICATION_RULES = 100;

/** What `granary replication add` takes. */
export interface ReplicationInput {
  /** Rule id; generated when absent. */
  id?: string;
  endpoint: string;
  region?: string;
  targetBucket: string;
  accessKey: string;
  secretKey: string;
  prefix?: string;
  deletes?: boolean;
  existing?: boolean;
  storageClass?: string;
  /** Bytes per second, 0 = none. */
  bandwidth?: number;
  /** Virtual-hosted addressing instead of path style. */
  virtualHost?: boolean;
}

const ID = /^[A-Za-z0-9._-]{1,255}$/;
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,62}$/;

/** A new ARN for a target writing to `bucket` (MinIO's shape: `arn:<partition>:replication::<id>:<bucket>`). */
export function newTargetArn(bucket: string): string {
  return `arn:granary:replication::${randomBytes(9).toString('base64url')}:${bucket}`;
}

/** The endpoint as stored (`http(s)://host[:port]`), or 400. */
export function checkedEndpoint(g: Granary, text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw Errors.badRequest(`endpoint: not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Errors.badRequest('endpoint: http:// or https:// only');
  if (url.username || url.password) throw Errors.badRequest('endpoint: credentials go in --access-key/--secret-key, not in the URL');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search) throw Errors.badRequest('endpoint: scheme, host and port only');
  try {
    checkEndpoint(url.origin, g.outbound);
  } catch (err) {
    if (isOutboundError(err)) throw Errors.badRequest(`endpoint: ${err.message}`);
    throw err;
  }
  return url.origin;
}

/** Whether `endpoint`/`bucket` is `source` on this very server (see the module comment). */
export function isSelf(g: Granary, endpoint: string, bucket: string, source: string): boolean {
  if (bucket !== source) return false;
  const url = new URL(endpoint);
  const host = normalizeHost(url.hostname).toLowerCase();
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const ours = new Set(['localhost', '127.0.0.1', '::1', '0.0.0.0', g.config.host.toLowerCase()]);
  for (const u of [g.config.publicUrl]) if (u) ours.add(new URL(u).hostname.toLowerCase());
  const ports = new Set([g.config.port, g.config.s3Port ?? -1]);
  return (ours.has(host) || host.startsWith('127.')) && ports.has(port);
}

/** A target from `input` (checked), for `source`. */
export function targetOf(g: Granary, source: string, input: ReplicationInput): ReplicationTarget {
  const endpoint = checkedEndpoint(g, input.endpoint);
  if (!BUCKET.test(input.targetBucket)) throw Errors.badRequest(`target bucket: not a bucket name: ${input.targetBucket}`);
  if (input.accessKey === '' || input.secretKey === '') throw Errors.badRequest('the destination access key and secret key are required');
  if (isSelf(g, endpoint, input.targetBucket, source)) {
    throw Errors.badRequest(`a bucket cannot replicate into itself (${input.targetBucket} at ${endpoint} is this server's)`);
  }
  const bandwidth = input.bandwidth ?? 0;
  if (!Number.isSafeInteger(bandwidth) || bandwidth < 0) throw Errors.badRequest('bandwidth: bytes per second, 0 or more');
  return {
    arn: newTargetArn(input.targetBucket),
    sourceBucket: source,
    endpoint,
    region: input.region || 'us-east-1',
    bucket: input.targetBucket,
    accessKey: input.accessKey,
    secretKey: input.secretKey,
    pathStyle: !input.virtualHost,
    bandwidth,
    createdMs: g.clock.nowMs(),
  };
}

/** Marks every live object of `bucket` under `rule`'s prefix (initial sync, resync); returns how many. */
export async function markExisting(g: Granary, bucket: string, rule: ReplicationRule): Promise<number> {
  let after: { key: string; isPrefix: boolean } | undefined;
  let n = 0;
  for (;;) {
    const page = await g.meta.listObjects({ bucket, prefix: rule.prefix, delimiter: '', limit: 1000, nowSec: nowSeconds(g.clock), ...(after ? { after } : {}) });
    const atMs = g.clock.nowMs();
    const marks = page.entries.flatMap((e) => (e.kind === 'item' ? [{ rule: rule.id, bucket, key: e.item.key, size: e.item.fsize, atMs }] : []));
    await g.meta.replication.mark(marks);
    n += marks.length;
    const last = page.entries.at(-1);
    if (!page.more || !last || last.kind !== 'item') break;
    after = { key: last.item.key, isPrefix: false };
  }
  return n;
}

/** Adds `rule` to the bucket's rules (400: id taken or too many; 631: no bucket). */
export async function addRule(g: Granary, bucket: string, rule: ReplicationRule): Promise<void> {
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const rules = cur.replication ?? [];
    if (rules.some((r) => r.id === rule.id)) throw Errors.badRequest(`bucket ${bucket} already has a replication rule ${rule.id}`);
    if (rules.length >= MAX_REPLICATION_RULES) throw Errors.badRequest(`a bucket has at most ${MAX_REPLICATION_RULES} replication rules`);
    return { ...cur, replication: [...rules, rule] };
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

/**
 * `granary replication add`: a target and a rule naming it; existing objects are marked when `existing`. Returns
 * the rule, the target (keep its secret to yourself) and how many objects the initial sync queued.
 */
export async function addReplication(g: Granary, bucket: string, input: ReplicationInput): Promise<{ rule: ReplicationRule; target: ReplicationTarget; queued: number }> {
  if (!(await g.meta.getBucket(bucket))) throw Errors.noSuchBucket(bucket);
  const id = input.id ?? `rule-${randomBytes(6).toString('base64url')}`;
  if (!ID.test(id)) throw Errors.badRequest(`rule id: 1 to 255 letters, digits, '.', '_' or '-': ${id}`);
  const target = targetOf(g, bucket, input);
  const rule: ReplicationRule = {
    id,
    prefix: input.prefix ?? '',
    target: target.arn,
    deletes: input.deletes ?? true,
    existing: input.existing ?? false,
    ...(input.storageClass ? { storageClass: input.storageClass } : {}),
    priority: 0,
    enabled: true,
    ctime: nowSeconds(g.clock),
  };
  await g.meta.replication.putTarget(target);
  try {
    await addRule(g, bucket, rule);
  } catch (err) {
    await g.meta.replication.deleteTarget(target.arn);
    throw err;
  }
  const queued = rule.existing ? await markExisting(g, bucket, rule) : 0;
  return { rule, target, queued };
}

/** The rules of a bucket. */
export async function rulesOf(g: Granary, bucket: string): Promise<ReplicationRule[]> {
  const b = await g.meta.getBucket(bucket);
  if (!b) throw Errors.noSuchBucket(bucket);
  return b.settings.replication ?? [];
}

/**
 * Removes rule `id` of `bucket` (612 when absent), its pending rows and its target when no other rule of the
 * bucket names it.
 */
export async function removeReplication(g: Granary, bucket: string, id: string): Promise<void> {
  let removed: ReplicationRule | undefined;
  let rest: ReplicationRule[] = [];
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const rules = cur.replication ?? [];
    removed = rules.find((r) => r.id === id);
    if (!removed) throw Errors.noSuchEntry(`no replication rule ${id} in bucket ${bucket}`);
    rest = rules.filter((r) => r.id !== id);
    const next: BucketSettings = { ...cur, replication: rest };
    if (rest.length === 0) delete next.replication;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
  await g.meta.replication.dropRule(bucket, id);
  if (removed && !rest.some((r) => r.target === removed?.target)) await g.meta.replication.deleteTarget(removed.target);
}

/** Marks every existing object of rule `id` again (resync: e.g. after the destination lost data). */
export async function resync(g: Granary, bucket: string, id: string): Promise<number> {
  const rule = (await rulesOf(g, bucket)).find((r) => r.id === id);
  if (!rule) throw Errors.noSuchEntry(`no replication rule ${id} in bucket ${bucket}`);
  return markExisting(g, bucket, rule);
}
