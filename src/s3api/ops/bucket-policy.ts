/**
 * GetBucketPolicy, PutBucketPolicy, DeleteBucketPolicy (`GET|PUT|DELETE /<bucket>?policy`): the one bucket policy
 * Kodo's access model can hold, anonymous read — `{"Effect":"Allow","Principal":"*","Action":"s3:GetObject",
 * "Resource":"arn:aws:s3:::<bucket>/*"}` — mapped onto the bucket's private flag (docs/development/kodo-protocol.md
 * §18.10): Put makes the bucket public, Delete private, Get answers the policy for a public bucket and
 * NoSuchBucketPolicy (404) for a private one. A body that is not JSON → MalformedPolicy (400); any other policy
 * (another action, principal, resource, a Deny, a Condition, several statements) → NotImplemented (501), never
 * stored in part.
 */
import type { Granary } from '../../context.js';
import { setBucketPrivate } from '../../buckets/buckets.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import type { S3Request, S3Response } from '../types.js';
import { readXmlBody } from '../xml.js';

/** The anonymous-read policy of a bucket, as Get answers it. */
export function anonymousReadPolicy(bucket: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` }],
  });
}

/** A value or a one-element list of it. */
const only = (v: unknown): unknown => (Array.isArray(v) && v.length === 1 ? v[0] : v);

/** Whether `doc` is exactly the anonymous-read policy of `bucket`. */
function isAnonymousRead(doc: unknown, bucket: string): boolean {
  const d = doc as { Statement?: unknown } | null;
  const st = only(d?.Statement) as Record<string, unknown> | undefined;
  if (!st || typeof st !== 'object' || Array.isArray(st)) return false;
  const allowed = new Set(['Sid', 'Effect', 'Principal', 'Action', 'Resource']);
  if (Object.keys(st).some((k) => !allowed.has(k))) return false;
  const principal = st.Principal;
  const anyone = principal === '*' || (typeof principal === 'object' && principal !== null && only((principal as { AWS?: unknown }).AWS) === '*');
  return st.Effect === 'Allow' && anyone && only(st.Action) === 's3:GetObject' && only(st.Resource) === `arn:aws:s3:::${bucket}/*`;
}

export async function getBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  if (bucket.private) throw S3Errors.NoSuchBucketPolicy();
  return { status: 200, headers: { 'content-type': 'application/json' }, body: anonymousReadPolicy(bucket.name) };
}

export async function putBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  let doc: unknown;
  try {
    doc = JSON.parse(await readXmlBody(req.body(), 20 * 1024));
  } catch {
    throw S3Errors.MalformedPolicy('Policies must be valid JSON');
  }
  if (!isAnonymousRead(doc, bucket.name)) {
    throw S3Errors.NotImplemented(`Only the anonymous-read policy (Allow, Principal *, s3:GetObject on arn:aws:s3:::${bucket.name}/*) is supported`);
  }
  await setBucketPrivate(g, bucket.name, false);
  return { status: 204 };
}

export async function deleteBucketPolicy(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setBucketPrivate(g, bucket.name, true);
  return { status: 204 };
}
