/**
 * Kodo IAM policy documents: validation of what a client sends (`statement: [{action, resource, effect}]`) and the
 * parsed form the evaluator (evaluate.ts) reads. Source: Qiniu's IAM introduction (developer.qiniu.com/af/10149,
 * "权限 = 效果 + 动作 + 资源"; QRN `qrn:<product>:<zone>:<uid>:<resource>`) and the Kodo action page
 * (developer.qiniu.com/af/12495: actions `kodo/<Action>`, resources `qrn:kodo:::<bucket>/<key>` with `*`, `*` or
 * `qrn:kodo:::*` for everything).
 *
 * Rules (docs/reference/iam.md, "Policies"):
 * - `statement`: a non-empty array of at most 100 objects; `action`: a non-empty array (a single string is taken
 *   as one) of `*`, `<service>/*` or `<service>/<Action>`. For `kodo` the action must be in the catalogue
 *   (actions.ts); other services' actions (`cdn/DownloadCDNLog`) are kept as written and never grant anything here.
 * - `resource`: an array (may be empty: service-level actions ignore it) of `*` or `qrn:<product>:<zone>:<uid>:<rest>`;
 *   for `kodo`, `<uid>` is empty or the account's own uid, `<rest>` is `*`, `<bucket>` or `<bucket>/<key pattern>`,
 *   where `*` matches any run of characters.
 * - `effect`: `Allow` or `Deny` (any case; stored capitalised).
 * Errors: 400 `badIamPolicy` whose detail names the field (`statement[1].resource[0]: …`).
 */
import { Errors } from '../errors.js';
import { kodoAction } from './actions.js';

/** One statement as stored and evaluated. */
export interface Statement {
  action: string[];
  resource: string[];
  effect: 'Allow' | 'Deny';
}

/** Most statements in one policy, actions or resources in one statement. */
export const MAX_STATEMENTS = 100;
export const MAX_ITEMS = 100;

const ACTION = /^([a-z][a-z0-9_-]*)\/(\*|[A-Za-z][A-Za-z0-9_]*)$/;
const BUCKET = /^[A-Za-z0-9*][A-Za-z0-9_.*-]*$/;

const bad = (field: string, why: string) => Errors.badIamPolicy(`${field}: ${why}`);

/** A list field: an array of strings, or one string. */
function stringList(v: unknown, field: string): string[] {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list)) throw bad(field, 'must be an array of strings');
  if (list.length > MAX_ITEMS) throw bad(field, `at most ${MAX_ITEMS} items`);
  return list.map((item, i) => {
    if (typeof item !== 'string' || item.trim() === '') throw bad(`${field}[${i}]`, 'must be a non-empty string');
    return item.trim();
  });
}

/** Checks one action; the canonical spelling (the catalogue's for kodo). */
export function checkAction(action: string, field: string): string {
  if (action === '*') return action;
  const m = ACTION.exec(action);
  if (!m) throw bad(field, `"${action}" is not an action (<service>/<Action>, <service>/* or *)`);
  if (m[1] !== 'kodo' || m[2] === '*') return action;
  const known = kodoAction(action);
  if (!known) throw bad(field, `unknown action "${action}" (GET /iam/v1/actions lists them)`);
  return `${known.service}/${known.name}`;
}

/** Checks one resource of the account whose uid is `ownerUid`; returns it as written. */
export function checkResource(resource: string, field: string, ownerUid: number): string {
  if (resource === '*') return resource;
  const parts = resource.split(':');
  if (parts.length < 5 || parts[0] !== 'qrn') throw bad(field, `"${resource}" is not * or qrn:<product>:<zone>:<uid>:<resource>`);
  const [, product, , uid] = parts;
  const rest = parts.slice(4).join(':');
  if (!product || rest === '') throw bad(field, `"${resource}" names no product or no resource`);
  if (uid !== '' && uid !== '*' && uid !== String(ownerUid)) throw bad(field, `"${resource}" is outside the account (its uid is ${ownerUid})`);
  if (product === 'kodo' && rest !== '*') {
    const slash = rest.indexOf('/');
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    if (!BUCKET.test(bucket)) throw bad(field, `"${resource}": "${bucket}" is not a bucket name or pattern`);
  }
  return resource;
}

/**
 * The statements of a request body's `statement` field, checked (400 `badIamPolicy` naming the field).
 * `ownerUid`: the account's uid, the only one a resource may name.
 */
export function parseStatements(v: unknown, ownerUid: number): Statement[] {
  if (!Array.isArray(v) || v.length === 0) throw bad('statement', 'must be a non-empty array');
  if (v.length > MAX_STATEMENTS) throw bad('statement', `at most ${MAX_STATEMENTS} statements`);
  return v.map((s: unknown, i): Statement => {
    const at = `statement[${i}]`;
    if (s === null || typeof s !== 'object' || Array.isArray(s)) throw bad(at, 'must be an object');
    const o = s as Record<string, unknown>;
    const actions = stringList(o.action, `${at}.action`);
    if (actions.length === 0) throw bad(`${at}.action`, 'must name at least one action');
    const resources = o.resource === undefined || o.resource === null ? [] : stringList(o.resource, `${at}.resource`);
    const effect = typeof o.effect === 'string' ? o.effect.toLowerCase() : undefined;
    if (effect !== 'allow' && effect !== 'deny') throw bad(`${at}.effect`, 'must be "Allow" or "Deny"');
    return {
      action: actions.map((a, j) => checkAction(a, `${at}.action[${j}]`)),
      resource: resources.map((r, j) => checkResource(r, `${at}.resource[${j}]`, ownerUid)),
      effect: effect === 'allow' ? 'Allow' : 'Deny',
    };
  });
}

/** The stored statement text back as statements (stored text was checked when written). */
export function storedStatements(text: string): Statement[] {
  return JSON.parse(text) as Statement[];
}
