/**
 * GetBucketLifecycleConfiguration, PutBucketLifecycleConfiguration, DeleteBucketLifecycle
 * (`GET|PUT|DELETE /<bucket>?lifecycle`): the bucket's Kodo lifecycle rules (buckets/lifecycle-rule-admin.ts; the
 * same rules the uc `rules/*` routes manage), docs/development/kodo-protocol.md §18.11.
 *
 * `<Rule>` ↔ a Kodo rule:
 * - `ID` ↔ name (Kodo's 1–49 of `A-Z a-z 0-9 _`; a rule without ID is named `rule_<n>`, n its place from 1);
 * - `Filter/Prefix` (or the legacy `Prefix` child of Rule; an empty `Filter` = every key) ↔ prefix;
 * - `Expiration/Days` ↔ delete_after_days;
 * - `Transition` `Days` + `StorageClass` STANDARD_IA ↔ to_line_after_days, GLACIER_IR ↔ to_archive_ir_after_days,
 *   GLACIER ↔ to_archive_after_days, DEEP_ARCHIVE ↔ to_deep_archive_after_days (S3's day 0, "at creation", is
 *   Kodo's negative "at upload", stored as -1 and answered as 0);
 * - `NoncurrentVersionExpiration/NoncurrentDays` ↔ history_delete_after_days, `NoncurrentVersionTransition`
 *   STANDARD_IA ↔ history_to_line_after_days.
 * `Status` must be `Enabled` (Kodo keeps no disabled rule). Anything else a rule says (Expiration by Date or
 * ExpiredObjectDeleteMarker, Transition by Date, tag or size filters, AbortIncompleteMultipartUpload,
 * NewerNoncurrentVersions, Status Disabled) cannot be kept → NotImplemented (501), never dropped. Bad values (a
 * non-positive Expiration day, an unknown storage class, two transitions to one class, a repeated ID, Kodo's
 * checks: order IA < Archive IR < Archive < Deep Archive < delete, one rule per prefix, ≤ 100 rules) →
 * InvalidArgument (400); a missing `Status`/`Rule` or a non-integer day → MalformedXML (400).
 * Put replaces the whole set in one transaction; Get with no rules → NoSuchLifecycleConfiguration (404); Delete
 * removes every rule (204).
 */
import type { Granary } from '../../context.js';
import { Errors, isKodoError } from '../../errors.js';
import { checkRule, MAX_RULES, rulesOf, type RuleInput } from '../../buckets/lifecycle-rule-admin.js';
import type { LifecycleRule } from '../../ports/meta.js';
import { accessBucket, signedCaller } from '../access.js';
import { S3Errors } from '../errors.js';
import { xmlResponse, type S3Request, type S3Response } from '../types.js';
import { el, parseXml, readXmlBody, textOf, xmlDocument, type XmlNode } from '../xml.js';

type Obj = { [name: string]: XmlNode | XmlNode[] | undefined };
type TransitionKey = 'toIAAfterDays' | 'toIntelligentTieringAfterDays' | 'toArchiveIRAfterDays' | 'toArchiveAfterDays' | 'toDeepArchiveAfterDays';

/** S3 transition storage classes ↔ the Kodo rule field (the storage types of s3api/object-headers.ts). */
const TRANSITIONS: ReadonlyArray<readonly [string, TransitionKey]> = [
  ['STANDARD_IA', 'toIAAfterDays'],
  ['INTELLIGENT_TIERING', 'toIntelligentTieringAfterDays'],
  ['GLACIER_IR', 'toArchiveIRAfterDays'],
  ['GLACIER', 'toArchiveAfterDays'],
  ['DEEP_ARCHIVE', 'toDeepArchiveAfterDays'],
];

/** Elements of a Rule that Kodo cannot keep (→ NotImplemented). */
const UNSUPPORTED_RULE = ['AbortIncompleteMultipartUpload'];

/** An element that must be a plain object (one occurrence), else MalformedXML. */
function objOf(node: XmlNode | XmlNode[] | undefined): Obj | undefined {
  if (node === undefined) return undefined;
  if (node === '') return {};
  if (typeof node === 'string' || Array.isArray(node)) throw S3Errors.MalformedXML();
  return node;
}

/** The nodes of a repeatable element. */
function list(node: XmlNode | XmlNode[] | undefined): XmlNode[] {
  if (node === undefined) return [];
  return Array.isArray(node) ? node : [node];
}

/** A day count (decimal integer, ≥ `min`), else MalformedXML / InvalidArgument. */
function days(node: XmlNode | XmlNode[] | undefined, what: string, min: number): number {
  const t = textOf(node)?.trim();
  if (t === undefined || !/^-?\d{1,7}$/.test(t)) throw S3Errors.MalformedXML();
  const n = Number(t);
  if (n < min) throw S3Errors.InvalidArgument(`'Days' for ${what} must be ${min === 0 ? 'a non-negative' : 'a positive'} integer`);
  return n;
}

/** Refuses (NotImplemented) any of `names` present in `o`. */
function refuse(o: Obj, names: string[], where: string): void {
  for (const n of names) {
    if (o[n] !== undefined) throw S3Errors.NotImplemented(`${where} ${n} cannot be kept by this server's lifecycle rules`);
  }
}

/** The rule's prefix from `Filter` (Prefix only) or the legacy `Prefix`. */
function prefixOf(r: Obj): string {
  const filter = objOf(r.Filter);
  if (filter !== undefined && r.Prefix !== undefined) throw S3Errors.MalformedXML();
  if (filter === undefined) return textOf(r.Prefix) ?? '';
  refuse(filter, ['Tag', 'And', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan'], 'Filter');
  const prefix = textOf(filter.Prefix);
  if (filter.Prefix !== undefined && prefix === undefined) throw S3Errors.MalformedXML();
  return prefix ?? '';
}

/** The Kodo rule input of one `<Rule>` (its place `i` names a rule without ID). */
function ruleOf(node: XmlNode, i: number): RuleInput {
  const r = objOf(node);
  if (r === undefined) throw S3Errors.MalformedXML();
  const status = textOf(r.Status);
  if (status === undefined) throw S3Errors.MalformedXML();
  if (status !== 'Enabled') {
    if (status === 'Disabled') throw S3Errors.NotImplemented('a Disabled rule cannot be kept by this server; delete the rule instead');
    throw S3Errors.MalformedXML();
  }
  refuse(r, UNSUPPORTED_RULE, 'Rule');
  const id = textOf(r.ID);
  const rule: RuleInput = {
    name: id === undefined || id === '' ? `rule_${i + 1}` : id,
    prefix: prefixOf(r),
    deleteAfterDays: 0,
    toIAAfterDays: 0,
    toIntelligentTieringAfterDays: 0,
    toArchiveIRAfterDays: 0,
    toArchiveAfterDays: 0,
    toDeepArchiveAfterDays: 0,
    historyDeleteAfterDays: 0,
    historyToIAAfterDays: 0,
  };
  let actions = 0;
  const exp = objOf(r.Expiration);
  if (exp !== undefined) {
    refuse(exp, ['Date', 'ExpiredObjectDeleteMarker'], 'Expiration');
    rule.deleteAfterDays = days(exp.Days, 'Expiration action', 1);
    actions++;
  }
  const seen = new Set<string>();
  for (const t of list(r.Transition)) {
    const tr = objOf(t) ?? {};
    refuse(tr, ['Date'], 'Transition');
    const cls = textOf(tr.StorageClass);
    const entry = TRANSITIONS.find(([c]) => c === cls);
    if (!entry) throw S3Errors.InvalidArgument(`Transition StorageClass ${JSON.stringify(cls ?? '')} is not one of ${TRANSITIONS.map(([c]) => c).join(', ')}`);
    if (seen.has(entry[0])) throw S3Errors.InvalidArgument("'StorageClass' must be different for 'Transition' actions in same 'Rule'");
    seen.add(entry[0]);
    const n = days(tr.Days, 'Transition action', 0);
    rule[entry[1]] = n === 0 ? -1 : n;
    actions++;
  }
  const nexp = objOf(r.NoncurrentVersionExpiration);
  if (nexp !== undefined) {
    refuse(nexp, ['NewerNoncurrentVersions'], 'NoncurrentVersionExpiration');
    rule.historyDeleteAfterDays = days(nexp.NoncurrentDays, 'NoncurrentVersionExpiration action', 1);
    actions++;
  }
  const ntrans = list(r.NoncurrentVersionTransition);
  if (ntrans.length > 1) throw S3Errors.NotImplemented('at most one NoncurrentVersionTransition (to STANDARD_IA) can be kept by this server');
  for (const t of ntrans) {
    const tr = objOf(t) ?? {};
    refuse(tr, ['NewerNoncurrentVersions'], 'NoncurrentVersionTransition');
    if (textOf(tr.StorageClass) !== 'STANDARD_IA') throw S3Errors.NotImplemented('a NoncurrentVersionTransition can only go to STANDARD_IA on this server');
    rule.historyToIAAfterDays = days(tr.NoncurrentDays, 'NoncurrentVersionTransition action', 1);
    actions++;
  }
  if (actions === 0) throw S3Errors.InvalidArgument('At least one action needs to be specified in a rule');
  return rule;
}

/** The Kodo rule inputs of a `<LifecycleConfiguration>` document, checked as a set (see the module comment). */
function rulesOfDocument(doc: Record<string, XmlNode>): RuleInput[] {
  const root = objOf(doc.LifecycleConfiguration);
  if (root === undefined) throw S3Errors.MalformedXML();
  const nodes = list(root.Rule);
  if (nodes.length === 0) throw S3Errors.MalformedXML();
  if (nodes.length > MAX_RULES) throw S3Errors.InvalidArgument(`a bucket has at most ${MAX_RULES} lifecycle rules`);
  const rules = nodes.map(ruleOf);
  const names = new Set<string>();
  const prefixes = new Set<string>();
  for (const r of rules) {
    if (names.has(r.name)) throw S3Errors.InvalidArgument('Rule ID must be unique. Found same ID for more than one rule');
    if (prefixes.has(r.prefix)) throw S3Errors.InvalidArgument(`two rules have the prefix ${JSON.stringify(r.prefix)}; this server keeps one rule per prefix`);
    names.add(r.name);
    prefixes.add(r.prefix);
    try {
      checkRule(r);
    } catch (err) {
      if (isKodoError(err)) throw S3Errors.InvalidArgument(`rule ${r.name}: ${err.message}`);
      throw err;
    }
  }
  return rules;
}

/** One stored rule as a `<Rule>` element. */
function ruleXml(r: LifecycleRule): string {
  const transitions = TRANSITIONS.filter(([, key]) => (r[key] ?? 0) !== 0)
    .map(([cls, key]) => `<Transition>${el('Days', Math.max(r[key] ?? 0, 0))}${el('StorageClass', cls)}</Transition>`)
    .join('');
  return (
    '<Rule>' +
    el('ID', r.name) +
    `<Filter>${el('Prefix', r.prefix)}</Filter>` +
    el('Status', 'Enabled') +
    transitions +
    (r.deleteAfterDays > 0 ? `<Expiration>${el('Days', r.deleteAfterDays)}</Expiration>` : '') +
    (r.historyToIAAfterDays ? `<NoncurrentVersionTransition>${el('NoncurrentDays', r.historyToIAAfterDays)}${el('StorageClass', 'STANDARD_IA')}</NoncurrentVersionTransition>` : '') +
    (r.historyDeleteAfterDays ? `<NoncurrentVersionExpiration>${el('NoncurrentDays', r.historyDeleteAfterDays)}</NoncurrentVersionExpiration>` : '') +
    '</Rule>'
  );
}

/** Replaces the bucket's whole rule set in one MetaStore transaction (ctime now; none = no rules). 404 when gone. */
async function setRules(g: Granary, bucket: string, inputs: RuleInput[]): Promise<void> {
  const ctime = Math.floor(g.clock.nowMs() / 1000);
  const updated = await g.meta.updateBucketSettings(bucket, (cur) => {
    const next = { ...cur };
    if (inputs.length === 0) {
      delete next.lifecycleRules;
      return next;
    }
    next.lifecycleRules = inputs.map(({ historyDeleteAfterDays, historyToIAAfterDays, ...rest }) => {
      const rule: LifecycleRule = { ...rest, ctime };
      if (historyDeleteAfterDays) rule.historyDeleteAfterDays = historyDeleteAfterDays;
      if (historyToIAAfterDays) rule.historyToIAAfterDays = historyToIAAfterDays;
      return rule;
    });
    return next;
  });
  if (!updated) throw Errors.noSuchBucket(bucket);
}

export async function getBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = rulesOf(bucket);
  if (rules.length === 0) throw S3Errors.NoSuchLifecycleConfiguration();
  return xmlResponse(xmlDocument('LifecycleConfiguration', rules.map(ruleXml).join('')));
}

export async function putBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  const rules = rulesOfDocument(parseXml(await readXmlBody(req.body())));
  await setRules(g, bucket.name, rules);
  return { status: 200 };
}

export async function deleteBucketLifecycle(g: Granary, req: S3Request): Promise<S3Response> {
  signedCaller(req);
  const bucket = await accessBucket(g, req);
  await setRules(g, bucket.name, []);
  return { status: 204 };
}
