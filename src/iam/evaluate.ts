/**
 * The IAM policy evaluator: one pure function deciding whether a principal may do an action on a resource, with
 * the reason. No I/O: the caller gives the principal with every policy that applies to it (a sub-user's own and
 * its groups', IamStore.effectivePolicies → `principalOf`).
 *
 * Rules (Qiniu's IAM introduction, developer.qiniu.com/af/10149: "所有虚拟账号在未被授权时没有对任何资源执行任何操作的
 * 权利"; AWS IAM's evaluation logic for the precedence):
 * 1. the root key and an account owner may do everything (their own buckets are checked elsewhere, auth/authorize.ts);
 * 2. a disabled sub-user may do nothing;
 * 3. an explicit `Deny` matching the action and the resource wins over any `Allow`;
 * 4. else an `Allow` matching both allows;
 * 5. else the sub-user is refused (default deny).
 *
 * Matching: an action pattern is `*`, `<service>/*` or `<service>/<Action>` (case-insensitive). A service-level
 * action (actions.ts, e.g. `kodo/Mkbucket`) matches a statement whatever its resources. Otherwise a resource pattern
 * is `*` or `qrn:<product>:<zone>:<uid>:<rest>` with product `kodo` (or `*`), any zone, uid empty, `*` or the account's;
 * `<rest>` is matched with `*` = any run of characters (including `/`) against `<bucket>/<key>` for an object, and
 * for a bucket-level request (no key: listing, bucket settings) against `<bucket>` — or, as `<bucket>/*`, the whole
 * bucket, or as `<bucket>/<p>*`, a listing whose prefix starts with `<p>`.
 *
 * Designed so the S3 door and bucket policies map onto it later: an S3 action maps to a Kodo action
 * (`s3:GetObject` → `kodo/Get`, the table in docs/reference/iam.md) and an S3 ARN to the same bucket/key request.
 */
import type { IamPolicyRecord } from '../ports/iam.js';
import { kodoAction } from './actions.js';
import { storedStatements, type Statement } from './policy.js';

/** A policy as the evaluator applies it: where it comes from and its statements. */
export interface AppliedPolicy {
  alias: string;
  /** Attached to the user itself, or inherited from one of its groups. */
  via: 'user' | { group: string };
  statements: readonly Statement[];
}

/** Who is asking. */
export type Principal =
  | { kind: 'root' }
  | { kind: 'owner'; owner: string }
  | { kind: 'user'; owner: string; ownerUid: number; alias: string; enabled: boolean; policies: readonly AppliedPolicy[] };

/** What is asked: an action (`kodo/Get`) on a bucket, an object (`key`) or a listing (`prefix`). */
export interface IamRequest {
  action: string;
  /** Absent for service-level actions that name no bucket (creating one). */
  bucket?: string;
  key?: string;
  /** For a listing: the prefix listed (bucket-level request). */
  prefix?: string;
}

/** The statement that decided, when one did. */
export interface Matched {
  policy: string;
  via: AppliedPolicy['via'];
  /** Index in the policy's statements. */
  statement: number;
  effect: Statement['effect'];
}

export interface Decision {
  allowed: boolean;
  /** Why, in one sentence (logged and audited with a refusal). */
  reason: string;
  matched?: Matched;
}

const GLOBS = new Map<string, RegExp>();
const GLOB_CACHE_MAX = 4096;

/** Whether `text` matches `pattern` (`*` = any run of characters, everything else literal). */
export function globMatch(pattern: string, text: string): boolean {
  if (!pattern.includes('*')) return pattern === text;
  let re = GLOBS.get(pattern);
  if (!re) {
    re = new RegExp(`^${pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
    if (GLOBS.size >= GLOB_CACHE_MAX) GLOBS.clear();
    GLOBS.set(pattern, re);
  }
  return re.test(text);
}

/** Whether the action pattern covers `action`. */
export function actionMatches(pattern: string, action: string): boolean {
  if (pattern === '*') return true;
  const p = pattern.toLowerCase();
  const a = action.toLowerCase();
  if (p.endsWith('/*')) return a.startsWith(p.slice(0, -1));
  return p === a;
}

/** Whether the resource pattern covers the request, for the account of uid `ownerUid`. */
export function resourceMatches(pattern: string, req: IamRequest, ownerUid: number): boolean {
  if (pattern === '*') return true;
  const parts = pattern.split(':');
  if (parts.length < 5 || parts[0] !== 'qrn') return false;
  const [, product, , uid] = parts;
  if (product !== 'kodo' && product !== '*') return false;
  if (uid !== '' && uid !== '*' && uid !== String(ownerUid)) return false;
  const rest = parts.slice(4).join(':');
  if (rest === '*') return true;
  if (req.bucket === undefined) return false;
  if (req.key !== undefined) return globMatch(rest, `${req.bucket}/${req.key}`);
  if (globMatch(rest, req.bucket)) return true;
  const slash = rest.indexOf('/');
  if (slash < 0 || !globMatch(rest.slice(0, slash), req.bucket)) return false;
  const keyPart = rest.slice(slash + 1);
  if (keyPart === '*') return true;
  // A listing under a prefix: `<p>*` covers every key the listing can show when the prefix starts with <p>.
  if (req.prefix === undefined || !keyPart.endsWith('*') || keyPart.slice(0, -1).includes('*')) return false;
  return req.prefix.startsWith(keyPart.slice(0, -1));
}

/** Whether the statement applies to the request. */
function statementMatches(s: Statement, req: IamRequest, ownerUid: number): boolean {
  if (!s.action.some((a) => actionMatches(a, req.action))) return false;
  if (kodoAction(req.action)?.scope === 'service') return true;
  return s.resource.some((r) => resourceMatches(r, req, ownerUid));
}

/**
 * AWS's precedence of the statements that match a request — the one decision rule of both policy evaluators (IAM
 * policies here, S3 bucket policies in s3api/bucket-policy-eval.ts): the first explicit `Deny` wins (the rest are
 * not looked at), else the first `Allow`, else undefined (implicit deny).
 */
export function strongestMatch<M extends { effect: 'Allow' | 'Deny' }>(matches: Iterable<M>): M | undefined {
  let allow: M | undefined;
  for (const m of matches) {
    if (m.effect === 'Deny') return m;
    allow ??= m;
  }
  return allow;
}

const describe = (m: Matched): string =>
  `statement ${m.statement} of policy "${m.policy}"${m.via === 'user' ? '' : ` (via group "${m.via.group}")`}`;

/** The decision for `principal` asking `req` (see the module comment). */
export function evaluate(principal: Principal, req: IamRequest): Decision {
  if (principal.kind === 'root') return { allowed: true, reason: 'the root key may do everything' };
  if (principal.kind === 'owner') return { allowed: true, reason: 'the account owner may do everything in its account' };
  if (!principal.enabled) return { allowed: false, reason: `sub-user "${principal.alias}" is disabled` };
  const decided = strongestMatch(
    (function* () {
      for (const p of principal.policies) {
        for (const [i, s] of p.statements.entries()) {
          if (statementMatches(s, req, principal.ownerUid)) yield { policy: p.alias, via: p.via, statement: i, effect: s.effect } satisfies Matched;
        }
      }
    })(),
  );
  if (decided?.effect === 'Deny') return { allowed: false, reason: `denied by ${describe(decided)}`, matched: decided };
  if (decided) return { allowed: true, reason: `allowed by ${describe(decided)}`, matched: decided };
  return { allowed: false, reason: `no policy of sub-user "${principal.alias}" allows ${req.action} here` };
}

/** A sub-user principal from the store's answer (IamStore.effectivePolicies); disabled policies are left out. */
export function principalOf(
  user: { owner: string; alias: string; enabled: boolean },
  ownerUid: number,
  effective: { own: readonly IamPolicyRecord[]; groups: ReadonlyArray<{ group: string; policies: readonly IamPolicyRecord[] }> },
): Principal {
  const applied = (p: IamPolicyRecord, via: AppliedPolicy['via']): AppliedPolicy => ({ alias: p.alias, via, statements: storedStatements(p.statement) });
  return {
    kind: 'user',
    owner: user.owner,
    ownerUid,
    alias: user.alias,
    enabled: user.enabled,
    policies: [
      ...effective.own.filter((p) => p.enabled).map((p) => applied(p, 'user')),
      ...effective.groups.flatMap((g) => g.policies.filter((p) => p.enabled).map((p) => applied(p, { group: g.group }))),
    ],
  };
}

/**
 * Whether some enabled Allow of the sub-user could apply to `bucket` (a bucket list shows the account's buckets
 * the sub-user may do anything in): an Allow statement with a resource `*`, `qrn:kodo:…:*` or whose bucket part
 * matches the bucket name. Root and owners: always.
 */
export function touchesBucket(principal: Principal, bucket: string): boolean {
  if (principal.kind !== 'user') return true;
  if (!principal.enabled) return false;
  return principal.policies.some((p) =>
    p.statements.some(
      (s) =>
        s.effect === 'Allow' &&
        s.action.some((a) => a === '*' || a.toLowerCase().startsWith('kodo/')) &&
        s.resource.some((r) => {
          if (r === '*') return true;
          const parts = r.split(':');
          if (parts.length < 5 || parts[0] !== 'qrn' || (parts[1] !== 'kodo' && parts[1] !== '*')) return false;
          const rest = parts.slice(4).join(':');
          const slash = rest.indexOf('/');
          return globMatch(slash < 0 ? rest : rest.slice(0, slash), bucket);
        }),
    ),
  );
}
