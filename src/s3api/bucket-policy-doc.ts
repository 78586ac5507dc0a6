/**
 * S3 bucket policy documents, the pure part: parsing and checking what PutBucketPolicy receives into the form the
 * matcher (bucket-policy-eval.ts) applies. Source: AWS "Policies and permissions in Amazon S3" and "IAM JSON policy
 * elements reference" (docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements.html); the language
 * Granary accepts is docs/reference/bucket-policies.md.
 *
 * Shape: `{Version?, Id?, Statement: <statement> | [<statement>…]}`; a statement `{Sid?, Effect: Allow|Deny,
 * Principal, Action | NotAction, Resource | NotResource, Condition?}`. `Principal` is `"*"` or `{"AWS": <id> | [..]}`
 * (an id: `*`, an account's canonical id = its AccessKey, `arn:aws:iam::<account>:root`, or
 * `arn:aws:iam::<account>:user/<sub-user alias>`). Resources are `arn:aws:s3:::<bucket>` or
 * `arn:aws:s3:::<bucket>/<key pattern>` of this bucket only (`*` and `?` wildcards).
 *
 * Errors: MalformedPolicy (400) with AWS's messages ("Policies must be valid JSON…", "Missing required field
 * Principal", "Policy has invalid resource", "Invalid Condition type : X", "Policy has invalid action", …); a
 * document over 20 KiB: MalformedPolicy "Policy exceeds the maximum allowed document size" (AWS's size limit for
 * bucket policies is 20 KB).
 */
import { S3Errors } from './errors.js';

/** Largest policy document, bytes (AWS: bucket policies are limited to 20 KB). */
export const MAX_POLICY_BYTES = 20 * 1024;

/** A principal a statement names: anyone, an account (canonical id), or a sub-user of an account. */
export type PolicyPrincipal = { kind: 'any' } | { kind: 'account'; account: string } | { kind: 'user'; account: string; alias: string };

/** One condition test: operator (without `IfExists`/set prefixes), the key (lower case) and the values. */
export interface PolicyCondition {
  op: string;
  ifExists: boolean;
  set: 'ForAnyValue' | 'ForAllValues' | undefined;
  key: string;
  values: string[];
}

/** A statement as the matcher applies it. */
export interface PolicyStatement {
  sid: string | undefined;
  effect: 'Allow' | 'Deny';
  principals: PolicyPrincipal[];
  /** Patterns (lower case, `*`/`?`); `notAction` true when they came from NotAction. */
  actions: string[];
  notAction: boolean;
  /** Patterns on `<bucket>` or `<bucket>/<key>` (the ARN's part after `arn:aws:s3:::`). */
  resources: string[];
  notResource: boolean;
  conditions: PolicyCondition[];
}

export interface ParsedPolicy {
  statements: PolicyStatement[];
}

/** The condition operators understood (AWS's names; the `IfExists` suffix and set prefixes are separate). */
export const CONDITION_OPERATORS: ReadonlySet<string> = new Set([
  'StringEquals', 'StringNotEquals', 'StringEqualsIgnoreCase', 'StringNotEqualsIgnoreCase', 'StringLike', 'StringNotLike',
  'NumericEquals', 'NumericNotEquals', 'NumericLessThan', 'NumericLessThanEquals', 'NumericGreaterThan', 'NumericGreaterThanEquals',
  'DateEquals', 'DateNotEquals', 'DateLessThan', 'DateLessThanEquals', 'DateGreaterThan', 'DateGreaterThanEquals',
  'Bool', 'IpAddress', 'NotIpAddress', 'Null', 'ArnEquals', 'ArnLike', 'ArnNotEquals', 'ArnNotLike',
]);

const bad = (message: string) => S3Errors.MalformedPolicy(message);

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

function strings(v: unknown, what: string): string[] {
  const out = list(v);
  if (out.length === 0 || out.some((s) => typeof s !== 'string' || s === '')) throw bad(`Policy has an invalid ${what}`);
  return out as string[];
}

function principal(id: string): PolicyPrincipal {
  if (id === '*') return { kind: 'any' };
  const m = /^arn:aws:iam::([^:]+):(root|user\/(.+))$/.exec(id);
  if (m) return m[3] !== undefined ? { kind: 'user', account: m[1]!, alias: m[3] } : { kind: 'account', account: m[1]! };
  if (id.startsWith('arn:')) throw bad('Invalid principal in policy');
  return { kind: 'account', account: id };
}

function principals(v: unknown): PolicyPrincipal[] {
  if (v === undefined) throw bad('Missing required field Principal');
  if (v === '*') return [{ kind: 'any' }];
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('Invalid principal in policy');
  const out: PolicyPrincipal[] = [];
  for (const [type, ids] of Object.entries(v as Record<string, unknown>)) {
    if (type === 'CanonicalUser' || type === 'AWS') out.push(...strings(ids, 'principal').map(principal));
    else throw bad(`Invalid principal in policy: principal type ${type} is not supported`);
  }
  if (out.length === 0) throw bad('Invalid principal in policy');
  return out;
}

function action(a: string): string {
  if (a === '*') return a;
  if (!/^s3:[A-Za-z*?]+$/.test(a)) throw bad('Policy has invalid action');
  return a.toLowerCase();
}

function resource(r: string, bucket: string): string {
  const prefix = 'arn:aws:s3:::';
  if (!r.startsWith(prefix)) throw bad('Policy has invalid resource');
  const rest = r.slice(prefix.length);
  const slash = rest.indexOf('/');
  const b = slash < 0 ? rest : rest.slice(0, slash);
  // Only this bucket (AWS: "Action does not apply to any resource(s) in statement" / "Policy has invalid resource").
  if (b !== bucket) throw bad('Policy has invalid resource');
  return rest;
}

function conditions(v: unknown): PolicyCondition[] {
  if (v === undefined) return [];
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('Policy has an invalid condition');
  const out: PolicyCondition[] = [];
  for (const [type, block] of Object.entries(v as Record<string, unknown>)) {
    let name = type;
    let set: PolicyCondition['set'];
    const colon = name.indexOf(':');
    if (colon >= 0) {
      const s = name.slice(0, colon);
      if (s !== 'ForAnyValue' && s !== 'ForAllValues') throw bad(`Invalid Condition type : ${type}`);
      set = s;
      name = name.slice(colon + 1);
    }
    const ifExists = name.endsWith('IfExists') && name !== 'IfExists';
    if (ifExists) name = name.slice(0, -'IfExists'.length);
    if (!CONDITION_OPERATORS.has(name) || (ifExists && name === 'Null')) throw bad(`Invalid Condition type : ${type}`);
    if (typeof block !== 'object' || block === null || Array.isArray(block)) throw bad(`Invalid Condition type : ${type}`);
    for (const [key, values] of Object.entries(block as Record<string, unknown>)) {
      const vals = list(values).map((x) => (typeof x === 'string' ? x : typeof x === 'number' || typeof x === 'boolean' ? String(x) : null));
      if (vals.length === 0 || vals.some((x) => x === null)) throw bad(`Invalid Condition value for key ${key}`);
      out.push({ op: name, ifExists, set, key: key.toLowerCase(), values: vals as string[] });
    }
  }
  return out;
}

function statement(raw: unknown, bucket: string): PolicyStatement {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad('Policy has an invalid statement');
  const s = raw as Record<string, unknown>;
  const known = new Set(['Sid', 'Effect', 'Principal', 'NotPrincipal', 'Action', 'NotAction', 'Resource', 'NotResource', 'Condition']);
  for (const k of Object.keys(s)) if (!known.has(k)) throw bad(`Unknown field ${k}`);
  if (s.NotPrincipal !== undefined) throw bad('NotPrincipal is not supported: name the principals in Principal and use a Deny or a condition');
  if (s.Effect !== 'Allow' && s.Effect !== 'Deny') throw bad(s.Effect === undefined ? 'Missing required field Effect' : 'Invalid effect');
  if ((s.Action === undefined) === (s.NotAction === undefined)) throw bad(s.Action === undefined ? 'Missing required field Action' : 'Policy has both Action and NotAction');
  if ((s.Resource === undefined) === (s.NotResource === undefined)) throw bad(s.Resource === undefined ? 'Missing required field Resource' : 'Policy has both Resource and NotResource');
  if (s.Sid !== undefined && typeof s.Sid !== 'string') throw bad('Invalid Sid');
  return {
    sid: s.Sid as string | undefined,
    effect: s.Effect,
    principals: principals(s.Principal),
    actions: strings(s.Action ?? s.NotAction, 'action').map(action),
    notAction: s.Action === undefined,
    resources: strings(s.Resource ?? s.NotResource, 'resource').map((r) => resource(r, bucket)),
    notResource: s.Resource === undefined,
    conditions: conditions(s.Condition),
  };
}

/** The policy `text` of `bucket`, checked (MalformedPolicy, 400, see the module comment). */
export function parseBucketPolicy(text: string, bucket: string): ParsedPolicy {
  if (Buffer.byteLength(text) > MAX_POLICY_BYTES) throw bad('Policy exceeds the maximum allowed document size');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw bad("Policies must be valid JSON and the first byte must be '{'");
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad("Policies must be valid JSON and the first byte must be '{'");
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (k !== 'Version' && k !== 'Id' && k !== 'Statement') throw bad(`Unknown field ${k}`);
  if (d.Version !== undefined && d.Version !== '2012-10-17' && d.Version !== '2008-10-17') throw bad('The policy must contain a valid version string');
  if (d.Statement === undefined) throw bad('Missing required field Statement');
  const raw = list(d.Statement);
  if (raw.length === 0) throw bad('Could not parse the policy: Statement is empty!');
  return { statements: raw.map((s) => statement(s, bucket)) };
}

/**
 * Whether a policy is public (GetBucketPolicyStatus, AWS "The meaning of public"): some Allow names the principal
 * `*` without a condition on a fixed source (aws:SourceIp, aws:SourceArn, aws:SourceVpc(e), aws:SourceAccount,
 * aws:SourceOwner, aws:PrincipalOrgID, aws:userid) that narrows it.
 */
export function policyIsPublic(p: ParsedPolicy): boolean {
  const narrowing = new Set(['aws:sourceip', 'aws:sourcearn', 'aws:sourcevpc', 'aws:sourcevpce', 'aws:sourceaccount', 'aws:sourceowner', 'aws:principalorgid', 'aws:userid', 'aws:principalaccount']);
  return p.statements.some(
    (s) =>
      s.effect === 'Allow' &&
      s.principals.some((x) => x.kind === 'any') &&
      !s.conditions.some((c) => narrowing.has(c.key) && !c.op.startsWith('Not') && c.op !== 'StringNotEquals' && c.op !== 'StringNotLike' && !c.values.some((v) => v === '*' || v === '0.0.0.0/0' || v === '::/0')),
  );
}
