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
 * Anonymous requests, the root key and account keys are decided by the operations as before (their buckets, the S3
 * ACLs: access.ts); the step evaluates IAM sub-users.
 */
import { ACCOUNT, mayAccess, requireAccountKey, type Ask } from '../auth/authorize.js';
import type { Granary } from '../context.js';
import { kodoActionOfS3 } from '../iam/operation-actions.js';
import { S3Errors } from './errors.js';
import type { S3Request } from './types.js';

/** Operations whose items are checked one by one by the operation (`authorizeItem`): the step checks the account. */
const PER_ITEM: ReadonlySet<string> = new Set(['DeleteObjects']);

/** Listing operations: evaluated on the request's `prefix`. */
const LISTINGS: ReadonlySet<string> = new Set(['ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'ListMultipartUploads']);

/** Runs the step for `req` on its route's `operation` and `iam` column (routes.ts; see the module comment). */
export async function s3AuthStep(g: Granary, route: { operation: string; iam: string }, req: S3Request): Promise<void> {
  const ak = req.caller.accessKey;
  if (ak === undefined || route.iam === 'none') return;
  if (route.iam === 'owner-only') {
    requireAccountKey(g, ak, route.operation, 's3', req.reqId);
    return;
  }
  // The root key and account keys: the operations decide as always (their own buckets, and the S3 ACLs for
  // other accounts: access.ts); the step decides for IAM sub-users.
  if (req.bucket === undefined || !g.keyIndex.isSubUser(ak)) return;
  const kodo = kodoActionOfS3(route.iam);
  if (kodo === undefined) throw S3Errors.InternalError(`route ${route.operation}: ${route.iam} has no Kodo action`);
  const rec = await g.meta.getBucket(req.bucket);
  if (!rec) throw S3Errors.NoSuchBucket(undefined);
  const ask: Ask = PER_ITEM.has(route.operation)
    ? { action: ACCOUNT }
    : {
        action: kodo,
        door: 's3',
        requestId: req.reqId,
        ...(req.key !== undefined ? { key: req.key } : {}),
        ...(LISTINGS.has(route.operation) ? { prefix: req.query.get('prefix') ?? '' } : {}),
      };
  if (!mayAccess(g, ak, rec, ask)) throw S3Errors.AccessDenied(`${route.iam} on ${rec.name}${req.key !== undefined ? `/${req.key}` : ''} is not allowed`);
  req.authorized = rec;
}

/**
 * One item of an operation whose items the step could not see (DeleteObjects' keys): whether the caller may do
 * `s3Action` on `key` of the request's (already authorised) bucket. Recorded when refused.
 */
export function authorizeItem(g: Granary, req: S3Request, s3Action: string, key: string): boolean {
  const ak = req.caller.accessKey;
  if (ak === undefined || !g.keyIndex.isSubUser(ak)) return true; // decided by the operation (access.ts)
  const rec = req.authorized;
  const kodo = kodoActionOfS3(s3Action);
  if (rec === undefined || kodo === undefined) return false;
  return mayAccess(g, ak, rec, { action: kodo, key, door: 's3', requestId: req.reqId });
}
