/**
 * The `<LifecycleConfiguration>` document of Put/GetBucketLifecycleConfiguration (AWS API reference
 * `PutBucketLifecycleConfiguration`, `LifecycleRule`, `LifecycleRuleFilter`, `LifecycleExpiration`,
 * `AbortIncompleteMultipartUpload`): parsing and checking into `S3LifecycleRule`s (ports/meta.ts), and their XML.
 *
 * Checks, as AWS answers them:
 * - not well-formed, no `Rule`, a `Rule` without `Status` or with a Status other than Enabled/Disabled, `Filter`
 *   together with the legacy `Prefix`, a `Filter` holding more than one condition outside `And`, an `Expiration`
 *   with none or more than one of Days/Date/ExpiredObjectDeleteMarker, a Tag without Key, a day or size that is
 *   not an integer → MalformedXML (400);
 * - an Expiration/NoncurrentDays/DaysAfterInitiation day below 1, a Transition day below 0, a Date not in ISO 8601
 *   or not at midnight UTC ("'Date' must be at midnight GMT"), NewerNoncurrentVersions above 100, an ID over 255 characters, a repeated ID,
 *   ObjectSizeGreaterThan ≥ ObjectSizeLessThan, more than 1000 rules, an unknown or repeated transition class →
 *   InvalidArgument (400);
 * - no action in a rule, AbortIncompleteMultipartUpload or ExpiredObjectDeleteMarker with a tag or size filter,
 *   repeated tag keys in `And` → InvalidRequest (400);
 * - Transition by Date, NoncurrentVersionTransition other than one to STANDARD_IA → NotImplemented (501): never
 *   dropped.
 * A rule without ID gets `rule_<n>` (n its place from 1, skipping IDs taken), as S3 generates one.
 */
import type { S3LifecycleRule } from '../ports/meta.js';
import { S3Errors } from './errors.js';
import { el, textOf, type XmlNode } from './xml.js';

type Obj = { [name: string]: XmlNode | XmlNode[] | undefined };

/** Most rules in one configuration (S3's limit). */
export const MAX_S3_RULES = 1000;
/** Most noncurrent versions a rule keeps (AWS NoncurrentVersionExpiration: "You can specify up to 100"). */
const MAX_NEWER_NONCURRENT = 100;
/** Longest rule ID, characters (S3's). */
const MAX_ID = 255;

/** S3 transition storage classes a rule may name. */
export const TRANSITION_CLASSES = ['STANDARD_IA', 'INTELLIGENT_TIERING', 'GLACIER_IR', 'GLACIER', 'DEEP_ARCHIVE'] as const;

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

/** An integer (decimal, ≥ `min`), else MalformedXML / InvalidArgument naming `what`. */
function integer(node: XmlNode | XmlNode[] | undefined, what: string, min: number): number {
  const t = textOf(node)?.trim();
  if (t === undefined || !/^-?\d{1,15}$/.test(t)) throw S3Errors.MalformedXML();
  const n = Number(t);
  if (n < min) throw S3Errors.InvalidArgument(`${what} must be ${min === 0 ? 'a non-negative' : 'a positive'} integer`);
  return n;
}

/** A `<Tag><Key/><Value/></Tag>`. */
function tagOf(node: XmlNode): [string, string] {
  const t = objOf(node) ?? {};
  const key = textOf(t.Key);
  if (key === undefined || key === '') throw S3Errors.MalformedXML();
  return [key, textOf(t.Value) ?? ''];
}

/** The conditions of a `Filter` or `And` element. */
function conditions(f: Obj, into: S3LifecycleRule['filter']): number {
  let n = 0;
  if (f.Prefix !== undefined) {
    const p = textOf(f.Prefix);
    if (p === undefined) throw S3Errors.MalformedXML();
    into.prefix = p;
    n++;
  }
  const tags = list(f.Tag).map(tagOf);
  if (tags.length > 0) into.tags = tags;
  n += tags.length;
  if (f.ObjectSizeGreaterThan !== undefined) {
    into.sizeGreaterThan = integer(f.ObjectSizeGreaterThan, "'ObjectSizeGreaterThan'", 0);
    n++;
  }
  if (f.ObjectSizeLessThan !== undefined) {
    into.sizeLessThan = integer(f.ObjectSizeLessThan, "'ObjectSizeLessThan'", 1);
    n++;
  }
  return n;
}

/** The rule's filter from `Filter`, the legacy `Prefix`, or neither. */
function filterOf(r: Obj): S3LifecycleRule['filter'] {
  if (r.Filter !== undefined && r.Prefix !== undefined) throw S3Errors.MalformedXML();
  if (r.Prefix !== undefined) {
    const p = textOf(r.Prefix);
    if (p === undefined) throw S3Errors.MalformedXML();
    return { form: 'legacy', prefix: p };
  }
  const f = objOf(r.Filter);
  if (f === undefined) return { form: 'none' };
  const and = objOf(f.And);
  const out: S3LifecycleRule['filter'] = { form: and === undefined ? 'filter' : 'and' };
  const n = conditions(f, out);
  if (and !== undefined) {
    if (n > 0) throw S3Errors.MalformedXML();
    conditions(and, out);
    const keys = new Set((out.tags ?? []).map(([k]) => k));
    if (keys.size !== (out.tags ?? []).length) throw S3Errors.InvalidRequest('Duplicate Tag Keys are not allowed.');
  } else if (n > 1) {
    throw S3Errors.MalformedXML();
  }
  if (out.sizeGreaterThan !== undefined && out.sizeLessThan !== undefined && out.sizeGreaterThan >= out.sizeLessThan) {
    throw S3Errors.InvalidArgument("'ObjectSizeGreaterThan' must be less than 'ObjectSizeLessThan'");
  }
  return out;
}

/** An ISO 8601 date at midnight UTC, as `YYYY-MM-DDT00:00:00.000Z`; InvalidArgument otherwise. */
function midnight(node: XmlNode | XmlNode[] | undefined): string {
  const t = textOf(node)?.trim() ?? '';
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(t) ? Date.parse(t.length === 10 ? `${t}T00:00:00Z` : t) : NaN;
  if (Number.isNaN(ms)) throw S3Errors.InvalidArgument("'Date' must be in ISO 8601 format");
  if (ms % 86_400_000 !== 0) throw S3Errors.InvalidArgument("'Date' must be at midnight GMT");
  return new Date(ms).toISOString();
}

/** The rule's Expiration. */
function expirationOf(node: XmlNode | XmlNode[] | undefined, tagged: boolean): S3LifecycleRule['expiration'] {
  const e = objOf(node);
  if (e === undefined) return undefined;
  const given = [e.Days, e.Date, e.ExpiredObjectDeleteMarker].filter((x) => x !== undefined).length;
  if (given !== 1) throw S3Errors.MalformedXML();
  if (e.Days !== undefined) return { days: integer(e.Days, "'Days' for Expiration action", 1) };
  if (e.Date !== undefined) return { date: midnight(e.Date) };
  const marker = textOf(e.ExpiredObjectDeleteMarker)?.trim();
  if (marker !== 'true' && marker !== 'false') throw S3Errors.MalformedXML();
  if (tagged) throw S3Errors.InvalidRequest('ExpiredObjectDeleteMarker cannot be specified with Tags.');
  return { expiredObjectDeleteMarker: marker === 'true' };
}

/** One `<Rule>`, checked on its own (the set's checks are `rulesOfDocument`'s); `id` absent → ''. */
function ruleOf(node: XmlNode): S3LifecycleRule {
  const r = objOf(node);
  if (r === undefined) throw S3Errors.MalformedXML();
  const status = textOf(r.Status);
  if (status !== 'Enabled' && status !== 'Disabled') throw S3Errors.MalformedXML();
  const id = textOf(r.ID) ?? '';
  if ([...id].length > MAX_ID) throw S3Errors.InvalidArgument(`ID length should not exceed allowed limit of ${MAX_ID}`);
  const filter = filterOf(r);
  const tagged = (filter.tags?.length ?? 0) > 0;
  const sized = filter.sizeGreaterThan !== undefined || filter.sizeLessThan !== undefined;
  const rule: S3LifecycleRule = { id, enabled: status === 'Enabled', filter };
  const expiration = expirationOf(r.Expiration, tagged);
  if (expiration) rule.expiration = expiration;
  const seen = new Set<string>();
  for (const t of list(r.Transition)) {
    const tr = objOf(t) ?? {};
    if (tr.Date !== undefined) throw S3Errors.NotImplemented('Transition by Date cannot be kept by this server; use Days');
    const cls = textOf(tr.StorageClass) ?? '';
    if (!(TRANSITION_CLASSES as readonly string[]).includes(cls)) {
      throw S3Errors.InvalidArgument(`Transition StorageClass ${JSON.stringify(cls)} is not one of ${TRANSITION_CLASSES.join(', ')}`);
    }
    if (seen.has(cls)) throw S3Errors.InvalidArgument("'StorageClass' must be different for 'Transition' actions in same 'Rule'");
    seen.add(cls);
    (rule.transitions ??= []).push({ days: integer(tr.Days, "'Days' for Transition action", 0), storageClass: cls });
  }
  const nexp = objOf(r.NoncurrentVersionExpiration);
  if (nexp !== undefined) {
    rule.noncurrentExpiration = { days: integer(nexp.NoncurrentDays, "'NoncurrentDays' for NoncurrentVersionExpiration action", 1) };
    if (nexp.NewerNoncurrentVersions !== undefined) {
      const newer = integer(nexp.NewerNoncurrentVersions, "'NewerNoncurrentVersions'", 1);
      if (newer > MAX_NEWER_NONCURRENT) throw S3Errors.InvalidArgument(`'NewerNoncurrentVersions' must be at most ${MAX_NEWER_NONCURRENT}`);
      rule.noncurrentExpiration.newerVersions = newer;
    }
  }
  const ntrans = list(r.NoncurrentVersionTransition);
  if (ntrans.length > 1) throw S3Errors.NotImplemented('at most one NoncurrentVersionTransition (to STANDARD_IA) can be kept by this server');
  for (const t of ntrans) {
    const tr = objOf(t) ?? {};
    if (tr.NewerNoncurrentVersions !== undefined || textOf(tr.StorageClass) !== 'STANDARD_IA') {
      throw S3Errors.NotImplemented('a NoncurrentVersionTransition can only go to STANDARD_IA on this server');
    }
    rule.noncurrentTransitions = [
      { days: integer(tr.NoncurrentDays, "'NoncurrentDays' for NoncurrentVersionTransition action", 1), storageClass: 'STANDARD_IA' },
    ];
  }
  const abort = objOf(r.AbortIncompleteMultipartUpload);
  if (abort !== undefined) {
    if (tagged) throw S3Errors.InvalidRequest('AbortIncompleteMultipartUpload cannot be specified with Tags.');
    if (sized) throw S3Errors.InvalidRequest('AbortIncompleteMultipartUpload cannot be specified with an object size filter.');
    rule.abortIncompleteUploadDays = integer(abort.DaysAfterInitiation, "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action", 1);
  }
  if (!rule.expiration && !rule.transitions && !rule.noncurrentExpiration && !rule.noncurrentTransitions && rule.abortIncompleteUploadDays === undefined) {
    throw S3Errors.InvalidRequest('At least one action needs to be specified in a rule');
  }
  return rule;
}

/** The rules of a parsed `<LifecycleConfiguration>`, each checked and the set checked (IDs given to those without). */
export function rulesOfDocument(doc: Record<string, XmlNode>): S3LifecycleRule[] {
  const root = objOf(doc.LifecycleConfiguration);
  if (root === undefined) throw S3Errors.MalformedXML();
  const nodes = list(root.Rule);
  if (nodes.length === 0) throw S3Errors.MalformedXML();
  if (nodes.length > MAX_S3_RULES) throw S3Errors.InvalidArgument(`a lifecycle configuration has at most ${MAX_S3_RULES} rules`);
  const rules = nodes.map(ruleOf);
  const ids = new Set<string>();
  for (const r of rules) {
    if (r.id === '') continue;
    if (ids.has(r.id)) throw S3Errors.InvalidArgument('Rule ID must be unique. Found same ID for more than one rule');
    ids.add(r.id);
  }
  let n = 0;
  for (const [i, r] of rules.entries()) {
    if (r.id !== '') continue;
    n = Math.max(n, i + 1);
    while (ids.has(`rule_${n}`)) n++;
    r.id = `rule_${n}`;
    ids.add(r.id);
  }
  return rules;
}

/** The conditions of a filter as XML children. */
function conditionsXml(f: S3LifecycleRule['filter']): string {
  return (
    (f.prefix !== undefined ? el('Prefix', f.prefix) : '') +
    (f.tags ?? []).map(([k, v]) => `<Tag>${el('Key', k)}${el('Value', v)}</Tag>`).join('') +
    (f.sizeGreaterThan !== undefined ? el('ObjectSizeGreaterThan', f.sizeGreaterThan) : '') +
    (f.sizeLessThan !== undefined ? el('ObjectSizeLessThan', f.sizeLessThan) : '')
  );
}

/** A rule as a `<Rule>` element, in the form it was sent (legacy Prefix, Filter, Filter/And). */
export function s3RuleXml(r: S3LifecycleRule): string {
  const f = r.filter;
  const filter =
    f.form === 'legacy'
      ? el('Prefix', f.prefix ?? '')
      : f.form === 'none'
        ? `<Filter>${el('Prefix', '')}</Filter>`
        : f.form === 'and'
          ? `<Filter><And>${conditionsXml(f)}</And></Filter>`
          : `<Filter>${conditionsXml(f)}</Filter>`;
  const e = r.expiration;
  return (
    '<Rule>' +
    el('ID', r.id) +
    filter +
    el('Status', r.enabled ? 'Enabled' : 'Disabled') +
    (r.transitions ?? []).map((t) => `<Transition>${el('Days', t.days)}${el('StorageClass', t.storageClass)}</Transition>`).join('') +
    (e
      ? `<Expiration>${e.days !== undefined ? el('Days', e.days) : ''}${e.date !== undefined ? el('Date', e.date) : ''}${e.expiredObjectDeleteMarker !== undefined ? el('ExpiredObjectDeleteMarker', e.expiredObjectDeleteMarker) : ''}</Expiration>`
      : '') +
    (r.noncurrentTransitions ?? [])
      .map((t) => `<NoncurrentVersionTransition>${el('NoncurrentDays', t.days)}${el('StorageClass', t.storageClass)}</NoncurrentVersionTransition>`)
      .join('') +
    (r.noncurrentExpiration
      ? `<NoncurrentVersionExpiration>${r.noncurrentExpiration.days !== undefined ? el('NoncurrentDays', r.noncurrentExpiration.days) : ''}${r.noncurrentExpiration.newerVersions !== undefined ? el('NewerNoncurrentVersions', r.noncurrentExpiration.newerVersions) : ''}</NoncurrentVersionExpiration>`
      : '') +
    (r.abortIncompleteUploadDays !== undefined
      ? `<AbortIncompleteMultipartUpload>${el('DaysAfterInitiation', r.abortIncompleteUploadDays)}</AbortIncompleteMultipartUpload>`
      : '') +
    '</Rule>'
  );
}
