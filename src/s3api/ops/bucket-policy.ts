/**
 * GetBucketPolicy, PutBucketPolicy, DeleteBucketPolicy, GetBucketPolicyStatus (`GET|PUT|DELETE /<bucket>?policy`,
 * `GET /<bucket>?policyStatus`): the bucket's S3 policy (docs/reference/bucket-policies.md), stored as sent in the
 * bucket's settings (`settings.policy`) and applied on every S3 request by the route table's step (auth-step.ts,
 * bucket-policy-eval.ts).
 *
 * The anonymous-read policy — one statement `{"Effect":"Allow","Principal":"*","Action":"s3:GetObject",
 * "Resource":"arn:aws:s3:::<bucket>/*"}` — also opens the bucket's Kodo private flag
 * (docs/development/kodo-protocol.md §18.10), so the Kodo door serves the bucket publicly too; replacing or
 * deleting it closes the flag again. Other policies leave the flag as it is: they apply on the S3 door only. A public bucket without a
 * stored policy (opened through the Kodo API) answers GetBucketPolicy with the anonymous-read policy, as before.
 *
 * A public policy on a bucket with BlockPublicPolicy (public-access-block.ts) → AccessDenied (403), nothing stored.
 *
 * Errors: MalformedPolicy (400, bucket-policy-doc.ts), NoSuchBucketPolicy (404), NoSuchBucket, AccessDenied.
 */
import type { Granary } from '../../context.js';
import { setBucketPrivate } from '../../buckets/buckets.js';
import { Errors } from '../../errors.js';
import { accessBucket, signedCaller } from '../access.js';
import { MAX_POLICY_BYTES, parseBucketPolicy, policyIsPublic } from '../bucket-policy-doc.js';
import { S3Error, S3Errors } from '../errors.js';
import { refusePublicPolicy } from '../public-access-block.js';
import type { S3Request, S3Response } from '../types.js';
import { readXmlBody, xmlDocument } from '../xml.js';

/** The anonymous-read policy of a bucket, as Get answers it for a public bucket without a stored policy. */
export function anonymousReadPolicy(bucket: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` }],
  });
}

/** A value or a one-element list of it. */
const only = (v: unknown): unknown => (Array.isArray(v) && v.length === 1 ? v[0] : v);

/** Whether the policy text is exactly the anonymous-read policy of `bucket` (one statement, nothing more). */
export function isAnonymousRead(text: string, bucket: string): boolean {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return false;
  }
  const d = doc as { Statement?: unknown } | null;
  const st = only(d?.Statement) as Record<string, unknown> | undefined;
  if (!st || typeof st !== 'object' || Array.isArray(st)) return false;
  const allowed = new Set(['Sid', 'Effect', 'Principal', 'Action', 'Resource']);
  if (Object.keys(st).some((k) => !allowed.has(k))) return false;
  const principal = st.Principal;
  const anyone = principal === '*' || (typeof principal === 'object' && principal !== null && only((principal as { AWS?: unknown }).AWS) === '*');
  return st.Effect === 'Allow' && anyone && only(st.Action) === 's3:GetObject' && only(st.Resource) === `arn:aws:s3:::${bucket}/*`;
}

/** The policy text the bucket has: the stored one, or the anonymous-read one of a public bucket; else undefined. */
function policyText(bucket: { name: string; private: boolean; settings: { policy?: string } }): string | undefined {
  return bucket.settings.policy ?? (bucket.private ? undefined : anonymousReadPolicy(bucket.name));
}

export async function getBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const text = policyText(bucket);
  if (text === undefined) throw S3Errors.NoSuchBucketPolicy();
  return { status: 200, headers: { 'content-type': 'application/json' }, body: text };
}

/** Stores `text` (undefined: removes the policy); the Kodo flag follows the anonymous-read policy (module comment). */
async function storePolicy(g: Granary, bucket: string, text: string | undefined): Promise<void> {
  let before: string | undefined;
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    before = cur.policy;
    const next = { ...cur };
    if (text === undefined) delete next.policy;
    else next.policy = text;
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
  if (text !== undefined && isAnonymousRead(text, bucket)) await setBucketPrivate(g, bucket, false);
  else if (before === undefined ? text === undefined : isAnonymousRead(before, bucket)) await setBucketPrivate(g, bucket, true);
}

export async function putBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  let text: string;
  try {
    text = await readXmlBody(req.body(), MAX_POLICY_BYTES);
  } catch (err) {
    if (err instanceof S3Error && err.code === 'MalformedXML') throw S3Errors.MalformedPolicy('Policy exceeds the maximum allowed document size');
    throw err;
  }
  const parsed = parseBucketPolicy(text, bucket.name);
  refusePublicPolicy(bucket.settings.publicAccessBlock, policyIsPublic(parsed));
  await storePolicy(g, bucket.name, text);
  return { status: 204 };
}

export async function deleteBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await storePolicy(g, bucket.name, undefined);
  return { status: 204 };
}

/** GetBucketPolicyStatus: `<PolicyStatus><IsPublic>` by AWS's rule (bucket-policy-doc.ts `policyIsPublic`). */
export async function getBucketPolicyStatus(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const text = policyText(bucket);
  if (text === undefined) throw S3Errors.NoSuchBucketPolicy();
  const isPublic = policyIsPublic(parseBucketPolicy(text, bucket.name));
  return { status: 200, headers: { 'content-type': 'application/xml' }, body: xmlDocument('PolicyStatus', `<IsPublic>${isPublic}</IsPublic>`) };
}
