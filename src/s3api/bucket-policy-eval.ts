/**
 * The S3 bucket policy matcher: one pure function deciding what a bucket's policy (bucket-policy-doc.ts) says of a
 * request — `Deny`, `Allow` or nothing — with the statement that decided. No I/O: the caller (auth-step.ts) gives
 * the requester and the request's condition values. Precedence is the IAM evaluator's own (iam/evaluate.ts
 * `strongestMatch`: an explicit Deny wins, then an Allow). Source: AWS "Policy evaluation logic" and "IAM JSON
 * policy elements: Condition operators"; the supported subset is docs/reference/bucket-policies.md.
 *
 * Matching: action patterns (`s3:*`, `s3:Get*`, `*`) and resource patterns (`<bucket>/<key>` with `*` any run of
 * characters and `?` one) are case-insensitive for actions, case-sensitive for resources. A condition key absent
 * from the request fails every operator but `Null`, `…IfExists` (true when absent) and `ForAllValues:` (true when
 * absent); several values of one key are ORed, several keys and operators of a statement ANDed.
 */
import { BlockList, isIP } from 'node:net';
import { strongestMatch } from '../iam/evaluate.js';
import type { ParsedPolicy, PolicyCondition, PolicyPrincipal, PolicyStatement } from './bucket-policy-doc.js';

/** Who asks: anonymous, an account's key (`account` = its canonical id), or a sub-user (`alias`) of `account`. */
export type PolicyRequester = { kind: 'anonymous' } | { kind: 'account'; account: string } | { kind: 'user'; account: string; alias: string };

/** A request as the matcher sees it. */
export interface PolicyRequest {
  /** The S3 action, e.g. `s3:GetObject`. */
  action: string;
  bucket: string;
  key?: string;
  who: PolicyRequester;
  /** Condition keys (lower case, e.g. `aws:sourceip`, `s3:prefix`) → their values; absent keys are left out. */
  context: Readonly<Record<string, readonly string[]>>;
}

export interface PolicyVerdict {
  effect: 'Allow' | 'Deny';
  /** Index of the deciding statement. */
  statement: number;
  sid: string | undefined;
}

const WILDCARDS = new Map<string, RegExp>();

/** Whether `text` matches `pattern` (`*` any run of characters, `?` one character; `ci`: case-insensitive). */
export function wildcardMatch(pattern: string, text: string, ci = false): boolean {
  if (!/[*?]/.test(pattern)) return ci ? pattern.toLowerCase() === text.toLowerCase() : pattern === text;
  const id = `${ci ? 'i' : 's'}${pattern}`;
  let re = WILDCARDS.get(id);
  if (!re) {
    const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    re = new RegExp(`^${body}$`, ci ? 'is' : 's');
    if (WILDCARDS.size >= 4096) WILDCARDS.clear();
    WILDCARDS.set(id, re);
  }
  return re.test(text);
}

function principalCovers(p: PolicyPrincipal, who: PolicyRequester): boolean {
  if (p.kind === 'any') return true;
  if (who.kind === 'anonymous') return false;
  if (p.kind === 'account') return who.kind === 'account' && who.account === p.account;
  return who.kind === 'user' && who.account === p.account && who.alias === p.alias;
}

function ipIn(ip: string, cidr: string): boolean {
  const [addr, bits] = cidr.split('/');
  const fam = isIP(addr ?? '');
  const ipFam = isIP(ip);
  if (fam === 0 || ipFam === 0) return false;
  const list = new BlockList();
  const type = fam === 6 ? 'ipv6' : 'ipv4';
  const len = bits === undefined ? (fam === 6 ? 128 : 32) : Number(bits);
  if (!Number.isInteger(len)) return false;
  list.addSubnet(addr!, len, type);
  return list.check(ip, ipFam === 6 ? 'ipv6' : 'ipv4');
}

const dateOf = (s: string): number => (/^\d+$/.test(s) ? Number(s) * 1000 : Date.parse(s));

/** One value of the request against one policy value, for a positive operator (negations are applied after). */
function test(op: string, have: string, want: string): boolean {
  switch (op) {
    case 'StringEquals':
    case 'StringNotEquals':
    case 'ArnEquals':
    case 'ArnNotEquals':
      return have === want;
    case 'StringEqualsIgnoreCase':
    case 'StringNotEqualsIgnoreCase':
      return have.toLowerCase() === want.toLowerCase();
    case 'StringLike':
    case 'StringNotLike':
    case 'ArnLike':
    case 'ArnNotLike':
      return wildcardMatch(want, have);
    case 'Bool':
      return have.toLowerCase() === want.toLowerCase();
    case 'IpAddress':
    case 'NotIpAddress':
      return ipIn(have, want);
  }
  const numeric = op.startsWith('Numeric');
  const a = numeric ? Number(have) : dateOf(have);
  const b = numeric ? Number(want) : dateOf(want);
  if (Number.isNaN(a) || Number.isNaN(b)) return false;
  const rel = op.replace(/^(Numeric|Date)/, '');
  switch (rel) {
    case 'Equals':
    case 'NotEquals':
      return a === b;
    case 'LessThan':
      return a < b;
    case 'LessThanEquals':
      return a <= b;
    case 'GreaterThan':
      return a > b;
    case 'GreaterThanEquals':
      return a >= b;
  }
  return false;
}

const NEGATED = new Set(['StringNotEquals', 'StringNotEqualsIgnoreCase', 'StringNotLike', 'NumericNotEquals', 'DateNotEquals', 'NotIpAddress', 'ArnNotEquals', 'ArnNotLike']);

/** Whether one condition holds for the request's values (`have`, undefined when the key is absent). */
export function conditionHolds(c: PolicyCondition, have: readonly string[] | undefined): boolean {
  if (c.op === 'Null') {
    const wantAbsent = c.values.some((v) => v.toLowerCase() === 'true');
    return wantAbsent === (have === undefined || have.length === 0);
  }
  if (have === undefined || have.length === 0) return c.ifExists || c.set === 'ForAllValues';
  const negated = NEGATED.has(c.op);
  const one = (v: string): boolean => {
    const any = c.values.some((w) => test(c.op, v, w));
    return negated ? !any : any;
  };
  if (c.set === 'ForAllValues') return have.every(one);
  if (c.set === 'ForAnyValue') return have.some(one);
  // A single-valued key: the request's value (a multi-valued one without a set prefix: any of them).
  return negated ? have.every(one) : have.some(one);
}

function statementMatches(s: PolicyStatement, req: PolicyRequest): boolean {
  if (!s.principals.some((p) => principalCovers(p, req.who))) return false;
  const action = req.action.toLowerCase();
  if (s.actions.some((a) => wildcardMatch(a, action, true)) === s.notAction) return false;
  const resource = req.key === undefined ? req.bucket : `${req.bucket}/${req.key}`;
  if (s.resources.some((r) => wildcardMatch(r, resource)) === s.notResource) return false;
  return s.conditions.every((c) => conditionHolds(c, req.context[c.key]));
}

/** What the policy says of the request: the deciding statement's effect (Deny first), or undefined (silent). */
export function evaluateBucketPolicy(policy: ParsedPolicy, req: PolicyRequest): PolicyVerdict | undefined {
  return strongestMatch(
    (function* () {
      for (const [i, s] of policy.statements.entries()) {
        if (statementMatches(s, req)) yield { effect: s.effect, statement: i, sid: s.sid } satisfies PolicyVerdict;
      }
    })(),
  );
}
