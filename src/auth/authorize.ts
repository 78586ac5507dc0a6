/**
 * Bucket authorisation, decided in one place for every door (Kodo routes through the route table's auth step and
 * `call.authorize`, the domain authorisers, the S3 route table's step): the root key may act on every bucket; an
 * account key on the buckets its account owns; a sub-user key (IAM, docs/reference/iam.md) on its account's
 * buckets, and there only where the policy evaluator (iam/evaluate.ts) allows the asked action on the bucket or
 * key. Every refusal of a sub-user is recorded (iam/refusals.ts: audit log and `/metrics`).
 *
 * Fail closed: a sub-user asked nothing (`ask` absent: a call site that names no action) is refused; a sub-user
 * whose IAM data cannot be read gets 503 (auth/key-index.ts).
 */
import type { Granary } from '../context.js';
import { Errors } from '../errors.js';
import { evaluate, touchesBucket, type IamRequest } from '../iam/evaluate.js';
import { recordRefusal } from '../iam/refusals.js';
import type { BucketRecord } from '../ports/meta.js';

/**
 * What is asked of a bucket: a Kodo action (`kodo/Get`, iam/actions.ts) on the bucket, a key of it, or a listing
 * under `prefix`; `ACCOUNT` only that the bucket is in the key's account (region queries); `VISIBLE` that the key
 * may see the bucket at all (bucket lists: a sub-user sees the account's buckets some Allow of its names).
 * `door` and `requestId` label the refusal's record.
 */
export interface Ask {
  action: string;
  key?: string;
  prefix?: string;
  door?: 'kodo' | 's3' | 'console';
  requestId?: string;
  /**
   * The bucket's S3 policy allows the request to this sub-user (s3api/auth-step.ts): an Allow of either its IAM
   * policies or the bucket policy grants, an explicit Deny of its IAM policies still refuses (AWS's evaluation
   * within one account).
   */
  bucketPolicyAllows?: boolean;
}

/** `Ask.action` of a question about the account only. */
export const ACCOUNT = 'account';
/** `Ask.action` of a bucket list's question. */
export const VISIBLE = 'visible';

/** Whether `accessKey` may do `ask` on `bucket` (no `ask`: only the root key and the bucket's owner may). */
export function mayAccess(g: Granary, accessKey: string, bucket: BucketRecord, ask?: Ask): boolean {
  return decide(g, accessKey, bucket, ask) === undefined;
}

/** Undefined when allowed, else why not (sub-user refusals are recorded). */
function decide(g: Granary, accessKey: string, bucket: BucketRecord, ask: Ask | undefined): string | undefined {
  if (g.keyIndex.isRoot(accessKey) || bucket.owner === accessKey) return undefined;
  const p = g.keyIndex.principalOf(accessKey);
  if (p?.kind !== 'user' || p.owner !== bucket.owner) return `no permission on bucket ${bucket.name}`;
  if (!ask) return refuse(g, accessKey, bucket, { action: 'unnamed' }, 'the route names no action for sub-users');
  if (ask.action === ACCOUNT) return undefined;
  if (ask.action === VISIBLE) return touchesBucket(p, bucket.name) ? undefined : `no permission on bucket ${bucket.name}`;
  const req: IamRequest = { action: ask.action, bucket: bucket.name, ...(ask.key !== undefined ? { key: ask.key } : {}), ...(ask.prefix !== undefined ? { prefix: ask.prefix } : {}) };
  const d = evaluate(p, req);
  if (!d.allowed && ask.bucketPolicyAllows && d.matched?.effect !== 'Deny') return undefined;
  return d.allowed ? undefined : refuse(g, accessKey, bucket, ask, d.reason);
}

function refuse(g: Granary, accessKey: string, bucket: BucketRecord, ask: Ask, reason: string): string {
  const resource = ask.key !== undefined ? `${bucket.name}/${ask.key}` : bucket.name;
  recordRefusal(g, { accessKey, action: ask.action, resource, reason, door: ask.door ?? 'kodo', requestId: ask.requestId ?? '' });
  return `${ask.action} on ${resource} is not allowed: ${reason}`;
}

/**
 * The bucket, if `accessKey` may do `ask` on it: 631 when it does not exist, 403 when it belongs to another
 * account or the sub-user's policies do not allow it; 503 when IAM data cannot be read.
 */
export async function authorizeBucket(g: Granary, accessKey: string, bucket: string, ask?: Ask): Promise<BucketRecord> {
  const rec = await g.meta.getBucket(bucket);
  if (!rec) throw Errors.noSuchBucket(bucket);
  return authorizeRecord(g, accessKey, rec, ask);
}

/**
 * `authorizeBucket` for a bucket record already read (a second question about the same bucket in one request: the
 * upload's key once known): the record, or 403 as `authorizeBucket` answers.
 */
export function authorizeRecord(g: Granary, accessKey: string, rec: BucketRecord, ask?: Ask): BucketRecord {
  const why = decide(g, accessKey, rec, ask);
  if (why !== undefined) throw Errors.forbidden(why);
  return rec;
}

/**
 * A request of no bucket (`owner-only` routes: bucket creation, IAM administration, key pairs, pipelines): allowed
 * for the root key and account keys, 403 for anyone else — a sub-user (recorded), or a key no longer known (a
 * console session outliving its disabled sub-user key). `operation` names it in the refusal.
 */
export function requireAccountKey(g: Granary, accessKey: string, operation: string, door: Ask['door'] = 'kodo', requestId = ''): void {
  if (g.keyIndex.isAccountKey(accessKey)) return;
  recordRefusal(g, { accessKey, action: operation, resource: '*', reason: 'only the account may do this', door: door ?? 'kodo', requestId });
  throw Errors.forbidden(`${operation}: only the account's own keys may do this, not a sub-user`);
}
