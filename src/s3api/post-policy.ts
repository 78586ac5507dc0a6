/**
 * The POST policy of a browser form upload (docs/development/kodo-protocol.md §18.9): base64 JSON
 * `{"expiration": "<ISO 8601>", "conditions": [...]}`, signed with SigV4 (`x-amz-algorithm` AWS4-HMAC-SHA256,
 * `x-amz-credential` `<ak>/<yyyymmdd>/<region>/s3/aws4_request`, `x-amz-date`, `x-amz-signature` = hex
 * HMAC-SHA256 of the base64 policy under the signing key) or SigV2 (`AWSAccessKeyId`, `signature` = base64
 * HMAC-SHA1 of the base64 policy under the secret). Signatures compare in constant time.
 *
 * Conditions: `{"<field>": "<value>"}` and `["eq", "$<field>", "<value>"]` (exact), `["starts-with", "$<field>",
 * "<prefix>"]` (`""` = anything), `["content-length-range", min, max]` (bytes). Field names compare
 * case-insensitively; `bucket` is the form's bucket. Every form field must be named by a condition except
 * `policy`, `x-amz-signature`, `signature`, `awsaccesskeyid`, `file`, `x-ignore-*` and `x-amz-checksum-*`.
 * Errors: InvalidPolicyDocument / MalformedPolicy (400) for a policy that does not parse; AccessDenied (403)
 * "Invalid according to Policy: …" for an expired policy, a failed condition or an extra field;
 * SignatureDoesNotMatch, InvalidAccessKeyId (403).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretLookup } from '../auth/management.js';
import { sameHex, signingKey } from './auth/sigv4.js';
import { S3Errors } from './errors.js';
import { acceptsSigningRegion } from './region.js';

/** One condition of a policy. */
export type PolicyCondition =
  | { op: 'eq' | 'starts-with'; field: string; value: string }
  | { op: 'content-length-range'; min: number; max: number };

/** A parsed policy. */
export interface PostPolicy {
  expirationMs: number;
  conditions: PolicyCondition[];
}

/** Fields never named by a condition. */
const EXEMPT = new Set(['policy', 'x-amz-signature', 'signature', 'awsaccesskeyid', 'file']);

/**
 * The policy's `expiration`: ISO 8601 with the `T` (`2026-12-07T12:00:00Z`, fractions and an offset allowed), as
 * the AWS SDKs write it; Python's `str(datetime)` (a space for the `T`) is InvalidPolicyDocument.
 */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;

/** A `content-length-range` bound: a non-negative integer (a number or its decimal string); undefined otherwise. */
function byteCount(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Parses the base64 policy; MalformedPolicy / InvalidPolicyDocument when it is not a policy. */
export function parsePolicy(base64: string): PostPolicy {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(base64, 'base64').toString('utf8'));
  } catch {
    throw S3Errors.MalformedPolicy();
  }
  const d = doc as { expiration?: unknown; conditions?: unknown } | null;
  if (!d || typeof d !== 'object' || typeof d.expiration !== 'string' || !Array.isArray(d.conditions)) {
    throw S3Errors.InvalidPolicyDocument('Invalid Policy: Policy missing expiration or conditions.');
  }
  const expirationMs = ISO_8601.test(d.expiration) ? Date.parse(d.expiration) : Number.NaN;
  if (Number.isNaN(expirationMs)) throw S3Errors.InvalidPolicyDocument('Invalid Policy: Invalid \'expiration\' value.');
  const conditions: PolicyCondition[] = [];
  for (const c of d.conditions as unknown[]) {
    if (Array.isArray(c)) {
      const [op, a, b] = c as unknown[];
      const name = typeof op === 'string' ? op.toLowerCase() : '';
      const min = byteCount(a);
      const max = byteCount(b);
      if (name === 'content-length-range' && c.length === 3 && min !== undefined && max !== undefined && min <= max) {
        conditions.push({ op: 'content-length-range', min, max });
      } else if ((name === 'eq' || name === 'starts-with') && typeof a === 'string' && a.startsWith('$') && typeof b === 'string') {
        conditions.push({ op: name, field: a.slice(1).toLowerCase(), value: b });
      } else {
        throw S3Errors.InvalidPolicyDocument(`Invalid Policy: Invalid Condition: ${JSON.stringify(c)}`);
      }
    } else if (c && typeof c === 'object' && Object.keys(c).length === 1) {
      const [field, value] = Object.entries(c as Record<string, unknown>)[0]!;
      if (typeof value !== 'string') throw S3Errors.InvalidPolicyDocument(`Invalid Policy: Invalid Simple-Condition: ${JSON.stringify(c)}`);
      conditions.push({ op: 'eq', field: field.toLowerCase(), value });
    } else {
      throw S3Errors.InvalidPolicyDocument(`Invalid Policy: Invalid Condition: ${JSON.stringify(c)}`);
    }
  }
  return { expirationMs, conditions };
}

/** InvalidArgument for a signed form that lacks `field`, with S3's wording. */
function missingField(field: string): Error {
  return S3Errors.InvalidArgument(`Bucket POST must contain a field named '${field}'.  If it is specified, please check the order of the fields.`);
}

/** Whether the form carries a policy or any signing field (a signed form); else it is anonymous. */
export function isSignedForm(fields: Map<string, string>): boolean {
  return ['policy', 'x-amz-signature', 'x-amz-credential', 'x-amz-algorithm', 'signature', 'awsaccesskeyid'].some((f) => fields.has(f));
}

/**
 * The AccessKey whose secret signed the policy of `fields` (lower-case names; a signed form, `isSignedForm`):
 * InvalidArgument (400) when a signing field or the policy is missing, SignatureDoesNotMatch /
 * InvalidAccessKeyId (403) otherwise.
 */
export function verifyPolicySignature(fields: Map<string, string>, secretOf: SecretLookup, serverRegion: string): string {
  const policy = fields.get('policy');
  const v4 = fields.get('x-amz-signature');
  if (v4 !== undefined || fields.has('x-amz-credential') || fields.has('x-amz-algorithm')) {
    if (v4 === undefined) throw missingField('X-Amz-Signature');
    if ((fields.get('x-amz-algorithm') ?? '') !== 'AWS4-HMAC-SHA256') throw S3Errors.InvalidArgument('Only AWS4-HMAC-SHA256 is supported as x-amz-algorithm');
    const parts = (fields.get('x-amz-credential') ?? '').split('/');
    const [ak, date, region, service, end] = parts;
    if (parts.length !== 5 || !ak || !date || !region || service !== 's3' || end !== 'aws4_request') {
      throw S3Errors.InvalidArgument('Invalid x-amz-credential');
    }
    if (!acceptsSigningRegion(serverRegion, region)) throw S3Errors.InvalidArgument(`the region '${region}' is wrong`);
    if (policy === undefined) throw missingField('Policy');
    const secret = secretOf(ak);
    if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
    const expected = createHmac('sha256', signingKey(secret, date, region)).update(policy, 'utf8').digest('hex');
    if (!sameHex(v4, expected)) throw S3Errors.SignatureDoesNotMatch();
    return ak;
  }
  const v2 = fields.get('signature');
  const ak = fields.get('awsaccesskeyid');
  if (ak === undefined) throw missingField('AWSAccessKeyId');
  if (v2 === undefined) throw missingField('Signature');
  if (policy === undefined) throw missingField('Policy');
  const secret = secretOf(ak);
  if (secret === undefined) throw S3Errors.InvalidAccessKeyId();
  const expected = createHmac('sha1', secret).update(policy, 'utf8').digest();
  const got = Buffer.from(v2, 'base64');
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) throw S3Errors.SignatureDoesNotMatch();
  return ak;
}

/** Checks the fields (lower-case names; `bucket` set) against the policy at `nowMs`; returns the size bounds. */
export function checkPolicy(policy: PostPolicy, fields: Map<string, string>, nowMs: number): { min: number; max: number } {
  if (policy.expirationMs <= nowMs) throw S3Errors.AccessDenied('Invalid according to Policy: Policy expired.');
  const named = new Set<string>();
  let min = 0;
  let max = Number.MAX_SAFE_INTEGER;
  for (const c of policy.conditions) {
    if (c.op === 'content-length-range') {
      min = Math.max(min, c.min);
      max = Math.min(max, c.max);
      continue;
    }
    named.add(c.field);
    const v = fields.get(c.field) ?? '';
    const ok = c.op === 'eq' ? v === c.value : v.startsWith(c.value);
    if (!ok) throw S3Errors.AccessDenied(`Invalid according to Policy: Policy Condition failed: ["${c.op}", "$${c.field}", "${c.value}"]`);
  }
  for (const name of fields.keys()) {
    // A checksum field only narrows what may be stored: it needs no condition.
    if (name === 'bucket' || EXEMPT.has(name) || name.startsWith('x-ignore-') || name.startsWith('x-amz-checksum-') || named.has(name)) continue;
    throw S3Errors.AccessDenied(`Invalid according to Policy: Extra input fields: ${name}`);
  }
  return { min, max };
}
