/**
 * The S3 route table's auth step (docs/reference/iam.md, "Actions of each door"): after the signature
 * (auth/authenticate.ts), before the operation, the route's `iam` column is evaluated for a signed caller — the
 * one IAM check of the S3 door (the Kodo door's is routes/auth-step.ts):
 * - `none`: nothing here (ListBuckets filters what the key may see; preflights are not authenticated);
 * - `owner-only`: the account's own keys and the root key; a sub-user gets AccessDenied (CreateBucket);
 * - an S3 action (`s3:GetObject`): its Kodo action (iam/operation-actions.ts `S3_ACTIONS`) on the request's bucket
 *   and key — for a listing on its `prefix` — by auth/authorize.ts: the root key everywhere, an account key on its
 *   buckets, a sub-user where its policies allow it. NoSuchBucket (404), AccessDenied (403; a sub-user's refusal is
 *   recorded), 503 when IAM data cannot be read. The bucket record is left on the request (`authorized`), where
 *   the operation's `accessBucket` (access.ts) finds it.
 * Items an operation finds in its body (the keys of DeleteObjects) are checked per item by `authorizeItem`.
 *
 * The bucket's S3 policy (docs/reference/bucket-policies.md; bucket-policy-doc.ts, bucket-policy-eval.ts) is
 * evaluated here too, for everyone but the root key: an explicit Deny refuses (AccessDenied; the owner's account
 * keys may still Get/Put/Delete the policy itself), an Allow grants anonymous callers and other accounts (the bucket
 * left on the request as `authorized`) and stands in for an IAM Allow of a sub-user (auth/authorize.ts
 * `bucketPolicyAllows`; an IAM Deny still wins) — but while the policy is public and the bucket has
 * RestrictPublicBuckets (public-access-block.ts), its Allows count only for principals of the owner's account. Otherwise anonymous requests, the root key and account keys are
 * decided by the operations as before (their buckets, the S3 ACLs: access.ts); the step evaluates IAM sub-users.
 */
import { ACCOUNT, mayAccess, requireAccountKey, type Ask } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import { kodoActionOfS3 } from '../iam/operation-actions.js';
import { recordRefusal } from '../iam/refusals.js';
import { tagsOfMeta } from '../objects/entry-tags.js';
import type { BucketRecord } from '../ports/meta.js';
import { parseBucketPolicy, policyIsPublic, type ParsedPolicy } from './bucket-policy-doc.js';
import { evaluateBucketPolicy, type PolicyRequester, type PolicyVerdict } from './bucket-policy-eval.js';
import { S3Errors } from './errors.js';
import { headerOf } from './headers.js';
import type { S3Request } from './types.js';

/** Operations whose items are checked one by one by the operation (`authorizeItem`): the step checks the account. */
const PER_ITEM: ReadonlySet<string> = new Set(['DeleteObjects']);

/** Listing operations: evaluated on the request's `prefix`. */
const LISTINGS: ReadonlySet<string> = new Set(['ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'ListMultipartUploads']);

/**
 * Runs the step for `req` on its route's `operation` and `iam` column (routes.ts; see the module comment), then
 * decides a GOVERNANCE bypass the request asks for (`governanceBypass`).
 */
export async function s3AuthStep(g: Granary, route: { operation: string; iam: string }, req: S3Request): Promise<void> {
  await routeStep(g, route, req);
  if (headerOf(req, 'x-amz-bypass-governance-retention')?.toLowerCase() === 'true') req.bypassGovernance = await governanceBypass(g, req);
}

/**
 * Whether the caller may bypass GOVERNANCE retention (`s3:BypassGovernanceRetention`, AWS: *Bypassing governance
 * mode*) on the request's bucket and key: the root key always; anonymous callers never; a sub-user where its IAM
 * policies allow `kodo/BypassGovernanceRetention` (a bucket policy Deny of the action refuses it); other signed keys
 * on their own account's buckets. A refusal is not an error here: the retention check refuses what needed it.
 */
async function governanceBypass(g: Granary, req: S3Request): Promise<boolean> {
  const ak = req.caller.accessKey;
  if (ak === undefined || req.bucket === undefined) return false;
  if (g.keyIndex.isRoot(ak)) return true;
  const rec = req.authorized ?? req.prefetched ?? req.prefetchedRead?.bucket ?? (await g.meta.getBucket(req.bucket));
  if (!rec) return false;
  const action = 's3:BypassGovernanceRetention';
  const verdict = policyVerdict(g, req, rec, action, req.key);
  if (verdict?.effect === 'Deny') return false;
  if (!g.keyIndex.isSubUser(ak)) return mayAccess(g, ak, rec);
  const ask: Ask = { action: kodoActionOfS3(action)!, door: 's3', requestId: req.reqId, bucketPolicyAllows: verdict?.effect === 'Allow', ...(req.key !== undefined ? { key: req.key } : {}) };
  return mayAccess(g, ak, rec, ask);
}

/** The route's IAM check (see the module comment). */
async function routeStep(g: Granary, route: { operation: string; iam: string }, req: S3Request): Promise<void> {
  const ak = req.caller.accessKey;
  if (route.iam === 'none') return;
  if (route.iam === 'owner-only') {
    if (ak !== undefined) requireAccountKey(g, ak, route.operation, 's3', req.reqId);
    return;
  }
  if (req.bucket === undefined || (ak !== undefined && g.keyIndex.isRoot(ak))) return;
  const subUser = ak !== undefined && g.keyIndex.isSubUser(ak);
  // Object reads: the store's per-process read cache answers the bucket with the object (GetObject reads both again
  // from it); other requests read the bucket, which the operation's `accessBucket` reuses (`prefetched`).
  const read = req.key !== undefined && (req.method === 'GET' || req.method === 'HEAD');
  const found = read ? await g.meta.getBucketAndObject(req.bucket, req.key!) : { bucket: await g.meta.getBucket(req.bucket) };
  const rec = found.bucket;
  if (read) req.prefetchedRead = found;
  else req.prefetched = rec;
  if (!rec) {
    if (subUser) throw S3Errors.NoSuchBucket(undefined);
    return; // the operation answers NoSuchBucket (or creates it)
  }
  const tags = read ? (needsObjectTags(g, rec) && found.object ? tagsOfMeta(found.object.meta) : undefined) : await existingTags(g, rec, req.key);
  const verdict = policyVerdict(g, req, rec, route.iam, req.key, tags);
  if (verdict?.effect === 'Deny' && !(POLICY_OPS.has(route.operation) && ak !== undefined && g.keyIndex.accountOf(ak) === rec.owner && !subUser)) {
    const resource = req.key !== undefined ? `${rec.name}/${req.key}` : rec.name;
    if (ak !== undefined) recordRefusal(g, { accessKey: ak, action: route.iam, resource, reason: `denied by statement ${verdict.statement}${verdict.sid !== undefined ? ` (${verdict.sid})` : ''} of the bucket policy`, door: 's3', requestId: req.reqId });
    throw S3Errors.AccessDenied(`${route.iam} on ${resource} is denied by the bucket policy`);
  }
  const allowed = verdict?.effect === 'Allow' && !restrictedAllow(g, rec, ak);
  // Anonymous callers and other accounts: an Allow of the bucket policy grants; else the operation decides (ACLs).
  if (!subUser) {
    if (allowed && !PER_ITEM.has(route.operation)) req.authorized = rec;
    // The owner's DeleteObjects: its items are checked against the policy's Denies (authorizeItem).
    else if (PER_ITEM.has(route.operation) && ak !== undefined && mayAccess(g, ak, rec)) req.authorized = rec;
    return;
  }
  const kodo = kodoActionOfS3(route.iam);
  if (kodo === undefined) throw S3Errors.InternalError(`route ${route.operation}: ${route.iam} has no Kodo action`);
  const ask: Ask = PER_ITEM.has(route.operation)
    ? { action: ACCOUNT }
    : {
        action: kodo,
        door: 's3',
        requestId: req.reqId,
        bucketPolicyAllows: allowed,
        ...(req.key !== undefined ? { key: req.key } : {}),
        ...(LISTINGS.has(route.operation) ? { prefix: req.query.get('prefix') ?? '' } : {}),
      };
  if (!mayAccess(g, ak, rec, ask)) throw S3Errors.AccessDenied(`${route.iam} on ${rec.name}${req.key !== undefined ? `/${req.key}` : ''} is not allowed`);
  req.authorized = rec;
}

/**
 * Whether the bucket's RestrictPublicBuckets (public-access-block.ts) voids a policy Allow for this caller: the
 * bucket's policy is public and the caller is not of the bucket owner's account (anonymous, or another account).
 */
function restrictedAllow(g: Granary, rec: BucketRecord, ak: string | undefined): boolean {
  if (!rec.settings.publicAccessBlock?.restrictPublicBuckets) return false;
  const policy = parsedPolicyOf(g, rec);
  if (!policy || !policyIsPublic(policy)) return false;
  return ak === undefined || (g.keyIndex.accountOf(ak) ?? ak) !== rec.owner;
}

/** The operations on the policy itself, which the bucket owner's account keys may do whatever the policy denies (AWS). */
const POLICY_OPS: ReadonlySet<string> = new Set(['GetBucketPolicy', 'PutBucketPolicy', 'DeleteBucketPolicy']);

/** Parsed policies by bucket and text (the bucket record is cached by the store; its policy is parsed once here). */
const PARSED = new Map<string, ParsedPolicy>();
const PARSED_MAX = 1024;

function parsedPolicyOf(g: Granary, rec: BucketRecord): ParsedPolicy | undefined {
  const text = rec.settings.policy;
  if (text === undefined) return undefined;
  const id = `${rec.name}\n${text}`;
  let p = PARSED.get(id);
  if (!p) {
    try {
      p = parseBucketPolicy(text, rec.name);
    } catch (err) {
      // A stored policy this version no longer accepts: fail closed — deny everything (the owner may still replace
      // or delete the policy, the root key is never subject to it).
      g.log.warn({ err, bucket: rec.name }, 's3: the stored bucket policy cannot be parsed; denying every request');
      p = { statements: [{ sid: undefined, effect: 'Deny', principals: [{ kind: 'any' }], actions: ['*'], notAction: false, resources: ['*'], notResource: false, conditions: [] }] };
    }
    if (PARSED.size >= PARSED_MAX) PARSED.clear();
    PARSED.set(id, p);
  }
  return p;
}

/** Who the caller is to a bucket policy. */
function requesterOf(g: Granary, ak: string | undefined): PolicyRequester {
  if (ak === undefined) return { kind: 'anonymous' };
  const account = g.keyIndex.accountOf(ak) ?? ak;
  const p = g.keyIndex.principalOf(ak);
  return p?.kind === 'user' ? { kind: 'user', account, alias: p.alias } : { kind: 'account', account };
}

/** The condition keys of a request (docs/reference/bucket-policies.md, "Condition keys"). */
function contextOf(g: Granary, req: S3Request, who: PolicyRequester, existing: ReadonlyArray<[string, string]> | undefined): Record<string, string[]> {
  const ctx: Record<string, string[]> = {
    'aws:securetransport': [String(req.secure === true)],
    'aws:currenttime': [new Date(g.clock.nowMs()).toISOString()],
    'aws:epochtime': [String(Math.floor(g.clock.nowMs() / 1000))],
  };
  const put = (k: string, v: string | string[] | undefined): void => {
    if (typeof v === 'string') ctx[k] = [v];
  };
  put('aws:sourceip', req.sourceIp);
  put('aws:useragent', req.headers['user-agent']);
  put('aws:referer', req.headers.referer);
  if (who.kind === 'user') {
    ctx['aws:username'] = [who.alias];
    ctx['aws:userid'] = [req.caller.accessKey ?? ''];
  } else if (who.kind === 'account') ctx['aws:userid'] = [who.account];
  if (who.kind !== 'anonymous') ctx['aws:principalaccount'] = [who.account];
  for (const q of ['prefix', 'delimiter', 'max-keys']) {
    const v = req.query.get(q);
    if (v !== null) ctx[`s3:${q}`] = [v];
  }
  put('s3:x-amz-acl', req.headers['x-amz-acl']);
  const tagging = req.headers['x-amz-tagging'];
  if (typeof tagging === 'string') {
    const tags = [...new URLSearchParams(tagging)];
    for (const [k, v] of tags) ctx[`s3:requestobjecttag/${k.toLowerCase()}`] = [v];
    ctx['s3:requestobjecttagkeys'] = tags.map(([k]) => k);
  }
  for (const [k, v] of existing ?? []) ctx[`s3:existingobjecttag/${k.toLowerCase()}`] = [v];
  put('s3:x-amz-server-side-encryption', req.headers['x-amz-server-side-encryption']);
  const auth = req.caller.auth;
  if (auth !== 'anonymous') {
    ctx['s3:authtype'] = [auth.endsWith('query') ? 'REST-QUERY-STRING' : 'REST-HEADER'];
    ctx['s3:signatureversion'] = [auth.startsWith('v4') ? 'AWS4-HMAC-SHA256' : 'AWS'];
  }
  return ctx;
}

/** Whether the bucket's policy has a condition on `s3:ExistingObjectTag/<key>`. */
function needsObjectTags(g: Granary, rec: BucketRecord): boolean {
  return parsedPolicyOf(g, rec)?.statements.some((s) => s.conditions.some((c) => c.key.startsWith('s3:existingobjecttag/'))) ?? false;
}

/**
 * The tags of the object `key` names, read only when the bucket's policy has a condition on
 * `s3:ExistingObjectTag/<key>` (one metadata read); undefined otherwise or when there is no such object.
 */
async function existingTags(g: Granary, rec: BucketRecord, key: string | undefined): Promise<Array<[string, string]> | undefined> {
  if (key === undefined || !needsObjectTags(g, rec)) return undefined;
  const object = await g.meta.getObject(rec.name, key);
  return object ? tagsOfMeta(object.meta) : undefined;
}

/**
 * What the bucket's policy says of `s3Action` on `key` (undefined: no policy, or it is silent); `existing`: the
 * object's tags when `existingTags` read them.
 */
function policyVerdict(
  g: Granary,
  req: S3Request,
  rec: BucketRecord,
  s3Action: string,
  key: string | undefined,
  existing?: ReadonlyArray<[string, string]>,
): PolicyVerdict | undefined {
  const policy = parsedPolicyOf(g, rec);
  if (!policy) return undefined;
  const who = requesterOf(g, req.caller.accessKey);
  return evaluateBucketPolicy(policy, { action: s3Action, bucket: rec.name, ...(key !== undefined ? { key } : {}), who, context: contextOf(g, req, who, existing) });
}

/**
 * One item of an operation whose items the step could not see (DeleteObjects' keys): whether the caller may do
 * `s3Action` on `key` of the request's (already authorised) bucket. Recorded when refused.
 */
export function authorizeItem(g: Granary, req: S3Request, s3Action: string, key: string): boolean {
  const ak = req.caller.accessKey;
  const bucket = req.authorized;
  const verdict = bucket ? policyVerdict(g, req, bucket, s3Action, key) : undefined;
  if (ak !== undefined && g.keyIndex.isRoot(ak)) return true;
  if (verdict?.effect === 'Deny') {
    if (ak !== undefined) recordRefusal(g, { accessKey: ak, action: s3Action, resource: `${bucket?.name}/${key}`, reason: 'denied by the bucket policy', door: 's3', requestId: req.reqId });
    return false;
  }
  if (ak === undefined || !g.keyIndex.isSubUser(ak)) return true; // decided by the operation (access.ts)
  const rec = req.authorized;
  const kodo = kodoActionOfS3(s3Action);
  if (rec === undefined || kodo === undefined) return false;
  return mayAccess(g, ak, rec, { action: kodo, key, door: 's3', requestId: req.reqId, bucketPolicyAllows: verdict?.effect === 'Allow' && !restrictedAllow(g, rec, ak) });
}
